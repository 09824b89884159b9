"""The Chinese report is Chinese: every catalog rule carries a zh title, impact and action, and the zh summary
shows them where the English one shows the catalog's text."""
from __future__ import annotations

import re

import pytest

from pr_review.catalog import load_catalog
from pr_review.demo import build_demo_repo
from pr_review.model import PRInfo, replace
from pr_review.pipeline import ReviewRequest, review
from pr_review.report.escape import markdown_inline
from pr_review.report.render import prose, render_markdown

HAN = re.compile(r"[\u4e00-\u9fff]")
CODE_SPAN = re.compile(r"`[^`]+`")
CATALOG = load_catalog(validate_shipped=True)


@pytest.mark.parametrize("rule_id", sorted(CATALOG.rules))
def test_every_rule_is_translated(rule_id: str) -> None:
    rule = CATALOG.rules[rule_id]
    assert set(rule.zh) == {"title", "impact", "action"}, f"{rule.source}: add a zh: mapping (title, impact, action)"
    for key, english in (("title", rule.title), ("impact", rule.impact), ("action", rule.action)):
        chinese = rule.zh[key]
        assert HAN.search(chinese), f"{rule.source}: zh.{key} is not Chinese"
        # Code identifiers, env names and paths stay verbatim.
        assert all(span in chinese for span in CODE_SPAN.findall(english)), f"{rule.source}: zh.{key} lost code"


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory):
    repo = build_demo_repo(tmp_path_factory.mktemp("zh"))
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None,
                                  pr=PRInfo(title="[perf] Speed up per-token quant", body="Makes quant faster.")))
    # Preview rules' findings included: the stage decides what is annotated, not the language it is shown in.
    return replace(report, findings=report.all_findings)


def test_the_zh_summary_shows_the_rules_in_chinese(demo_report) -> None:
    summary = render_markdown(demo_report, "zh")
    english = render_markdown(demo_report, "en")
    assert demo_report.findings
    for finding in demo_report.findings:
        rule = CATALOG.rules[finding.rule]
        # as the templates print them: titles through the `md` filter, impact and action through `prose`
        assert markdown_inline(rule.zh["title"]) in summary and markdown_inline(rule.title) in english
        assert f"**影响**: {prose(rule.zh['impact'])}" in summary
        assert f"**行动**: {prose(rule.zh['action'])}" in summary
    for item in demo_report.checklist:
        assert markdown_inline(CATALOG.rules[item.rule].zh["title"]) in summary


def test_zh_annotations_carry_the_rules_in_chinese(demo_report) -> None:
    """The annotations in *Files changed* speak the summary's language: zh title, impact and action."""
    from pr_review.github.checks import annotation_message, annotation_title

    for finding in demo_report.findings:
        zh = CATALOG.rules[finding.rule].zh
        assert annotation_title(finding, "zh").startswith(zh["title"][:40])
        assert annotation_title(finding, "en").startswith((finding.title or finding.rule)[:40])
        message = annotation_message(finding, "zh")
        assert zh["action"][:60] in message
