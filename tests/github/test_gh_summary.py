"""What users read: the summary within GitHub's limits, and PR-controlled text escaped everywhere."""
from __future__ import annotations

import re

import pytest
from gh_fixtures import report, reviewed, upstream  # noqa: F401 - pytest fixtures
from gh_support import finding, snapshot

from pr_review.github import checks
from pr_review.github.commands import annotation_command
from pr_review.github.summary import CHECK_SUMMARY_LIMIT, JOB_SUMMARY_LIMIT, Publication, render_summary
from pr_review.model import ChecklistItem, Report
from pr_review.report.render import render_markdown


def publication(report: Report, **extra) -> Publication:
    return Publication(check_name="PR review (advisory)", annotation_cap=200, **extra)


def oversized(report: Report) -> Report:
    report.findings = report.findings[:1] + [finding(n, "low" if n % 3 else "medium", impact=f"Callers of op {n} hit it.")
                                             for n in range(400)]  # each its own text: none folds into another
    report.checklist = [ChecklistItem(rule=f"rule-{n}", code=f"X{n}", title=f"Checklist item {n} " + "x" * 200,
                                      families=["f"], derived_by=[f"aiter/ops/op_{n}.py:1: code"]) for n in range(300)]
    return report


@pytest.mark.parametrize("language", ["en", "zh"])
def test_truncated_summary_fits_and_says_what_was_cut(report: Report, language: str) -> None:
    report = oversized(report)
    text = render_summary(report, publication(report), language, limit=CHECK_SUMMARY_LIMIT)
    assert len(text) <= CHECK_SUMMARY_LIMIT
    marker = text[text.rindex("\n---\n"):]
    snapshot(f"truncation_marker.{language}.md", marker)
    assert text.count("<details>") == text.count("</details>")  # cut by entries, so the Markdown stays whole
    head = "🔴 1 · ⚠️ 134 · 📝 266" if language == "en" else "| ⚠️ 建议修复 | 134 |"
    assert head in text  # counts describe the whole review, not the part that fits


def test_job_summary_is_measured_in_bytes(report: Report) -> None:
    report = oversized(report)
    limit = 40_000
    text = render_summary(report, publication(report), "zh", limit=limit, size=lambda s: len(s.encode()), where="job")
    assert len(text.encode()) <= limit < len(text.encode()) + 2000
    assert "字节的上限" in text and "job summary 以及" not in text
    whole = render_summary(report, publication(report), "en", limit=JOB_SUMMARY_LIMIT, where="job")
    assert "Shortened" not in whole


def test_a_skeleton_too_long_is_cut_at_a_line_end(report: Report) -> None:
    report.summary = [f"line {n} " + "y" * 80 for n in range(100)]
    text = render_summary(report, publication(report), "en", limit=2000)
    assert len(text) <= 2000
    assert text.endswith("The complete review is in this workflow run's job summary and in `report.json` "
                         "(action output `report-path`).\n")
    assert "the text is cut off above" in text


def test_fewer_findings_never_read_as_a_clean_review(report: Report) -> None:
    report = oversized(report)
    text = render_summary(report, publication(report), "en", limit=6000)
    assert "No finding from the detectors" not in text and len(text) <= 6000


# -- PR-controlled text ---------------------------------------------------------------------

HOSTILE_PATH = "aiter/ops/we%ird:na,me\nnext.py"


@pytest.fixture
def hostile(report: Report) -> Report:
    report.pr.title = "Fix </details><script>x</script> for @aiter-team ```"
    report.findings = [finding(1, "high", path=HOSTILE_PATH, trigger="`M=1`",
                               problem="Snippet:\n```python\nx = 1\n```\n@octocat look </details>")]
    return report


@pytest.mark.parametrize("language", ["en", "zh"])
def test_summary_escapes_pr_text(hostile: Report, language: str) -> None:
    text = render_summary(hostile, publication(hostile), language, limit=CHECK_SUMMARY_LIMIT)
    assert text.count("<details>") == text.count("</details>")
    assert "<script>" not in text and "&lt;/details&gt;&lt;script&gt;" in text
    assert "@aiter-team" not in text and "@\u200baiter-team" in text
    assert "@octocat" not in text
    assert not any(line.lstrip().startswith("```") for line in text.splitlines())  # no fence opened by PR text
    assert "aiter/ops/we%ird:na,me next.py" in text  # the newline cannot break the line


def test_annotations_carry_the_exact_path_and_plain_text(hostile: Report) -> None:
    annotation = checks.annotation(hostile.findings[0], "en")
    assert annotation["path"] == HOSTILE_PATH  # must match git's path to attach to the diff
    assert "```python\nx = 1\n```" in annotation["message"]  # plain text: shown verbatim, nothing rendered
    assert "\n" not in annotation["title"]
    hostile.findings[0].problem = "bell\x07 and nul\x00"
    assert checks.annotation(hostile.findings[0], "en")["message"].startswith("bell  and nul ")


def test_workflow_command_escapes_properties_and_data(hostile: Report) -> None:
    hostile.findings[0].title = "a: b, c"
    line = annotation_command(hostile.findings[0], "en")
    assert "\n" not in line and "\r" not in line
    assert line.startswith("::error file=aiter/ops/we%25ird%3Ana%2Cme%0Anext.py,line=2,title=a%3A b%2C c [verified]::")
    props, data = line[len("::error "):].split("::", 1)
    assert all(re.fullmatch(r"[a-zA-Z]+=[^,:]+", p) for p in props.split(","))
    assert data.startswith("Snippet:%0A```python%0Ax = 1%0A```%0A@octocat look </details>%0ATriggered by: `M=1`")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_one_rule_at_several_places_reads_as_one_finding(report: Report, language: str) -> None:
    """The same problem at four lines is one block with three 'also at' lines, not four copies of the same
    impact and action; a 🔴 finding of the rule stays apart, with its own trigger."""
    report.findings = [finding(n, impact="Callers hit it.") for n in (1, 2, 3)] + [
        finding(4, "high", trigger="`op_4(x)` with x of 2**31 elements")]
    text = render_markdown(report, language)
    also = "**Also at**" if language == "en" else "**同样见于**"
    assert text.count(also) == 2
    assert "aiter/ops/op_002.py" in text and "aiter/ops/op_003.py" in text
    assert "Problem number 3 in" in text  # each place keeps its own problem statement
    assert text.count("op_4(x)") == 1 and "aiter/ops/op_004.py" in text
    headers = [line for line in text.splitlines() if line.startswith("**") and ("op_00" in line)]
    assert len(headers) == 2, headers  # one block for the three, one for the 🔴
