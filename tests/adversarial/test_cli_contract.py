"""The CLI's contract (issue 9, class 14): an unusable argument exits 2 with one line on stderr and
no traceback, and `stats` keeps what it has already measured when the range runs out."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, make_repo

AITER = {"aiter/jit/core.py": "import os\n"}
PR = {"aiter/ops/a.py": "import sys\nsys.path.append('/x')\n"}


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pr_review", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)


def assert_usage_error(result: subprocess.CompletedProcess, *words: str) -> None:
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("pr-review: ") and result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    for word in words:
        assert word in result.stderr


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return make_repo(tmp_path_factory.mktemp("cli") / "repo", AITER, PR)


@pytest.mark.parametrize("target, words", [
    ("missing/out.txt", ["--output", "missing/out.txt"]),  # into a directory that does not exist
    ("afile/out.txt", ["--output", "afile/out.txt"]),  # under a file
    (".", ["--output"]),  # onto a directory
])
def test_output_that_cannot_be_written(repo, tmp_path, target, words):
    (tmp_path / "afile").write_text("x")
    result = cli("review", "--repo", str(repo), "--base", "main", "--head", "pr", "--output", target, cwd=tmp_path)
    assert_usage_error(result, *words)


@pytest.mark.parametrize("target", ["afile", "afile/sub"])
def test_context_out_onto_a_file(repo, tmp_path, target):
    (tmp_path / "afile").write_text("x")
    result = cli("review", "--repo", str(repo), "--base", "main", "--head", "pr", "--context-out", target,
                 cwd=tmp_path)
    assert_usage_error(result, "--context-out", target)
    assert (tmp_path / "afile").read_text() == "x"


def test_output_and_context_out_that_can_be_written(repo, tmp_path):
    """The checks refuse only what cannot work: a new context directory is created, a file replaced."""
    (tmp_path / "out.txt").write_text("old")
    result = cli("review", "--repo", str(repo), "--base", "main", "--head", "pr", "--output", "out.txt",
                 "--context-out", "new/ctx", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Checklist" in (tmp_path / "out.txt").read_text()
    assert (tmp_path / "new" / "ctx" / "findings.txt").is_file()


def test_git_missing_from_path(repo, tmp_path):
    for command in (["review", "--repo", str(repo)], ["stats", "--repo", str(repo), "--range", "main"]):
        result = cli(*command, env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
        assert_usage_error(result, "git")


def test_stats_bad_range(repo):
    assert_usage_error(cli("stats", "--repo", str(repo), "--range", "nosuch..main"), "nosuch..main")


@pytest.mark.parametrize("limit", ["0", "-3", "many"])
def test_stats_bad_limit(repo, limit):
    result = cli("stats", "--repo", str(repo), "--range", "main", "--limit", limit)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "--limit" in result.stderr


def test_stats_reaching_the_root_commit_keeps_its_results(tmp_path):
    """The oldest commit of the range has no parent to review against: an unusable range (exit 2, one
    line naming the commit), and the commits after it are still counted and printed."""
    repo = make_repo(tmp_path / "repo", AITER, PR)
    for n in (1, 2):
        (repo / f"aiter/ops/b{n}.py").write_text(f"X = {n}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"more {n} (#{n})")
    root = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    result = cli("stats", "--repo", str(repo), "--range", "pr", "--all-commits", "--jobs", "1")
    assert result.returncode == 2 and "Traceback" not in result.stdout + result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1 and f"root commit {root[:12]}" in result.stderr
    assert result.stdout.startswith("3 PRs of")  # pr, more 1, more 2: counted before the error
    assert "review failed" not in result.stdout


def test_stats_prs_only_range_without_the_root_is_fine(tmp_path):
    repo = make_repo(tmp_path / "repo", AITER, PR)
    result = cli("stats", "--repo", str(repo), "--range", "main..pr", "--all-commits")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("1 PRs of")
