"""Faults while posting (issue 9, class 12): the previous head's check runs are read only to mark new
findings, so a 422 there must not stop the check run; an annotation batch GitHub did not take is not
recorded as posted, so the next run completes the set; and a run that exists is reported with its
URL even when a later batch failed."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))  # the fake GitHub and the action harness
from gh_action import Action, action, fixed_review, no_waiting, report_of  # noqa: E402,F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: E402,F401 - pytest fixtures

from pr_review.github.checks import read_state  # noqa: E402

MANY = 120  # three batches of annotations: 50 with the create, then 50 and 20


@pytest.fixture
def many_findings(action: Action, monkeypatch: pytest.MonkeyPatch) -> None:
    fixed_review(action, monkeypatch, MANY)


def test_a_422_on_the_previous_heads_runs_still_posts(action: Action) -> None:
    previous = action.upstream.base_sha
    action.event = action.pull_request("synchronize", before=previous)
    action.fake.inject(422, method="GET", path=f"/commits/{previous}/check-runs", message="No commit found")
    run = action()
    assert run.code == 0
    [check] = action.fake.check_runs.values()
    assert run.outputs["check-run-url"] == check["html_url"]
    assert "No check run was posted" not in run.summary and "::warning" not in run.stdout
    assert "could not be compared with the review of" in run.summary


def test_a_failed_batch_is_not_recorded_and_a_rerun_completes_the_set(action: Action, many_findings: None) -> None:
    action.fake.inject(502, method="PATCH", times=3, message="Bad Gateway")  # the second batch, all attempts
    first = action()
    [check] = action.fake.check_runs.values()
    assert len(action.fake.annotations[check["id"]]) == 50
    assert first.outputs["check-run-url"] == check["html_url"]  # the run exists: say where
    assert "70 annotation(s) could not be posted" in first.summary
    assert len(read_state(check)[1]) == 50  # only what GitHub took counts as annotated

    second = action()
    assert second.outputs["check-run-url"] == check["html_url"] and len(action.fake.check_runs) == 1
    annotated = action.fake.annotations[check["id"]]
    assert len(annotated) == MANY
    assert len({(a["path"], a["start_line"]) for a in annotated}) == MANY  # none twice
    assert report_of(second)["verdict"] == second.outputs["verdict"]
    assert "could not be posted" not in second.summary
