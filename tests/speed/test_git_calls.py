"""A review asks git no question twice and none it does not need: the `--attr-source` probe rides on
the first rev-parse, both revisions and their merge base come from one rev-parse, and `git remote`
runs only when something must be fetched. The answers are those of the separate questions."""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from conftest import git, make_repo

import pr_review.git.repo as repo_module
from pr_review.cli import main
from pr_review.git import Repo

REAL_GIT = shutil.which("git")


def _fake_git(tmp_path: Path, attr_source: str) -> Path:
    """A `git` first on PATH that logs its arguments and runs the real one; `attr_source` says what it
    does with `--attr-source`: "drop" it (a git that has the option) or "refuse" it as git < 2.40 does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    refuse = ('for a in "$@"; do case "$a" in --attr-source=*) echo "unknown option: $a" >&2; exit 129;; '
              'esac; done\n') if attr_source == "refuse" else ""
    script = bin_dir / "git"
    script.write_text(f"""#!/bin/sh
printf '%s\\n' "$*" >> {log}
{refuse}for a in "$@"; do shift; case "$a" in --attr-source=*) ;; *) set -- "$@" "$a";; esac; done
exec {REAL_GIT} "$@"
""", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir


@pytest.fixture
def fresh_probe(monkeypatch):
    monkeypatch.setattr(repo_module, "_attr_source", None)


@pytest.mark.parametrize("attr_source", ["drop", "refuse"])
def test_the_attr_source_probe_rides_on_the_first_rev_parse(tmp_path, monkeypatch, fresh_probe, attr_source):
    repo_dir = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    expected = Repo.open(repo_dir)
    monkeypatch.setattr(repo_module, "_attr_source", None)
    monkeypatch.setenv("PATH", f"{_fake_git(tmp_path, attr_source)}{os.pathsep}{os.environ['PATH']}")
    repo = Repo.open(repo_dir)
    assert (repo.root, repo.git_dir, repo.empty_tree) == (expected.root, expected.git_dir, expected.empty_tree)
    assert repo_module._supports_attr_source() is (attr_source == "drop")
    calls = (tmp_path / "git.log").read_text(encoding="utf-8").splitlines()
    assert not any(c.endswith(" version") for c in calls)
    assert len(calls) == (1 if attr_source == "drop" else 2)
    with pytest.raises(repo_module.GitError, match="is not a git repository"):
        Repo.open(tmp_path / "bin")


def _criss_cross(root: Path) -> Path:
    """main and pr each merge the other's first commit: two merge bases."""
    repo = make_repo(root, {"a.py": "x = 1\n"}, {"b.py": "y = 1\n"})
    git(repo, "checkout", "-q", "main")
    (repo / "c.py").write_text("z = 1\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")
    git(repo, "tag", "-a", "-m", "annotated", "v1")
    git(repo, "branch", "side-main")
    git(repo, "merge", "-q", "--no-edit", "pr~0")
    git(repo, "checkout", "-q", "pr")
    git(repo, "merge", "-q", "--no-edit", "side-main")
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "commit", "-q", "--allow-empty", "-m", "unrelated")
    return repo


@pytest.mark.parametrize("head,base", [
    ("pr", "main"), ("main", "pr"), ("pr", "v1"), ("HEAD", "main~1"), ("other", "main"), ("pr", "missing"),
    ("missing", "main"), ("pr", "main^{tree}"), ("main..pr", "main"), ("pr", "-q"), ("pr", "^main"),
    ("pr", "main:a.py"),
])
def test_one_rev_parse_answers_as_resolve_and_merge_base_do(tmp_path, head, base):
    repo = Repo.open(_criss_cross(tmp_path / "repo"))
    head_sha, base_sha = repo.resolve(head), repo.resolve(base)
    expected = (head_sha, base_sha, repo.merge_base(base_sha, head_sha) if head_sha and base_sha else None)
    assert repo.commits_and_merge_base(head, base) == expected
    assert len(git(repo.root, "merge-base", "--all", "main", "pr").split()) == 2


def test_a_review_runs_no_remote_version_or_separate_revision_call(tmp_path, monkeypatch, fresh_probe, capsys):
    repo_dir = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    monkeypatch.setenv("PATH", f"{_fake_git(tmp_path, 'drop')}{os.pathsep}{os.environ['PATH']}")
    assert main(["review", "--repo", str(repo_dir), "--base", "main", "--head", "pr", "--format", "json",
                 "--remote", "none", "--output", str(tmp_path / "report.json")]) == 0
    commands = [_command(c.split()) for c in (tmp_path / "git.log").read_text(encoding="utf-8").splitlines()]
    assert "remote" not in commands and "version" not in commands and "merge-base" not in commands
    assert commands.count("rev-parse") == 2  # the repository, then head, base and their merge base


def _command(argv: list[str]) -> str:
    """The git command of a logged call: the first word that is neither an option nor an option's value."""
    words = iter(argv)
    for word in words:
        if word in ("-C", "-c"):
            next(words)
        elif not word.startswith("-"):
            return word
    return ""
