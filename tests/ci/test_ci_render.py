"""The CI table and owner sign-off in every text format: escaped, linked, mentions only when asked."""
from __future__ import annotations

import json

import ci_support  # noqa: F401 - puts tests/github on the path
import pytest
from gh_support import sample_report

from pr_review.model import CIVerdict, Owner
from pr_review.report.render import render_json, render_markdown, render_text


def report(notify: bool):
    r = sample_report()
    r.ci = [CIVerdict("test (3.12) | <b>", "failure", "pr", "main passes it in 2 of 2 run(s)",
                      "https://github.test/acme/kernels/actions/runs/1/job/2", workflow="CI",
                      links=["https://github.test/acme/kernels/actions/runs/3/job/4 (x)"],
                      excerpt="```\nE   AssertionError @aiter-team\n</details>"),
            CIVerdict("docs/readthedocs.org:aiter", "failure", "infra", "docs build on a code-only PR",
                      "javascript:alert(1)")]
    r.ci_notes = ["Stopped at the request budget (150 requests) while reading the failed jobs' logs."]
    r.owners = [Owner("aiter/fused_moe.py", 2, "Alice Chen", "alice-c", 3, 9, True, notify)]
    return r


@pytest.mark.parametrize("language", ["en", "zh"])
def test_markdown_table_is_escaped_and_linked(language: str) -> None:
    text = render_markdown(report(False), language)
    assert "[test \\(3.12\\) \\| &lt;b&gt;](https://github.test/acme/kernels/actions/runs/1/job/2)" in text
    assert "(https://github.test/acme/kernels/actions/runs/3/job/4%20%28x%29)" in text  # a target cannot break out
    assert "javascript:" not in text and "](#)" in text
    assert "````\n```\nE   AssertionError @aiter-team\n</details>\n````" in text  # the excerpt stays a code block
    assert "request budget" in text and "Alice Chen" in text and "@alice-c" not in text


@pytest.mark.parametrize("language", ["en", "zh"])
def test_owners_are_mentioned_only_when_asked(language: str) -> None:
    assert "@alice-c" in render_markdown(report(True), language)


def test_text_and_json_carry_the_same_rows() -> None:
    text = render_text(report(False))
    assert "[pr      ] test (3.12) | <b> (CI, failure) — main passes it in 2 of 2 run(s)" in text
    assert "      | E   AssertionError @aiter-team" in text and "Owner sign-off: aiter/fused_moe.py" in text
    data = json.loads(render_json(report(False)))
    assert data["ci"][0]["links"] and data["ci"][0]["excerpt"] and data["owners"][0]["login"] == "alice-c"
    assert data["ci_notes"] == report(False).ci_notes
