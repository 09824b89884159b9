"""What the reports and the CLI write (issue 9, classes 1 and 6): PR-controlled text never becomes
a workflow command in an Actions log, and never reaches a terminal or a summary as a control
character or escape sequence (OSC 52 clipboard writes, screen clears, bidi overrides)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pr_review.catalog import load_catalog
from pr_review.github.summary import Publication, render_summary
from pr_review.model import NotChecked, PRInfo
from pr_review.pipeline import ReviewRequest, review
from pr_review.report.context import write_context
from pr_review.report.render import render_json, render_markdown, render_text
from pr_review.report.sarif import render_sarif

from conftest import make_repo

# Every way this text could command the runner or a terminal: workflow commands at the start of a
# line after a newline, a lone CR (the runner splits lines on it) and a Unicode line separator,
# the legacy `##[command]` form the runner finds anywhere in a line, OSC 52, a screen clear, an
# 8-bit CSI, bidi overrides, and a BEL.
HOSTILE = ("::error file=a.py::from the PR\n::stop-commands::tok\r  ::warning::after CR\u2028::notice::ls "
           "see ##[error]legacy \x1b]52;c;cHduZWQ=\x07 \x1b[2J\x1bc \x9b31m \u202eevil\u2066 \x00\x7f")
HOSTILE_PATH = "::error::x.py"

# C0 but tab and newline, DEL, C1, bidi embeddings/overrides/isolates and marks, line/paragraph separators.
UNSAFE_CHAR = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
OUR_COLOR = re.compile(r"\x1b\[[0-9;]*m")

AITER = {"aiter/jit/core.py": "import os\n"}
FLAGGED = "import sys\nsys.path.append('/x')\n"


def runner_commands(text: str) -> list[str]:
    """The lines of `text` the Actions runner would take as workflow commands: it reads lines split
    at LF, CR or CRLF, trims leading whitespace and looks for `::`, and finds `##[` anywhere."""
    return [line for line in re.split(r"\r\n|\r|\n", text)
            if line.lstrip().startswith("::") or "##[" in line]


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    """A real review, then PR-controlled text put into every field a PR can reach."""
    repo = make_repo(tmp_path_factory.mktemp("hostile") / "repo", AITER,
                     {"aiter/ops/sp.py": FLAGGED, "data/blob.bin": b"\x00\x01"})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None,
                                  pr=PRInfo(title=HOSTILE, body=HOSTILE, author=HOSTILE, labels=[HOSTILE])))
    # a preview rule's finding is shown like any other here: every renderer gets one to quote
    report.findings, report.preview_findings = report.all_findings, []
    assert report.findings, "the review should report the sys.path mutation"
    for finding in report.findings:
        finding.path = HOSTILE_PATH
        finding.problem = finding.trigger = HOSTILE
        finding.notes = [HOSTILE]
    report.not_checked = [NotChecked(HOSTILE_PATH, HOSTILE), NotChecked(" \t" + HOSTILE_PATH, "binary file")]
    report.notes = [HOSTILE]
    report.summary = [HOSTILE, f"`{HOSTILE}`"]
    report.runtime_reason = report.stale = HOSTILE
    for item in report.checklist:
        item.reason, item.derived_by = HOSTILE, [HOSTILE]
    report.evidence = {"guards": [HOSTILE]}
    return report


def _outputs(report) -> dict[str, str]:
    catalog = load_catalog()
    return {
        "text": render_text(report),
        "text-color": render_text(report, color=True),
        "markdown-en": render_markdown(report, "en"),
        "markdown-zh": render_markdown(report, "zh"),
        "json": render_json(report),
        "sarif": render_sarif(report, catalog),
        "job-summary": render_summary(report, Publication(check_name=HOSTILE, annotation_cap=0,
                                                          unannotated=list(report.findings)),
                                      "en", limit=1 << 20, where="job"),
    }


@pytest.mark.parametrize("fmt", ["text", "text-color", "markdown-en", "markdown-zh", "json", "sarif", "job-summary"])
def test_no_report_line_is_a_workflow_command(hostile_report, fmt):
    output = _outputs(hostile_report)[fmt]
    assert "from the PR" in output  # the hostile text is shown, not dropped
    assert runner_commands(output) == []


@pytest.mark.parametrize("fmt", ["text", "text-color", "markdown-en", "markdown-zh", "json", "sarif", "job-summary"])
def test_no_control_character_reaches_a_terminal_or_summary(hostile_report, fmt):
    output = _outputs(hostile_report)[fmt]
    if fmt == "text-color":
        assert OUR_COLOR.search(output)  # our own colours stay
        output = OUR_COLOR.sub("", output)
    assert UNSAFE_CHAR.findall(output) == []


def test_json_and_sarif_keep_the_exact_text(hostile_report):
    """The escaping is JSON's own: a consumer decodes exactly what the PR contained."""
    data = json.loads(render_json(hostile_report))
    assert data["pr"]["title"] == HOSTILE
    sarif = json.loads(render_sarif(hostile_report, load_catalog()))
    assert HOSTILE in sarif["runs"][0]["results"][0]["message"]["text"]


def test_context_files_are_safe(hostile_report, tmp_path):
    for path in write_context(hostile_report, load_catalog(), tmp_path / "ctx"):
        text = path.read_text(encoding="utf-8")
        assert runner_commands(text) == [], path.name
        assert UNSAFE_CHAR.findall(text) == [], path.name


def test_safe_text_is_unchanged_text():
    """Ordinary reports are byte-for-byte what they were: only hostile lines change."""
    from pr_review.report.escape import command_safe, terminal_safe

    ordinary = "🔴 aiter/ops/a.py:3  title\n    note: `x::y` and a::b\tok\n  - [ ] item ## [x]\n"
    assert terminal_safe(ordinary) == ordinary
    assert command_safe(ordinary) == ordinary
    assert command_safe(command_safe(HOSTILE)) == command_safe(HOSTILE)


def _cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-W", "always", "-m", "pr_review", *args], capture_output=True,
                          text=True, encoding="utf-8", errors="surrogateescape", cwd=cwd, timeout=120)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_cli_stdout_and_stderr_carry_no_command(repo_factory, fmt):
    """End to end: PR file names that are workflow commands, listed as not checked and as findings."""
    repo = repo_factory(AITER, {HOSTILE_PATH: FLAGGED, "::warning::blob.bin": b"\x00\x01",
                                "##[error]x.py": FLAGGED, "esc\x1b]52;c;eA==\x07.py": FLAGGED})
    result = _cli("review", "--repo", str(repo), "--base", "main", "--head", "pr", "--format", fmt,
                  "--title", HOSTILE.replace("\x00", ""))  # argv cannot hold a NUL
    assert result.returncode == 0, result.stderr
    assert "blob.bin" in result.stdout
    assert runner_commands(result.stdout) == [] and runner_commands(result.stderr) == []
    assert UNSAFE_CHAR.findall(result.stdout + result.stderr) == []


def test_cli_error_messages_carry_no_command(tmp_path):
    """A usage error quotes what it was given: a ref name or a path can be anything."""
    repo = tmp_path / "::error::repo\n::warning::x"
    result = _cli("review", "--repo", str(repo))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1  # one line
    assert runner_commands(result.stderr) == []


def test_cli_streams_neutralise_warnings_and_tracebacks():
    """Whatever else reaches the CLI's streams (a library warning, a traceback of ours) is neutralised too."""
    code = ("import sys, warnings\n"
            "from pr_review import cli\n"
            "def hostile(argv):\n"
            "    print('ok\\n::error::printed')\n"
            "    sys.stdout.write('::warn')\n"
            "    sys.stdout.write('ing::split across writes\\n')\n"
            "    warnings.warn_explicit('w', UserWarning, '::error::file.py', 1)\n"
            "    raise ValueError('\\n::error::in a traceback')\n"
            "cli._main = hostile\n"
            "sys.exit(cli.main([]))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "printed" in result.stdout and "split across writes" in result.stdout
    assert "in a traceback" in result.stderr and "file.py" in result.stderr
    assert runner_commands(result.stdout) == [] and runner_commands(result.stderr) == []


def test_quoted_code_is_one_line_so_it_cannot_start_a_workflow_command():
    """C++ allows a line to start with `::` (a global name); a finding quotes PR code on one line, cut short."""
    from pr_review.lang import one_line

    quoted = one_line("end_sync<ngpus, true>(sg,\n::warning file=x::owned, rank)", 40)
    assert "\n" not in quoted and not quoted.startswith("::") and len(quoted) == 40 and quoted.endswith("…")
