"""Malformed answers and event payloads (issue 9, class 11): truncated JSON with 200, an HTML page, an
array where an object belongs, a non-numeric run id, a PR without `head`, and event files with wrong
types end as a GitHub failure: the review falls back to the job summary and workflow-command
annotations, or — when the PR itself cannot be read — an ERROR verdict with the reason. Never a
lost review, never a traceback."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "github"))  # the fake GitHub and the action harness
from gh_action import Action, Run, action, fixed_review, no_waiting, report_of  # noqa: E402,F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: E402,F401 - pytest fixtures

HTML = ("text/html; charset=utf-8", b"<!DOCTYPE html><html><body><h1>Unicorn!</h1></body></html>")
TRUNCATED = ("application/json", b'{"total_count": 1, "check_runs": [{"id": 12, "na')
ARRAY = ("application/json", b"[]")


def assert_no_traceback(run: Run) -> None:
    assert run.code == 0
    assert "Traceback" not in run.stdout and "internal error" not in run.stdout


def assert_fell_back(run: Run, doing: str) -> None:
    assert_no_traceback(run)
    assert f"GitHub could not {doing}" in run.stdout and "answer" in run.stdout
    assert re.search(r"^::(error|warning|notice) ", run.stdout, re.M)  # workflow-command annotations
    assert "No check run was posted" in run.summary and report_of(run)["verdict"] == run.outputs["verdict"]
    assert run.outputs["verdict"] not in ("ERROR", "")


@pytest.mark.parametrize("content_type,body", [HTML, TRUNCATED, ARRAY,
                                               ("application/json", b'{"check_runs": {"id": 1}}'),
                                               ("application/json", b'{"check_runs": [{"id": "12abc", '
                                                                     b'"name": "PR review (advisory)"}]}')],
                         ids=["html", "truncated", "array", "object", "run-id"])
def test_a_malformed_check_run_lookup_falls_back(action: Action, monkeypatch: pytest.MonkeyPatch,
                                                 content_type: str, body: bytes) -> None:
    fixed_review(action, monkeypatch)
    action.fake.inject(200, method="GET", path="/check-runs", body=body, content_type=content_type)
    assert_fell_back(action(), "read this commit's check runs")


@pytest.mark.parametrize("content_type,body", [HTML, ARRAY, ("application/json", b'{"id": "run-1"}')],
                         ids=["html", "array", "run-id"])
def test_a_malformed_answer_to_creating_the_run_falls_back(action: Action, monkeypatch: pytest.MonkeyPatch,
                                                          content_type: str, body: bytes) -> None:
    fixed_review(action, monkeypatch)
    action.fake.inject(201, method="POST", path="/check-runs", body=body, content_type=content_type)
    assert_fell_back(action(), "create the check run")


@pytest.mark.parametrize("pull", [
    HTML, TRUNCATED, ARRAY,
    ("application/json", json.dumps({"number": 7, "base": {"sha": "1" * 40, "ref": "main"}}).encode()),
    ("application/json", json.dumps({"number": 7, "head": {"sha": 7}, "base": {"sha": "1" * 40,
                                                                          "ref": "main"}}).encode()),
], ids=["html", "truncated", "array", "no-head", "numeric-sha"])
def test_a_malformed_pull_request_is_an_error_verdict(action: Action, pull: tuple[str, bytes]) -> None:
    action.fake.inject(200, method="GET", path="/pulls/7", body=pull[1], content_type=pull[0])
    action.event_name, action.event = "workflow_dispatch", {"inputs": {"pr-number": "7"}}
    run = action(INPUT_PR_NUMBER="7")
    assert_no_traceback(run)
    assert run.outputs["verdict"] == "ERROR"
    assert "GitHub could not read the pull request" in report_of(run)["reason"]
    assert "PR review not run" in run.summary


def _payload(action: Action, change) -> dict:
    payload = action.pull_request()
    change(payload)
    return payload


WRONG_TYPES = {
    "pull_request-list": lambda p: p.update(pull_request=[1, 2]),
    "number-list": lambda p: p["pull_request"].update(number=[7]),
    "title-list": lambda p: p["pull_request"].update(title=["Speed", "up"]),
    "labels-string": lambda p: p["pull_request"].update(labels="perf"),
    "label-number": lambda p: p["pull_request"].update(labels=[{"name": 5}]),
    "head-sha-number": lambda p: p["pull_request"]["head"].update(sha=12345),
    "head-sha-text": lambda p: p["pull_request"]["head"].update(sha="--upload-pack=touch /tmp/x"),
    "user-string": lambda p: p["pull_request"].update(user="dev"),
    "head-repo-string": lambda p: p["pull_request"]["head"].update(repo="someone/kernels"),
    "action-number": lambda p: p.update(action=3),
    "before-object": lambda p: p.update(action="synchronize", before={"sha": "x"}),
}


@pytest.mark.parametrize("change", WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_a_pull_request_event_with_wrong_types_is_an_error_verdict(action: Action, change) -> None:
    action.event = _payload(action, change)
    run = action()
    assert_no_traceback(run)
    assert run.outputs["verdict"] == "ERROR" and "event file" in report_of(run)["reason"]


@pytest.mark.parametrize("workflow_run", [[1], {"head_sha": "2" * 40, "pull_requests": ["7"]},
                                          {"head_sha": "2" * 40, "pull_requests": [{"number": "seven"}]},
                                          {"head_sha": "2" * 40, "head_repository": "x", "head_branch": "f"}],
                         ids=["list", "pr-string", "number-string", "repository-string"])
def test_a_workflow_run_event_with_wrong_types_is_an_error_verdict(action: Action, workflow_run) -> None:
    action.event_name, action.event = "workflow_run", {"action": "completed", "workflow_run": workflow_run}
    run = action()
    assert_no_traceback(run)
    assert run.outputs["verdict"] == "ERROR" and "event file" in report_of(run)["reason"]


def test_a_malformed_list_read_for_ci_classification_costs_that_list(action: Action) -> None:
    """CI classification reads the same check runs through the paged lists: a malformed page is noted
    there, the review and its publication go on."""
    action.fake.inject(200, method="GET", path="/check-runs", body=b'{"check_runs": {"id": 1}}',
                       content_type="application/json")
    run = action()
    assert_no_traceback(run)
    assert run.outputs["verdict"] not in ("ERROR", "") and "No check run was posted" in run.summary
