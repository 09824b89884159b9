"""`pr-review demo`: a throw-away repository with a base commit and a PR commit holding real defects."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import TextIO

BASE_FILES = {
    "aiter/__init__.py": "from .ops.quant import per_token_quant\n",
    "aiter/jit/core.py": "import os\n\nAITER_ROOT = os.path.dirname(__file__)\n",
    "aiter/ops/__init__.py": "",
    "aiter/ops/quant.py": (
        "import torch\n\n\n"
        "def per_token_quant(x, scale_dtype=torch.float32):\n"
        "    amax = x.abs().amax(dim=-1, keepdim=True)\n"
        "    return x / amax, amax.to(scale_dtype)\n"
    ),
    "aiter/configs/tuned_gemm.csv": "M,N,K,bias,dtype,outdtype,scaleAB,cu_num,libtype,solidx,us,kernelName\n"
                                     "1,4096,4096,False,torch.bfloat16,torch.bfloat16,False,304,asm,0,10.1,bf16gemm_a\n",
}

PR_FILES = {
    "aiter/ops/quant.py": (
        "import os\nimport sys\n\nimport torch\n\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), \"..\", \"jit\", \"utils\"))\n\n"
        "USE_FAST_PATH = os.environ.get(\"AITER_QUANT_FAST_PATH\", \"0\") == \"1\"\n\n\n"
        "def per_token_quant(x, scale_dtype=torch.float32):\n"
        "    amax = x.abs().amax(dim=-1, keepdim=True)\n"
        "    if USE_FAST_PATH:\n"
        "        # TODO: handle fp8 e4m3fnuz on gfx942 before enabling this by default\n"
        "        return x / amax, amax\n"
        "    return x / amax, amax.to(scale_dtype)\n\n\n"
        "def per_group_quant(x, group_size=128):\n"
        "    raise NotImplementedError\n"
    ),
    "aiter/configs/tuned_gemm.csv": BASE_FILES["aiter/configs/tuned_gemm.csv"]
    + "1024,5348,16384,False,torch.bfloat16,torch.bfloat16,False,256,hipblaslt,526744,231.31,Cijk_Alik_Bljk\n",
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=demo", "-c", "user.email=demo@example.invalid",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def _write(repo: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = repo / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def build_demo_repo(root: Path) -> Path:
    repo = root / "demo-aiter"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _write(repo, BASE_FILES)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "pr")
    _write(repo, PR_FILES)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Speed up per-token quant")
    return repo


def run_demo(out: TextIO) -> int:
    from .model import PRInfo
    from .pipeline import ReviewRequest, review
    from .report.render import render_text

    with tempfile.TemporaryDirectory(prefix="pr-review-demo-") as tmp:
        repo = build_demo_repo(Path(tmp))
        out.write(f"Reviewing a demo aiter-like PR in {repo} (base: main, head: pr)\n\n")
        report = review(ReviewRequest(
            repo_dir=str(repo), base="main", head="pr", remote=None,
            pr=PRInfo(title="[perf] Speed up per-token quant with a fast path",
                      body="Makes quant faster.\n\n🤖 Generated with Claude Code"),
        ))
        out.write(render_text(report, color=out.isatty()))
    return 0
