"""`pr-review stats` over a history: parallel reviews, the same statistics as one at a time, and a
commit that cannot be reviewed costs only itself."""
from __future__ import annotations

import io
import re
from pathlib import Path

from conftest import git, write_tree

from pr_review.cli import main
from pr_review.progress import Progress
from pr_review.stats import run_stats


def _history(root: Path) -> Path:
    """main: a root commit (no parent to review against) and two PR commits."""
    root.mkdir()
    git(root, "init", "-q")
    for n, files in enumerate([{"README.md": "demo\n"},
                               {"aiter/ops/gemm.py": "def gemm(x):\n    return x\n"},
                               {"aiter/ops/gemm.py": "import os\n\ndef gemm(x):\n    return os.environ.get('AITER_X') or x\n"}],
                              start=1):
        write_tree(root, files)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"change {n} (#{n})")
    return root


def _without_clock(text: str) -> str:
    return re.sub(r" in [\d.]+s \([\d.]+s per PR\)", "", text)


def test_parallel_stats_equal_serial_and_survive_a_bad_commit(tmp_path: Path):
    repo = str(_history(tmp_path / "repo"))
    serial, parallel = io.StringIO(), io.StringIO()
    assert run_stats(repo, "main", serial, jobs=1) == 0
    assert run_stats(repo, "main", parallel, jobs=2) == 0
    assert _without_clock(parallel.getvalue()) == _without_clock(serial.getvalue())
    text = serial.getvalue()
    root = git(Path(repo), "rev-list", "--max-parents=0", "HEAD").strip()
    assert f"{root[:12]}: review failed: " in text  # the root commit has no parent to review against
    assert text.splitlines()[1].startswith("2 PRs of ") and ", 1 failed" in text.splitlines()[1]
    assert re.search(r"^any-pr +2 100\.0%$", text, re.M)


def test_jobs_must_be_a_positive_number(tmp_path: Path, capsys):
    repo = str(_history(tmp_path / "repo"))
    assert main(["stats", "--repo", repo, "--range", "main", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_only_on_a_terminal():
    terminal, log = _Terminal(), io.StringIO()
    for stream in (terminal, log):
        bar = Progress(2, stream)
        bar.advance()
        bar.advance(failed=True)
    assert log.getvalue() == ""
    assert terminal.getvalue().endswith("] 2/2, 1 failed\n") and terminal.getvalue().count("\r") == 2
