"""Triage, derivation, backbone tiers, the vLLM relevance gate and repository config (issue 3)."""
from __future__ import annotations

import subprocess

from pr_review.catalog import load_catalog
from pr_review.cli import main
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

from conftest import git


def run(repo, profile=None, title="", body="", **kw):
    return review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile=profile,
                                pr=PRInfo(title=title, body=body), **kw))


AITER = {"aiter/jit/core.py": "import os\n\n\ndef compile_ops(name):\n    return name\n",
         "aiter/__init__.py": "from .jit.core import compile_ops\n"}


def test_docs_and_ci_only_pr_has_no_runtime_surface(repo_factory):
    repo = repo_factory(AITER, {"docs/usage.md": "# Use\n\n`sys.path.insert(0, x)`\n",
                                ".github/workflows/ci.yml": "on: push\n", ".claude/skills/x.md": "hi\n"})
    report = run(repo)
    assert not report.runtime_surface
    assert report.runtime_reason.startswith("N/A — no runtime surface")
    assert not report.all_findings
    groups = {load_catalog().rules[c.rule].group for c in report.checklist}
    assert groups <= {"housekeeping", "description", "process"}


def test_comment_only_diff_reduces_to_no_code(repo_factory):
    py = "".join(f"x{i} = {i}\n" for i in range(80))
    cu = "".join(f"int v{i} = {i};\n" for i in range(80))
    head_py = "".join(f"x{i} = {i}  # explained\n" if i % 2 else f"# note {i}\nx{i} = {i}\n" for i in range(80))
    head_cu = "/* header\n   comment */\n" + "".join(f"int v{i} = {i};  // why\n" for i in range(80))
    repo = repo_factory({**AITER, "aiter/m.py": py, "csrc/k.cu": cu},
                        {"aiter/m.py": '"""Module docstring."""\n' + head_py, "csrc/k.cu": head_cu})
    report = run(repo)
    assert not report.runtime_surface
    assert "comments, docstrings or whitespace" in report.runtime_reason


def test_stale_diff_is_reported(repo_factory):
    repo = repo_factory({**AITER, "aiter/x.py": "A = 1\n"}, {"aiter/x.py": "A = 2\n"})
    git(repo, "checkout", "-q", "main")
    (repo / "aiter/x.py").write_text("A = 3\n")
    git(repo, "commit", "-qam", "main moved")
    tip = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "pr")
    report = review(ReviewRequest(repo_dir=str(repo), base=report_base(repo), head="pr", remote=None, base_tip=tip))
    assert report.stale and "aiter/x.py" in report.stale
    assert any(f.rule == "stale-diff" for f in report.all_findings)


def report_base(repo):
    return git(repo, "merge-base", "main", "pr").strip()


def test_tier1_file_without_test_is_a_gap_with_callers(repo_factory):
    repo = repo_factory({**AITER, "aiter/ops/gemm.py": "from aiter.jit.core import compile_ops\n\n\n"
                                                        "def gemm():\n    return compile_ops('gemm')\n"},
                        {"aiter/jit/core.py": "import os\n\n\ndef compile_ops(name):\n    return name.lower()\n"})
    report = run(repo, body="Module names are lower-cased before lookup.")
    core = {c.path: c for c in report.core_files}
    assert core["aiter/jit/core.py"].tier == 1
    assert core["aiter/jit/core.py"].status == "GAP"
    assert "`compile_ops`" in core["aiter/jit/core.py"].reason
    assert any(c.startswith("aiter/ops/gemm.py:") for c in core["aiter/jit/core.py"].callers)
    gap = next(f for f in report.all_findings if f.rule == "backbone-tier-gap")
    assert gap.path == "aiter/jit/core.py" and "`compile_ops` is called from aiter/ops/gemm.py:" in gap.problem


def test_a_gap_names_only_a_caller_of_the_changed_symbol(repo_factory):
    """`__init__` is called by no name (every `super().__init__(` matches it); `self._prep(` in another class
    calls that class's own method, `_prep(x)` there calls a local, and a comment naming `_prep()` calls
    nothing: none is a caller of the changed method (ATOM 7674ee866b, a7d779e412, 1fd0089b38)."""
    runner = ("class ModelRunner:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n"
              "    def _prep(self, batch):\n        return batch\n")
    other = ("class Processor(Base):\n    def __init__(self):\n        super().__init__()\n\n"
             "    def run(self, x, _prep=None):\n        # the runner's _prep() is not used here\n"
             "        return self._prep(x) if _prep is None else _prep(x)\n")
    repo = repo_factory({"atom/__init__.py": "", "atom/model_engine/model_runner.py": runner,
                         "atom/plugin/processor.py": other},
                        {"atom/model_engine/model_runner.py": runner.replace("self.cfg = cfg", "self.cfg = dict(cfg)")
                         .replace("return batch", "return list(batch)")})
    report = run(repo, profile="atom", body="Copy the config and the batch.")
    gap = next(f for f in report.all_findings if f.rule == "backbone-tier-gap")
    assert "called from" not in gap.problem, gap.problem
    core = {c.path: c for c in report.core_files}
    assert core["atom/model_engine/model_runner.py"].callers == []


def test_tier2_file_with_a_covering_test_is_covered(repo_factory):
    base = {**AITER, "aiter/fused_moe.py": "def fused_moe(x, topk):\n    return x\n"}
    repo = repo_factory(base, {
        "aiter/fused_moe.py": "def fused_moe(x, topk):\n    return x * topk\n",
        "op_tests/test_moe.py": "from aiter.fused_moe import fused_moe\n\n\ndef test_dsv3_decode():\n"
                                "    assert fused_moe(1, 8) == 8\n"})
    core = {c.path: c for c in run(repo).core_files}
    assert core["aiter/fused_moe.py"].tier == 2
    assert core["aiter/fused_moe.py"].status == "COVERED"
    assert "op_tests/test_moe.py" in core["aiter/fused_moe.py"].reason


def test_comment_change_in_backbone_file_is_na(repo_factory):
    repo = repo_factory(AITER, {"aiter/jit/core.py": "import os\n\n\ndef compile_ops(name):\n"
                                                     "    # names are case-sensitive\n    return name\n"})
    core = {c.path: c for c in run(repo).core_files}
    assert core["aiter/jit/core.py"].status == "N/A"


def test_header_included_by_ten_units_is_tier2(repo_factory):
    base = {**AITER, "csrc/include/opus_utils.h": "#pragma once\ninline int one() { return 1; }\n"}
    base.update({f"csrc/kernels/k{i}.cu": '#include "opus_utils.h"\nint k() { return one(); }\n' for i in range(10)})
    repo = repo_factory(base, {"csrc/include/opus_utils.h": "#pragma once\ninline int one() { return 2; }\n"})
    core = {c.path: c for c in run(repo).core_files}
    assert core["csrc/include/opus_utils.h"].tier == 2
    assert "included by 10 files" in core["csrc/include/opus_utils.h"].reason


def test_the_fan_in_of_every_changed_header_is_one_search(repo_factory, monkeypatch):
    from pr_review.git import Repo

    headers = {"csrc/include/opus_utils.h": "one", "csrc/include/opus-math.hpp": "two"}
    base = {**AITER, **{p: f"#pragma once\ninline int {f}() {{ return 1; }}\n" for p, f in headers.items()}}
    base.update({f"csrc/kernels/k{i}.cu": '#include "opus_utils.h"\n#include <include/opus-math.hpp>\n' for i in range(10)})
    base["csrc/kernels/other.cu"] = '#include "opus_utils.hpp"\n'  # another header's name holds this one's
    repo = repo_factory(base, {p: t.replace("return 1", "return 2") for p, t in base.items() if p in headers})
    searched: list[str] = []
    real = Repo.grep
    monkeypatch.setattr(Repo, "grep", lambda self, pattern, *a, **k: searched.append(pattern) or real(self, pattern, *a, **k))
    core = {c.path: c for c in run(repo).core_files}
    assert [core[p].reason.endswith("(HF: included by 10 files)") for p in headers] == [True, True]
    assert len([p for p in searched if p.startswith(("#", "(#"))]) == 1  # one regex for both headers' includes


ATOM = {"atom/model_engine/model_runner.py": "class ModelRunner:\n    pass\n",
        "atom/models/deepseek_v2.py": "class DeepseekV2Attention:\n    def forward(self, x):\n        return x\n\n"
                                      "    def load(self, w):\n        return w\n",
        "atom/models/kimi.py": "from atom.models.deepseek_v2 import DeepseekV2Attention\n\n\n"
                               "class KimiAttention(DeepseekV2Attention):\n    def load(self, w):\n        return w\n"}


def test_deepseek_v2_method_not_overridden_reaches_every_variant(repo_factory):
    repo = repo_factory(ATOM, {"atom/models/deepseek_v2.py": ATOM["atom/models/deepseek_v2.py"]
                               .replace("return x\n", "return x * 2\n").replace("return w\n", "return w.t()\n")})
    core = {c.path: c for c in run(repo, profile="atom").core_files}
    reason = core["atom/models/deepseek_v2.py"].reason
    assert core["atom/models/deepseek_v2.py"].tier == 1
    assert "`forward` is not overridden, so DSv2/V3/V3-0324/Kimi all run it" in reason
    assert "`load` overridden in atom/models/kimi.py" in reason


VLLM = {"vllm/platforms/rocm.py": "def is_rocm():\n    return True\n", "vllm/model_executor/cuda_only.py": "A = 1\n"}


def test_vllm_relevance_gate(repo_factory):
    fully = run(repo_factory(VLLM, {"vllm/platforms/rocm.py": "def is_rocm():\n    return 1\n"}),
                title="[ROCm] fix platform check")
    assert fully.relevance == "fully"
    cuda = run(repo_factory(VLLM, {"vllm/model_executor/cuda_only.py": "A = 2\n"}), title="Speed up CUDA graphs")
    assert cuda.relevance == "not"
    groups = {r.rule for r in cuda.checklist}
    assert "fp8-max-hardcoded" not in groups
    assert any("ROCm-specific rules skipped" in n for n in cuda.notes)
    shared = run(repo_factory(VLLM, {"vllm/model_executor/cuda_only.py": "A = 2\nif on_gfx9():\n    A = 3\n",
                                     "vllm/model_executor/other.py": "B = 1\n"}),
                 title="Refactor shared layer")
    assert shared.relevance == "partially"


def test_repository_config_is_read_from_base_side(repo_factory):
    config = "disable: [env-var-knob]\nseverity:\n  syspath-mutation: low\nnot_a_key: 1\n"
    head = {"aiter/ops/q.py": "import os\nimport sys\nsys.path.insert(0, '/x')\n"
                              "K = os.environ.get('AITER_NEW_KNOB')\n",
            ".github/pr-review.yml": "disable: [syspath-mutation]\n"}
    report = run(repo_factory({**AITER, ".github/pr-review.yml": config}, head))
    rules = {f.rule: f for f in report.all_findings}
    assert "env-var-knob" not in rules  # disabled on base
    assert rules["syspath-mutation"].severity == "low"  # the PR's attempt to disable it is ignored
    assert any("unknown key 'not_a_key'" in n for n in report.notes)
    assert any("edits .github/pr-review.yml" in n for n in report.notes)


def test_bad_config_value_names_the_key_and_review_continues(repo_factory):
    repo = repo_factory({**AITER, ".github/pr-review.yml": "severity:\n  syspath-mutation: blocker\n"},
                        {"aiter/q.py": "import sys\nsys.path.insert(0, '/x')\n"})
    report = run(repo)
    assert any("severity.syspath-mutation: 'blocker'" in n for n in report.notes)
    assert any(f.rule == "syspath-mutation" and f.severity == "medium" for f in report.all_findings)


def test_checklist_names_what_derived_each_rule(repo_factory):
    repo = repo_factory(AITER, {"aiter/ops/quant.py": "import torch\n\n\ndef q(x):\n"
                                                     "    return x.to(torch.float8_e4m3fnuz)\n"})
    report = run(repo)
    fp8 = next(c for c in report.checklist if c.rule == "fp8-max-hardcoded")
    assert any("aiter/ops/quant.py:5" in d for d in fp8.derived_by)


def test_rules_show_each_projects_code_for_one_concept(capsys):
    assert main(["rules", "--profile", "aiter"]) == 0
    aiter = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert main(["rules", "--profile", "atom"]) == 0
    atom = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert aiter["api-propagation-incomplete"] == "B6" and atom["api-propagation-incomplete"] == "B5"
    assert aiter["env-var-knob"] == "HK9" and atom["env-var-knob"] == "HK5"


def test_explain_and_context_artifact(repo_factory, tmp_path, capsys):
    assert main(["explain", "B6", "--profile", "aiter"]) == 0
    assert "api-propagation-incomplete" in capsys.readouterr().out
    repo = repo_factory(AITER, {"aiter/jit/core.py": AITER["aiter/jit/core.py"] + "\nX = 1\n"})
    out = tmp_path / "ctx"
    assert main(["review", "--repo", str(repo), "--context-out", str(out), "--format", "json",
                 "--output", str(tmp_path / "r.json")]) == 0
    expanded = (out / "rules_expanded.txt").read_text()
    checklist = (out / "checklist.txt").read_text().splitlines()
    assert len(checklist) == expanded.count("\nWhat: ")
    assert "aiter/jit/core.py TIER1" in (out / "core_files.txt").read_text()


def test_scaffold_creates_rule_detector_and_fixture_pair(tmp_path):
    proc = subprocess.run(["python3", "scripts/new_rule.py", "my-new-rule", "--group", "housekeeping",
                           "--root", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "rules/catalog/housekeeping/my-new-rule.yml").exists()
    assert "@detector(\"my-new-rule\")" in (tmp_path / "src/pr_review/detectors/my_new_rule.py").read_text()
    for case in ("fire-example", "clean-example"):
        assert (tmp_path / f"tests/fixtures/rules/my-new-rule/{case}/expect.yml").exists()
