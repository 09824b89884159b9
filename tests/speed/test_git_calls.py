"""A review asks git no question twice and none it does not need: the `--attr-source` probe rides on
the first rev-parse, both revisions and their merge base come from one rev-parse, and `git remote`
runs only when something must be fetched. The answers are those of the separate questions."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import git, make_repo

import pr_review.git.repo as repo_module
from pr_review.cli import main
from pr_review.git import Repo

REAL_GIT = shutil.which("git")


def _logging_git(tmp_path: Path, prelude: str = "") -> Path:
    """A `git` first on PATH that logs its arguments to `tmp_path/git.log`, runs the shell `prelude` (which
    may refuse the call or change its arguments), then the real git."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$*\" >> {tmp_path / 'git.log'}\n{prelude}exec {REAL_GIT} \"$@\"\n",
                      encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return bin_dir


def _fake_git(tmp_path: Path, attr_source: str) -> Path:
    """A logging `git` (`_logging_git`) that "drop"s `--attr-source` (a git that has the option) or
    "refuse"s it as git < 2.40 does."""
    refuse = ('for a in "$@"; do case "$a" in --attr-source=*) echo "unknown option: $a" >&2; exit 129;; '
              'esac; done\n') if attr_source == "refuse" else ""
    return _logging_git(tmp_path, refuse + 'for a in "$@"; do shift; case "$a" in --attr-source=*) ;; '
                                           '*) set -- "$@" "$a";; esac; done\n')


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


NAMES_TEXT = {
    "a.py": "def alpha_one():\n    return beta_two\n\nx = alpha_oneX  # a longer name holds it\n",
    "b/c.py": b"gamma = 1\r\n# \xff\xfe not UTF-8, then beta_two\n" + b"y = alpha_one" * 400 + b"\n",
    "d.txt": "beta_two and alpha_one on one line\nnothing here\n",
    "e.bin": b"\x00beta_two\x00",
}


def _grep_with(tmp_path: Path, monkeypatch, pcre: str) -> tuple[list[tuple[str, int, str]], list[str], bool | None]:
    """`Repo.grep` of an alternation of names, through a git that either has Perl regexes ("has") or
    refuses -P as a git built without PCRE does ("lacks"): the hits, git's calls, what it learned."""
    repo_dir = make_repo(tmp_path / "repo", NAMES_TEXT, {})
    refuse = ('for a in "$@"; do [ "$a" = -P ] && { echo "fatal: cannot use Perl-compatible regexes when not '
              'compiled with USE_LIBPCRE" >&2; exit 128; }; done\n') if pcre == "lacks" else ""
    monkeypatch.setenv("PATH", f"{_logging_git(tmp_path, refuse)}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(repo_module, "_pcre", None)
    repo = Repo.open(repo_dir)
    hits = [repo.grep("beta_two|alpha_one", "main", ("*.py", "*.txt", "*.bin")) for _ in range(2)]
    files = repo.grep("beta_two|gamma", "main", files_only=True)
    assert hits[0] == hits[1]
    calls = [c for c in (tmp_path / "git.log").read_text(encoding="utf-8").splitlines() if " grep " in f" {c} "]
    return hits[0] + files, calls, repo_module._pcre


@pytest.mark.skipif(REAL_GIT is None, reason="needs git")
def test_an_alternation_of_names_is_searched_with_perl_regexes_and_finds_what_posix_finds(tmp_path, monkeypatch):
    plain = make_repo(tmp_path / "plain", NAMES_TEXT, {})
    out = subprocess.run([REAL_GIT, "grep", "-I", "-z", "-n", "-E", "-e", "beta_two|alpha_one", "main", "--", "*.py",
                          "*.txt", "*.bin"], cwd=plain, capture_output=True, check=True).stdout
    expected = [(p.removeprefix("main:"), int(n), t) for p, n, t in (
        line.split("\0") for line in out.decode("utf-8", "surrogateescape").removesuffix("\n").split("\n"))]
    with_perl, calls, learned = _grep_with(tmp_path / "has", monkeypatch, "has")
    without, fallback_calls, unlearned = _grep_with(tmp_path / "lacks", monkeypatch, "lacks")
    assert with_perl[:len(expected)] == expected and with_perl == without
    assert [(p, n) for p, n, _ in with_perl[len(expected):]] == [("a.py", 0), ("b/c.py", 0), ("d.txt", 0)]
    if learned:  # this machine's git has PCRE: every alternation went to it, once each
        assert len(calls) == 3 and all(" -P " in c for c in calls)
    # a git without PCRE refuses -P once; every later search goes straight to -E
    assert unlearned is False
    assert [" -P " in c for c in fallback_calls] == [True, False, False, False]


def test_a_search_git_cannot_make_is_an_error_and_one_past_pcres_limit_falls_back(tmp_path, monkeypatch):
    """A pattern PCRE refuses as too large is searched with -E (and -P stays in use for the next search);
    a search git refuses outright raises GitError rather than answering "nothing found"."""
    repo = Repo.open(make_repo(tmp_path / "repo", NAMES_TEXT, {}))
    monkeypatch.setattr(repo_module, "_pcre", None)
    many = "|".join(f"name_{i:05d}_{'x' * 12}" for i in range(3000)) + "|beta_two"
    hits = repo.grep(many, "main", ("*.py",))
    plain = subprocess.run([REAL_GIT, "grep", "-I", "-z", "-n", "-E", "-e", many, "main", "--", "*.py"],
                           cwd=repo.root, capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape")
    assert [(p, n) for p, n, _ in hits] == [(p.removeprefix("main:"), int(n)) for p, n, _ in
                                            (line.split("\0") for line in plain.removesuffix("\n").split("\n"))]
    assert repo_module._pcre is not False  # the pattern, not git, was refused
    with pytest.raises(repo_module.GitError, match="git grep .*failed"):
        repo.grep("beta_two|alpha_one", "no-such-revision", ("*.py",))
    with pytest.raises(repo_module.GitError, match="git grep .*failed"):
        repo.grep("unbalanced(", "main")
