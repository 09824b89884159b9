"""Paths git quotes are reviewed, not dropped, and never crash a report (issue 9, class 3): a tab,
newline, quote or backslash makes git C-quote the path in the diff; a byte that is not UTF-8 (0xE9)
must survive to every output format."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pr_review.git import Repo
from pr_review.git.diff import unquote_path
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

from conftest import git

FLAGGED = b"import sys\nsys.path.append('/x')\n"
NAMES = {  # file name (bytes, as on disk) → the path the review must report
    "tab": (b"t\tab.py", "t\tab.py"),
    "newline": (b"new\nline.py", "new\nline.py"),
    "quote": (b'quo"te.py', 'quo"te.py'),
    "backslash": (b"back\\slash.py", "back\\slash.py"),
    "latin1": (b"caf\xe9.py", "caf\udce9.py"),  # not UTF-8: kept with surrogateescape
    "utf8": ("naïve.py".encode(), "naïve.py"),
}


def _repo(tmp_path: Path, names: list[bytes]) -> Path:
    """A repository whose `pr` branch adds `aiter/ops/<name>` for each name; written with os-level
    byte paths, since some of these names are not text."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "aiter" / "jit").mkdir(parents=True)
    (repo / "aiter" / "jit" / "core.py").write_text("X = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    ops = os.path.join(os.fsencode(repo), b"aiter", b"ops")
    os.makedirs(ops)
    for name in names:
        with open(os.path.join(ops, name), "wb") as fh:
            fh.write(FLAGGED)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "pr")
    return repo


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_quoted_and_non_utf8_paths_are_reviewed(tmp_path, kind):
    on_disk, reported = NAMES[kind]
    report = review(ReviewRequest(repo_dir=str(_repo(tmp_path, [on_disk])), base="main", head="pr", remote=None,
                                  pr=PRInfo(title="Add loaders")))
    path = f"aiter/ops/{reported}"
    assert report.stats["files"] == 1
    assert not report.not_checked, report.not_checked
    assert any(f.rule == "syspath-mutation" and f.path == path and f.line == 2 for f in report.all_findings), \
        [(f.rule, f.path) for f in report.all_findings]


@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "sarif"])
def test_every_output_format_writes_every_path(tmp_path, fmt):
    repo = _repo(tmp_path, [on_disk for on_disk, _ in NAMES.values()])
    out = tmp_path / f"report.{fmt}"
    for target in (["--output", str(out)], []):  # a file, and stdout (a pipe)
        proc = subprocess.run([sys.executable, "-m", "pr_review", "review", "--repo", str(repo), "--base", "main",
                               "--head", "pr", "--format", fmt, *target], capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode(errors="replace")
        assert b"Traceback" not in proc.stderr
    text = out.read_bytes().decode("utf-8")  # valid UTF-8 whatever the paths were
    if fmt != "sarif":  # SARIF carries only stable rules' results
        assert "aiter/ops/caf" in text
    if fmt == "json":
        paths = {f["path"] for f in json.loads(text)["findings"] + json.loads(text).get("preview_findings", [])}
        assert "aiter/ops/quo\"te.py" in paths and "aiter/ops/t\tab.py" in paths


@pytest.mark.parametrize("quoted, path", [
    ('"a/t\\tab.py"', "a/t\tab.py"),
    ('"a/quo\\"te\\\\.py"', 'a/quo"te\\.py'),
    ('"a/caf\\303\\251.py"', "a/café.py"),  # octal escapes are bytes of UTF-8
    ('"a/caf\\351.py"', "a/caf\udce9.py"),  # … or of anything else
    ("a/plain.py", "a/plain.py"),
])
def test_unquote_path(quoted, path):
    assert unquote_path(quoted) == path


def test_grep_reports_paths_verbatim(tmp_path):
    repo = _repo(tmp_path, [b"new\nline.py", b"co:lon.py", b"caf\xe9.py"])
    hits = {(path, line) for path, line, _ in Repo(repo).grep("sys.path", "pr", fixed=True)}
    assert hits == {("aiter/ops/new\nline.py", 2), ("aiter/ops/co:lon.py", 2), ("aiter/ops/caf\udce9.py", 2)}
