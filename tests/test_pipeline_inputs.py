"""Malformed and awkward input: every case yields a report, never a traceback (issue 2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pr_review.catalog import Rule
from pr_review.cli import main
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

from conftest import git, make_repo

BASE = {"aiter/jit/core.py": "import os\n", "aiter/ops/a.py": "def f(x):\n    return x\n",
        "aiter/ops/old_name.py": "def g():\n    return 1\n", "aiter/gone.py": "X = 1\n",
        "data/blob.bin": b"\x00\x01\x02", "aiter/latin1.py": "X = 1\n"}


def run(repo: Path, **kw):
    return review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, **kw))


def test_binary_rename_delete_no_newline_non_utf8(repo_factory):
    repo = repo_factory(BASE, {
        "data/blob.bin": b"\x00\xff\x10\x00",
        "aiter/ops/new_name.py": "def g():\n    return 1\n",
        "aiter/ops/a.py": "import sys\nsys.path.append('/x')\ndef f(x):\n    return x",  # no trailing newline
        "aiter/latin1.py": "X = 'caf\xe9'\n".encode("latin-1"),
    }, delete=("aiter/ops/old_name.py", "aiter/gone.py"))
    report = run(repo)
    paths = {n.path: n.reason for n in report.not_checked}
    assert paths["data/blob.bin"] == "binary file"
    assert "not UTF-8" in paths["aiter/latin1.py"]
    assert any(f.rule == "syspath-mutation" and f.path == "aiter/ops/a.py" and f.line == 2 for f in report.all_findings)
    assert report.stats["files"] == 5
    summary = " ".join(report.summary)
    assert "1 renamed" in summary and "1 deleted" in summary


def test_empty_pr_is_reported_not_crashed(repo_factory):
    repo = repo_factory({"a.py": "x = 1\n"}, {})
    report = run(repo)
    assert report.stats["files"] == 0
    assert not report.runtime_surface and "no files" in report.runtime_reason
    assert report.verdict == "LGTM"


def test_symlink_and_submodule_are_not_read(repo_factory, tmp_path):
    repo = repo_factory({"a.py": "x = 1\n"}, {})
    (repo / "link.py").symlink_to("a.py")
    sub = make_repo(tmp_path / "sub", {"s.txt": "s\n"}, {})
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendored")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "add link and submodule")
    reasons = {n.path: n.reason for n in run(repo).not_checked}
    assert reasons["link.py"].startswith("symlink")
    assert reasons["vendored"].startswith("submodule")


def test_oversized_file_is_not_checked(repo_factory):
    repo = repo_factory({"a.py": "x = 1\n"}, {"big.py": "import sys\nsys.path.append('/x')\n" + "y = 1\n" * 5000})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, size_cap=1024))
    assert any(n.path == "big.py" and "cap" in n.reason for n in report.not_checked)
    assert not report.all_findings


def test_syntax_error_is_not_checked_not_a_crash(repo_factory):
    repo = repo_factory({"a.py": "x = 1\n"}, {"a.py": "def broken(:\n    sys.path.append('/x')\n"})
    report = run(repo)
    assert any(n.path == "a.py" and "not valid Python" in n.reason for n in report.not_checked)


def test_shallow_clone_with_missing_base_is_deepened(repo_factory, tmp_path):
    origin = repo_factory({"a.py": "x = 1\n"}, {"a.py": "import sys\nsys.path.insert(0, '/x')\n"})
    for i in range(60):  # history deeper than one deepening step
        (origin / "a.py").write_text(f"import sys\nsys.path.insert(0, '/x')\nv = {i}\n")
        git(origin, "commit", "-qam", f"pr {i}")
    git(origin, "checkout", "-q", "main")
    for i in range(3):
        (origin / f"m{i}.py").write_text("z = 1\n")
        git(origin, "add", "-A")
        git(origin, "commit", "-qm", f"main {i}")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth=1", "--branch=pr", f"file://{origin}", str(clone)], check=True)
    assert git(clone, "rev-parse", "--is-shallow-repository").strip() == "true"
    report = review(ReviewRequest(repo_dir=str(clone), base="main", head="HEAD", remote="origin"))
    assert report.merge_base == git(origin, "merge-base", "main", "pr").strip()
    assert any(f.rule == "syspath-mutation" and f.line == 2 for f in report.all_findings)
    assert any("deepened" in n or "fetched" in n for n in report.notes)


def test_unrelated_histories_give_a_clear_message(tmp_path, capsys):
    a = make_repo(tmp_path / "a", {"a.py": "x = 1\n"}, {})
    git(a, "checkout", "-q", "--orphan", "other")
    git(a, "commit", "-q", "--allow-empty", "-m", "unrelated")
    assert main(["review", "--repo", str(a), "--base", "main", "--head", "other"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pr-review: no merge base") and "\n" not in err


def test_not_a_repository_exits_2_with_one_line(tmp_path, capsys):
    assert main(["review", "--repo", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"pr-review: {tmp_path} is not a git repository"


def test_git_missing_from_path_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["review", "--repo", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "pr-review: git is not installed or not on PATH; it is needed to read the repository"


def test_on_path_answers_as_shutil_which(tmp_path, monkeypatch):
    import shutil

    from pr_review.cli import on_path

    (tmp_path / "tool").write_text("#!/bin/sh\n")
    (tmp_path / "tool").chmod(0o755)
    (tmp_path / "plain").write_text("")
    (tmp_path / "folder").mkdir(mode=0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/bin{os.pathsep}/usr/bin")
    for program in ("tool", "plain", "folder", "git", "sh", "no-such-program"):
        assert on_path(program) == (shutil.which(program) is not None), program


@pytest.mark.parametrize("columns", [None, "120", "0", "-3", "wide"])
def test_terminal_columns_answers_as_shutil_and_help_reads_as_argparse_writes_it(columns, monkeypatch):
    import argparse
    import shutil

    from pr_review.cli import HelpFormatter, _parser, terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert terminal_columns() == shutil.get_terminal_size().columns
    ours = _parser("review")
    theirs = _parser("review")
    for parser in (theirs, theirs._subparsers._group_actions[0].choices["review"]):  # argparse's own formatter
        parser.formatter_class = argparse.HelpFormatter
    assert ours.format_help() == theirs.format_help()
    assert ours._subparsers._group_actions[0].choices["review"].formatter_class is HelpFormatter
    assert ours._subparsers._group_actions[0].choices["review"].format_help() == \
        theirs._subparsers._group_actions[0].choices["review"].format_help()


def test_bad_arguments_exit_2(capsys):
    assert main(["review", "--format", "pdf"]) == 2
    assert main(["frobnicate"]) == 2


def test_missing_base_ref_is_a_clear_message(repo_factory, capsys):
    repo = repo_factory({"a.py": "x = 1\n"}, {})
    assert main(["review", "--repo", str(repo), "--base", "no-such-branch"]) == 2
    assert "no-such-branch" in capsys.readouterr().err


def test_default_base_is_main_and_every_format_renders(repo_factory, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(Rule, "annotates_in", lambda rule, profile: True)  # every format shows an annotated finding
    repo = repo_factory({"aiter/jit/core.py": "x = 1\n"},
                        {"aiter/loader.py": "import sys\nsys.path.insert(0, '/opt/rocm/lib')\n"})
    for fmt in ("text", "markdown", "json", "sarif"):
        out = tmp_path / f"report.{fmt}"
        assert main(["review", "--repo", str(repo), "--format", fmt, "--output", str(out)]) == 0
        assert out.read_text()
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["schema"] == 1 and data["profile"] == "aiter"
    syspath = next(f for f in data["findings"] if f["rule"] == "syspath-mutation")
    assert {"rule", "code", "severity", "path", "line"} <= set(syspath) and syspath["line"] == 2
    assert all("rule" in item for item in data["checklist"])
    sarif = json.loads((tmp_path / "report.sarif").read_text())
    assert sarif["version"] == "2.1.0"
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "syspath-mutation")
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert result["partialFingerprints"]


def test_module_entry_point_runs():
    proc = subprocess.run([sys.executable, "-m", "pr_review", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.startswith("pr-review ")


def test_demo_prints_findings(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for rule_title in ("hipBLASLt", "sys.path", "environment-variable knob"):
        assert rule_title.lower() in out.lower()


def test_title_is_carried_into_the_report(repo_factory):
    repo = repo_factory({"a.py": "x = 1\n"}, {"a.py": "x = 2\n"})
    report = run(repo, pr=PRInfo(title="Fix </details> @someone"))
    assert report.pr.title == "Fix </details> @someone"


@pytest.mark.parametrize("fmt", ["json", "sarif"])
def test_fingerprints_are_stable_across_line_moves(repo_factory, fmt):
    one = repo_factory({"a.py": "x = 1\n"}, {"a.py": "import sys\nsys.path.insert(0, '/x')\n"})
    two = repo_factory({"a.py": "x = 1\n"}, {"a.py": "import sys\n\n\n# moved down\nsys.path.insert(0, '/x')\n"})
    first = run(one).all_findings[0]
    second = run(two).all_findings[0]
    assert first.line != second.line and first.fingerprint == second.fingerprint


def test_source_files_over_the_budget_are_listed_not_checked(repo_factory, monkeypatch):
    import pr_review.pipeline as pipeline
    monkeypatch.setattr(pipeline, "ANALYSIS_BUDGET", 2)
    head = {f"aiter/m{i}.py": "import sys\nsys.path.insert(0, '/x')\n" + "v = 1\n" * i for i in range(4)}
    report = run(repo_factory({"a.py": "x = 1\n"}, head))
    skipped = [n.path for n in report.not_checked if "budget" in n.reason]
    assert sorted(skipped) == ["aiter/m0.py", "aiter/m1.py"]  # the two with the fewest changed lines
    assert {f.path for f in report.all_findings if f.rule == "syspath-mutation"} == {"aiter/m2.py", "aiter/m3.py"}


def test_python_past_the_byte_budget_is_listed_not_checked(repo_factory, monkeypatch):
    """Files are taken by changed lines while their sources fit: one too large is left out, a smaller
    one after it still fits."""
    import pr_review.pipeline as pipeline
    monkeypatch.setattr(pipeline, "PYTHON_BYTES_BUDGET", 3000)
    mutation = "import sys\nsys.path.insert(0, '/x')\n"
    head = {"aiter/first.py": mutation + "v = 1\n" * 300,  # 302 changed lines, 1,846 bytes
            "aiter/second.py": mutation + "w = 2\n" * 200,  # 202 lines, 1,246 bytes: over the 1,154 left
            "aiter/third.py": mutation + "u = 3\n" * 100}  # 102 lines, 646 bytes: fits after it
    report = run(repo_factory({"a.py": "x = 1\n"}, head))
    skipped = {n.path: n.reason for n in report.not_checked}
    assert list(skipped) == ["aiter/second.py"] and "MiB of source one review parses" in skipped["aiter/second.py"]
    assert {f.path for f in report.all_findings if f.rule == "syspath-mutation"} == {"aiter/first.py", "aiter/third.py"}
