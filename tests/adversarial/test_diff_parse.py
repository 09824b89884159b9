"""The diff is PR content, parsed by the review's own reader: every file git lists, its added and
removed lines exactly as the two blobs hold them at those line numbers, whatever the lines say (a
removed `-- x` reads `--- x` in the patch, an added `++ y` reads `+++ y`) and whatever the paths hold
(a space, ` b/`, a quote, a tab). Checked against git's own answers, not against expected text."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import git, make_repo

from pr_review.git import Repo
from pr_review.git.diff import parse_diff, read_changes

LOOKS_LIKE_HEADERS = "".join(f"line {i}\n" for i in range(30))

BASE: dict[str, str | bytes] = {
    "headers.py": "-- x\n" + LOOKS_LIKE_HEADERS + "diff --git a/q b/q\n@@ -1 +1 @@\n",
    "x b/y.py": "keep = 1\nold = 2\n",  # a directory named `x b`: the `diff --git` line reads ambiguously
    "with space/old name.py": "".join(f"v{i} = {i}\n" for i in range(20)),
    "moved.py": "".join(f"w{i} = {i}\n" for i in range(20)),
    "mode.sh": "echo hi\n",
    "no_eol.py": "a = 1\nb = 2",
    "crlf.py": "a = 1\r\nb = 2\r\n",
    "emptied.py": "gone = 1\n",
    "filled.py": "",
    "quo\"te.py": "q = 1\n",
    "blob.bin": b"\x00\x01\x02old",
    "deleted.py": "d = 1\n",
}
HEAD: dict[str, str | bytes] = {
    "headers.py": "++ y\n" + LOOKS_LIKE_HEADERS + "diff --git a/r b/r\n@@ -2 +2 @@\n",
    "x b/y.py": "keep = 1\nnew = 3\n",
    "with space/new name.py": "".join(f"v{i} = {i}\n" for i in range(20)).replace("v3 = 3", "v3 = 33"),
    "renamed/moved.py": "".join(f"w{i} = {i}\n" for i in range(20)),
    "no_eol.py": "a = 1\nb = 3",
    "crlf.py": "a = 1\r\nb = 3\r\n",
    "emptied.py": "",
    "filled.py": "now = 1\n",
    "quo\"te.py": "q = 2\n",
    "t\tab.py": "t = 1\n",
    "blob.bin": b"\x00\x01\x02new",
    "empty_new.py": "",
}
REMOVED = ("with space/old name.py", "moved.py", "deleted.py")


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    root = make_repo(tmp_path_factory.mktemp("diff") / "repo", BASE, {})
    for path in REMOVED:
        (root / path).unlink()
    for path, content in HEAD.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    os.chmod(root / "mode.sh", 0o755)
    os.symlink("headers.py", root / "link.py")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "pr")
    return root


def _git_lines(root: Path, rev: str, path: str) -> list[str]:
    blob = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=root, capture_output=True, check=True).stdout
    return [line.rstrip("\r") for line in blob.decode("utf-8", "surrogateescape").split("\n")]


def _numstat(root: Path) -> dict[str, tuple[int, int]]:
    out = subprocess.run(["git", "diff", "-M", "--numstat", "-z", "HEAD~1", "HEAD"], cwd=root, capture_output=True,
                         check=True).stdout.decode("utf-8", "surrogateescape").split("\0")
    counts, i = {}, 0
    while i < len(out) and out[i]:
        added, removed, path = out[i].split("\t", 2)
        if not path:
            path, i = out[i + 2], i + 2
        counts[path] = (int(added) if added != "-" else 0, int(removed) if removed != "-" else 0)
        i += 1
    return counts


def test_every_line_is_the_blobs_line_at_its_number(repo: Path):
    files = {f.path: f for f in read_changes(Repo.open(repo), "HEAD~1", "HEAD", size_cap=1 << 20)}
    counts = _numstat(repo)
    assert set(files) == set(counts)
    for path, f in files.items():
        if f.skipped:
            continue
        assert (len(f.added), len(f.removed)) == counts[path], path
        head = _git_lines(repo, "HEAD", path) if f.status != "deleted" else []
        base = _git_lines(repo, "HEAD~1", f.old_path or path) if f.status != "added" or f.removed else []
        assert all(head[n - 1] == text for n, text in f.added), path
        assert all(base[n - 1] == text for n, text in f.removed), path
        # what parsing both sides costs: the blobs' sizes as git counts them
        sides = ([("HEAD", path)] if f.status != "deleted" else []) + \
            ([("HEAD~1", f.old_path or path)] if f.status != "added" else [])
        assert f.source_bytes == sum(len(subprocess.run(["git", "show", f"{rev}:{p}"], cwd=repo, capture_output=True,
                                                        check=True).stdout) for rev, p in sides), path


def test_paths_statuses_and_what_is_not_read(repo: Path):
    files = {f.path: f for f in read_changes(Repo.open(repo), "HEAD~1", "HEAD", size_cap=1 << 20)}
    assert files["headers.py"].added[0] == (1, "++ y") and files["headers.py"].removed[0] == (1, "-- x")
    assert [t for _, t in files["headers.py"].added[1:]] == ["diff --git a/r b/r", "@@ -2 +2 @@"]
    assert files["x b/y.py"].status == "modified" and files["x b/y.py"].added == [(2, "new = 3")]
    assert (files["with space/new name.py"].status, files["with space/new name.py"].old_path) == \
        ("renamed", "with space/old name.py")
    assert (files["renamed/moved.py"].status, files["renamed/moved.py"].old_path) == ("renamed", "moved.py")
    assert not files["renamed/moved.py"].added and not files["renamed/moved.py"].hunks
    assert files["mode.sh"].status == "modified" and not files["mode.sh"].hunks
    assert files["no_eol.py"].added == [(2, "b = 3")] and files["crlf.py"].added == [(2, "b = 3")]
    assert files['quo"te.py'].added == [(1, "q = 2")] and files["t\tab.py"].status == "added"
    assert files["empty_new.py"].status == "added" and files["deleted.py"].status == "deleted"
    # a single hunk from or to line 0: the file's whole text came or went
    assert files["emptied.py"].status == "deleted" and files["filled.py"].status == "added"
    assert files["blob.bin"].skipped == "binary file" and files["link.py"].skipped == "symlink, not read"


@pytest.mark.parametrize("broken", [
    "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n-a\n+b\n",  # a line short
    "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+b\n+c\n@@ -9 +9 @@\n",
    "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n?a\n",
    "diff --git a/f.py b/f.py\n--- a/f.py\n+++ b/f.py\n@@ -x +1 @@\n",
    "diff --git a/f.py b/g.py\nold mode 100644\nnew mode 100755\n",
])
def test_a_malformed_patch_is_an_error_not_a_guess(broken: str):
    with pytest.raises(ValueError, match="could not be parsed"):
        parse_diff(broken)
