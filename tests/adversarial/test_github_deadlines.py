"""Bounded work on GitHub (issue 9, class 7): every API call has an overall deadline, not a per-read
timeout, so an answer trickled one byte at a time ends at the deadline; and the whole action has a
time budget (input `time-budget`) after which it leaves what it has: the log line, the job summary,
report.json and the outputs.

The fake's trickles are short and stop by themselves; the deadlines here are a second or less."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))  # the fake GitHub and the action harness
from fake_github import FakeGitHub  # noqa: E402
from gh_action import Action, action, fixed_review, no_waiting, report_of  # noqa: E402,F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: E402,F401 - pytest fixtures

from pr_review.github import action_main  # noqa: E402
from pr_review.github import client as client_module  # noqa: E402
from pr_review.github.client import GitHubClient, GitHubError  # noqa: E402

SHA = "a" * 40
BRANCH = json.dumps({"name": "main", "commit": {"sha": SHA}}).encode()
TRICKLE = 0.1  # seconds between bytes: the whole answer takes len(BRANCH) * TRICKLE ≈ 6 s


def test_a_trickled_answer_ends_at_the_call_deadline(fake: FakeGitHub) -> None:
    fake.inject(200, path="/branches/", body=BRANCH, trickle=TRICKLE)
    client = GitHubClient(fake.url, "write-token", fake.owner, fake.repo, sleep=lambda s: None, call_deadline=0.5)
    with pytest.raises(GitHubError) as caught:
        client.branch("main")
    assert caught.value.unavailable and caught.value.status is None
    assert "no complete answer within 0.5 s" in str(caught.value)
    assert len(fake.log) == 1  # not retried: a second wait would only double the time lost
    with pytest.raises(GitHubError, match="GitHub was unavailable earlier"):
        client.pull(7)


def test_the_same_answer_in_time_is_read(fake: FakeGitHub) -> None:
    fake.inject(200, path="/branches/", body=BRANCH, trickle=0.001)
    client = GitHubClient(fake.url, "write-token", fake.owner, fake.repo, sleep=lambda s: None, call_deadline=5)
    assert client.branch("main")["commit"]["sha"] == SHA


def test_a_trickling_check_run_lookup_still_leaves_the_review(action: Action,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "CALL_DEADLINE_SECONDS", 0.5)
    action.fake.inject(200, method="GET", path="/check-runs", body=b'{"total_count": 0, "check_runs": []}',
                       trickle=TRICKLE)
    run = action()
    assert run.code == 0 and action.fake.check_runs == {}
    assert "GitHub did not answer when asked to read this commit's check runs" in run.stdout
    assert "no complete answer within 0.5 s" in run.stdout
    assert "No check run was posted" in run.summary
    assert report_of(run)["verdict"] == run.outputs["verdict"] != "ERROR"


def test_the_time_budget_ends_the_review_and_posts_what_it_has(action: Action,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # A review that would take 30 s; the budget is 6 s (4.8 s for the review, the rest for posting), wide
    # enough that resolving the PR and posting fit in it on a loaded machine.
    def slow_review(request):
        end = time.monotonic() + 30
        while time.monotonic() < end:
            time.sleep(0.05)
        raise AssertionError("the budget did not stop the review")

    monkeypatch.setattr(action_main, "review", slow_review)
    run = action(INPUT_TIME_BUDGET="0.1")
    assert run.code == 0 and run.outputs["verdict"] == "ERROR"
    assert "did not finish within the time budget of 0.1 minutes (input time-budget)" in run.stdout
    assert "time budget" in run.summary and "time budget" in report_of(run)["reason"]
    assert "AssertionError" not in run.stdout
    [check] = action.fake.check_runs.values()  # the PR shows it too
    assert (check["conclusion"], check["output"]["title"]) == ("neutral", "⏱ Review not finished (advisory)")
    assert "time budget" in check["output"]["summary"] and run.outputs["check-run-url"] == check["html_url"]

    fixed_review(action, monkeypatch)  # a review that finishes takes the run over and annotates in full
    finished = action()
    assert [check["id"]] == list(action.fake.check_runs) and finished.outputs["check-run-url"] == check["html_url"]
    assert check["output"]["title"] != "⏱ Review not finished (advisory)" and len(action.fake.annotations[check["id"]]) == 3


def test_no_call_outlasts_the_time_budget(fake: FakeGitHub) -> None:
    fake.branches["main"] = SHA
    now = [100.0]
    client = GitHubClient(fake.url, "write-token", fake.owner, fake.repo, sleep=lambda s: None,
                          clock=lambda: now[0], budget_ends=101.0)
    assert client.branch("main")["commit"]["sha"] == SHA  # one second left: the call is made
    fake.inject(429, path="/branches/", times=1, headers={"Retry-After": "5"}, message="secondary rate limit")
    now[0] = 100.5  # the retry GitHub asks for in 5 s would start past the budget: not made
    with pytest.raises(GitHubError, match="secondary rate limit"):
        client.branch("main")
    now[0], client.down = 101.0, None
    with pytest.raises(GitHubError, match="time budget is spent"):
        client.branch("main")
    assert [r.status for r in fake.log] == [200, 429]
