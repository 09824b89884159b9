"""A remote that accepts and never answers must not hang the review (issue 9, class 7, git half):
every git command that touches the network has a deadline, and missing it is a clear message."""
from __future__ import annotations

import pytest

from pr_review.cli import main
from pr_review.git import GitError, Repo
from pr_review.git import repo as repo_module

from _git_util import silent_remote
from conftest import git


@pytest.fixture
def short_fetch_deadline(monkeypatch):
    # The real deadline is minutes; the server below would hold the test that long.
    monkeypatch.setattr(repo_module, "FETCH_TIMEOUT", 2.0)


def test_fetch_from_a_silent_remote_times_out(repo_factory, short_fetch_deadline):
    repo_dir = repo_factory({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    with silent_remote() as url:
        git(repo_dir, "remote", "add", "origin", url)
        with pytest.raises(GitError, match="timed out"):
            Repo.open(repo_dir).ensure_commit("origin/feature", "origin")


def test_deepening_against_a_silent_remote_times_out(repo_factory, tmp_path, short_fetch_deadline):
    origin = repo_factory({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    for n in range(3):  # enough history that a depth-1 clone has no merge base
        git(origin, "commit", "-q", "--allow-empty", "-m", f"pr {n}")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth=1", "--no-single-branch", f"file://{origin}", str(clone))
    with silent_remote() as url:
        git(clone, "remote", "set-url", "origin", url)
        repo = Repo.open(clone)
        with pytest.raises(GitError, match="timed out"):
            repo.find_merge_base(repo.resolve("origin/main"), repo.resolve("origin/pr"), "origin")


def test_cli_reports_the_timeout_in_one_line(repo_factory, short_fetch_deadline, capsys):
    repo_dir = repo_factory({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    with silent_remote() as url:
        git(repo_dir, "remote", "add", "origin", url)
        assert main(["review", "--repo", str(repo_dir), "--base", "origin/feature", "--head", "pr"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "timed out" in err[0] and "Traceback" not in err[0]
