"""`pr-review stats` over a history: parallel reviews, the same statistics as one at a time, and a
commit that cannot be reviewed costs only itself."""
from __future__ import annotations

import io
import re
from pathlib import Path

from conftest import git, write_tree

from pr_review.cli import main
from pr_review.progress import Progress
from pr_review.stats import review_all, run_stats, write_summary


def _history(root: Path) -> Path:
    """main: an initial import (not a merged PR) and three PR commits."""
    root.mkdir()
    git(root, "init", "-q")
    for n, files in enumerate([{"README.md": "demo\n"},
                               {"aiter/ops/gemm.py": "def gemm(x):\n    return x\n"},
                               {"aiter/ops/gemm.py": "import os\n\ndef gemm(x):\n    return os.environ.get('AITER_X') or x\n"},
                               {"README.md": "demo of gemm\n"}]):
        write_tree(root, files)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"change {n} (#{n})" if n else "initial import")
    return root


def _without_clock(text: str) -> str:
    return re.sub(r" in [\d.]+s \([\d.]+s per PR\)", "", text)


def test_parallel_stats_equal_serial(tmp_path: Path):
    repo = str(_history(tmp_path / "repo"))
    serial, parallel = io.StringIO(), io.StringIO()
    assert run_stats(repo, "main", serial, jobs=1) == 0
    assert run_stats(repo, "main", parallel, jobs=2) == 0
    assert _without_clock(parallel.getvalue()) == _without_clock(serial.getvalue())
    text = serial.getvalue()
    assert text.startswith("3 PRs of ") and "failed" not in text
    assert re.search(r"^any-pr +3 100\.0%$", text, re.M)


def test_a_commit_that_cannot_be_reviewed_costs_only_itself(tmp_path: Path):
    repo = str(_history(tmp_path / "repo"))
    head = git(Path(repo), "rev-parse", "HEAD").strip()
    gone = "0" * 40  # a sha the repository does not have: its review fails, the others go on
    rows = {r["sha"]: r for r in review_all(repo, [(gone, "lost (#9)"), (head, "change 3 (#3)")], None, 2)}
    assert "error" in rows[gone] and "error" not in rows[head] and rows[head]["families"]
    out = io.StringIO()
    write_summary(list(rows.values()), repo, 1.0, out)
    assert f"{gone[:12]}: review failed: " in out.getvalue() and ", 1 failed" in out.getvalue()


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
