"""Workflow commands and file commands as the runner reads them."""
from __future__ import annotations

import io
import re
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from actions_toolkit import core
from gh_support import finding, parse_outputs, snapshot

from pr_review.github import commands


def test_annotation_command_lines_snapshot() -> None:
    findings = [finding(1, "high", trigger="M=1"), finding(2, "medium", end_line=9), finding(3, "low"),
                finding(4, line=None, anchor="file"), finding(5, path="", line=None, anchor="pr")]
    snapshot("workflow_commands.txt", "\n".join(commands.annotation_command(f, "en") for f in findings) + "\n")


def test_empty_properties_are_left_out() -> None:
    assert commands.command("warning", "msg", file="a.py", line=3, endLine=None, title="") == \
        "::warning file=a.py,line=3::msg"
    assert commands.command("notice", "100% done\r\n") == "::notice::100%25 done%0D%0A"


def test_commands_are_actions_toolkits_with_the_empty_properties_dropped() -> None:
    """The combination: the toolkit's escaping, our choice of properties."""
    with redirect_stdout(io.StringIO()) as printed:
        core.warning("50%: a\nb", title="x:y,z", file="a b.py", start_line=3, end_line=4, start_column=1,
                     end_column=2)
        core.warning("m", file="a.py", start_line=3)
    full, sparse = printed.getvalue().splitlines()
    assert commands.command("warning", "50%: a\nb", title="x:y,z", file="a b.py", line=3, endLine=4, col=1,
                            endColumn=2) == full == "::warning title=x%3Ay%2Cz,file=a b.py,line=3,endLine=4,col=1," \
        "endColumn=2::50%25: a%0Ab"
    assert sparse == "::warning title=,file=a.py,line=3,endLine=,col=,endColumn=::m"  # the toolkit's own: empty ones
    assert commands.command("warning", "m", file="a.py", line=3) == "::warning file=a.py,line=3::m"


def test_masks_and_groups_go_through_the_toolkit() -> None:
    with redirect_stdout(io.StringIO()) as printed:
        commands.mask(["ghs_one", "50%"])
        commands.log_group("details", "text quoting ::error::x")
    lines = printed.getvalue().splitlines()
    assert lines[:3] == ["::add-mask::ghs_one", "::add-mask::50%25", "::group::details"]
    token = lines[3].removeprefix("::stop-commands::")
    assert lines[4:] == ["text quoting ::error::x", f"::{token}::", "::endgroup::"]


def test_runner_keeps_ten_per_level_so_the_rest_are_counted() -> None:
    findings = [finding(n, "medium") for n in range(15)] + [finding(20, "high", trigger="x")]
    lines, left_out = commands.annotation_commands(findings, "en", cap=200)
    assert [line.split(" ", 1)[0] for line in lines].count("::warning") == 10
    assert sum(line.startswith("::error ") for line in lines) == 1 and left_out == 5
    lines, left_out = commands.annotation_commands(findings, "en", cap=3)
    assert len(lines) == 3 and left_out == 13


def test_long_messages_are_cut_to_what_the_runner_keeps() -> None:
    line = commands.annotation_command(finding(1, problem="p" * 9000), "en")
    data = line.split("::", 2)[2]
    assert len(data) <= 4096 and data.endswith("…")


def test_outputs_use_random_heredoc_delimiters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "output"
    path.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(path))
    commands.write_outputs({"verdict": "NEEDS WORK", "report-path": "/tmp/x y/report.json", "note": "two\nlines"})
    text = path.read_text()
    assert parse_outputs(text) == {"earlier": "1", "verdict": "NEEDS WORK", "report-path": "/tmp/x y/report.json",
                                   "note": "two\nlines"}
    delimiters = re.findall(r"<<(ghadelimiter_[0-9a-f-]{36})\n", text)
    assert len(set(delimiters)) == 3


def test_untrusted_log_text_cannot_issue_commands() -> None:
    assert commands.guarded("plain words") == "plain words"
    guarded = commands.guarded("branch ::set-output name=x::y and ##[error]no").splitlines()
    assert guarded[0].startswith("::stop-commands::") and guarded[-1] == f"::{guarded[0].split('::')[2]}::"
    assert len(guarded[0].split("::")[2]) == 32


def test_step_summary_room_and_append(tmp_path: Path) -> None:
    path = tmp_path / "summary"
    assert commands.step_summary_room(str(path), 100) == 100
    commands.append_step_summary(str(path), "## one")
    commands.append_step_summary(str(path), "two\n")
    assert path.read_text() == "## one\ntwo\n"
    assert commands.step_summary_room(str(path), 100) == 100 - len("## one\ntwo\n")
    assert commands.step_summary_room(None, 100) == 0
