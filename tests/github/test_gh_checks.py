"""Check-run payloads: snapshots, severity levels, anchoring, limits and batches of 50."""
from __future__ import annotations

import json

import pytest
from fake_github import FakeGitHub
from gh_fixtures import fake, report, reviewed, upstream  # noqa: F401 - pytest fixtures
from gh_support import finding, sample_report, snapshot

from pr_review.github import checks
from pr_review.github.client import GitHubClient
from pr_review.github.summary import CHECK_SUMMARY_LIMIT, Publication, render_summary
from pr_review.model import Report


def client(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient(fake.url, "write-token", fake.owner, fake.repo, sleep=lambda s: None)


def publish(fake: FakeGitHub, report: Report, language: str = "en", cap: int = 200) -> checks.Posted:
    annotated, rest = checks.split_by_cap(report.findings, cap)
    publication = Publication(check_name="PR review (advisory)", annotation_cap=cap, unannotated=rest)
    return checks.post(client(fake), name="PR review (advisory)", head_sha=report.head_sha, run_id=None,
                       output_title=checks.title(report, language),
                       summary=render_summary(report, publication, language, limit=CHECK_SUMMARY_LIMIT),
                       report=report, already_annotated=frozenset(),
                       annotations=[(f.fingerprint, checks.annotation(f, language)) for f in annotated],
                       external_id="pr-review:7")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_check_run_payload_snapshot(fake: FakeGitHub, language: str) -> None:
    publish(fake, sample_report(), language)
    [request] = fake.requests("POST")
    assert request.status == 201
    body = dict(request.body)
    summary = body["output"].pop("summary")
    snapshot(f"check_run_create.{language}.json", json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    snapshot(f"check_run_summary.{language}.md", summary)


def test_levels_anchors_and_limits() -> None:
    high = finding(1, "high", trigger="M=1")
    low = finding(2, "low")
    whole_file = finding(3, line=None)
    outside = finding(4, anchor="file")
    backwards = finding(5, end_line=2)
    long_title = finding(6, title="T" * 400)
    got = [checks.annotation(f, "en") for f in (high, low, whole_file, outside, backwards, long_title)]
    assert [a["annotation_level"] for a in got[:3]] == ["failure", "notice", "warning"]
    assert (got[2]["start_line"], got[2]["end_line"]) == (1, 1)
    assert got[2]["message"].endswith("Anchored to line 1: the finding has no line of its own in the head commit.")
    assert got[3]["message"].endswith("This line is outside the PR's changes.")
    assert (got[4]["start_line"], got[4]["end_line"]) == (6, 6)
    assert len(got[5]["title"]) == 255 and got[5]["title"].endswith("…")
    assert "Triggered by: M=1" in got[0]["message"]
    assert all(set(a) == {"path", "start_line", "end_line", "annotation_level", "title", "message"} for a in got)


def test_more_than_fifty_annotations_go_in_batches(fake: FakeGitHub, report: Report) -> None:
    report.findings = [finding(n) for n in range(120)]
    posted = publish(fake, report)
    requests = [r for r in fake.log if r.method in ("POST", "PATCH")]
    assert [(r.method, len(r.body["output"]["annotations"])) for r in requests] == [
        ("POST", 50), ("PATCH", 50), ("PATCH", 20)]
    assert all(r.status in (200, 201) for r in requests)
    assert all(r.body["output"]["title"] and r.body["output"]["summary"] for r in requests)
    # each request records what GitHub has taken so far, no more
    assert [len(checks.read_state(r.body)[1]) for r in requests] == [50, 100, 120]
    [run] = fake.check_runs.values()
    assert posted == checks.Posted(run["html_url"]) and len(fake.annotations[run["id"]]) == 120
    assert run["conclusion"] == "neutral"


def test_state_round_trips_and_marks_new(report: Report) -> None:
    run = {"output": {"text": checks.state_text(report, [report.findings[0].fingerprint])}}
    findings, annotated = checks.read_state(run)
    assert findings == {f.fingerprint for f in report.findings} and annotated == {report.findings[0].fingerprint}
    previous = checks.PreviousReview(1, "b" * 40, frozenset(list(findings)[:0]) | {report.findings[0].fingerprint,
                                                                                      "gone0000000000ff"}, annotated)
    assert checks.mark_new(report.findings, previous) == (len(report.findings) - 1, 1)
    assert [f.new for f in report.findings] == [False] + [True] * (len(report.findings) - 1)
    assert checks.read_state({"output": {"text": "hand-written"}}) is None
    assert checks.read_state({"output": {"text": "<!-- pr-review:state {broken} -->"}}) is None


def test_state_text_stays_under_the_limit(report: Report) -> None:
    report.findings = [finding(n) for n in range(5000)]
    text = checks.state_text(report, [f.fingerprint for f in report.findings])
    assert len(text) <= 65535 and checks.read_state({"output": {"text": text}})[0]


def test_the_server_rejects_what_github_rejects(fake: FakeGitHub, report: Report) -> None:
    """The strictness the payload tests rely on."""
    api = client(fake)
    sha = report.head_sha
    base = {"name": "x", "head_sha": sha}
    bad = [
        {"name": "x"},  # no head_sha
        {**base, "status": "completed"},  # no conclusion
        {**base, "conclusion": "stale"},
        {**base, "output": {"title": "t"}},  # no summary
        {**base, "output": {"title": "t", "summary": "s" * 65536}},
        {**base, "output": {"title": "t", "summary": "s", "text": "s" * 65536}},
        {**base, "output": {"title": "t", "summary": "s", "annotations": [checks.annotation(finding(1), "en")] * 51}},
    ]
    one = checks.annotation(finding(1), "en")
    for broken in ({"annotation_level": "error"}, {"start_line": 5, "end_line": 4}, {"title": "t" * 256},
                   {"start_column": 1, "end_column": 2, "end_line": 9}, {"path": "./a.py"}, {"severity": "x"}):
        bad.append({**base, "output": {"title": "t", "summary": "s", "annotations": [{**one, **broken}]}})
    for body in bad:
        with pytest.raises(Exception) as caught:
            api.create_check_run(body)
        assert getattr(caught.value, "status", None) == 422, body
    fake.known_sha = lambda s: False
    with pytest.raises(Exception, match="No commit found"):
        api.create_check_run(base)
    assert fake.check_runs == {}
