"""The CI classification through the action's entry point: pull_request lists what finished and what
is pending, workflow_run updates our check run in place (found by external_id, next to the Actions
job's own run of the same name), and a workflow_run with no open PR posts nothing."""
from __future__ import annotations

import ci_support  # noqa: F401 - puts tests/github on the path
from ci_support import hours_ago, log_text
from gh_action import Action, action, no_waiting, report_of  # noqa: F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: F401 - pytest fixtures

CHECK_NAME = "PR review (advisory)"


def failing_ci(action: Action, *, status: str = "completed") -> dict:
    """The PR head's CI run: `test (3.12)` fails with a log naming the changed file, main passes it."""
    actions = action.fake.actions
    run = actions.add_run(head_sha=action.upstream.pr_head, created_at=hours_ago(1), status=status)
    if status == "completed":
        actions.add_job(run, "test (3.12)", log=log_text("aiter/ops/quant.py:9: in per_token_quant",
                                                         "E   AssertionError: scale dtype"))
        actions.add_job(run, "lint", "success")
    else:
        actions.add_job(run, "test (3.12)", None, status="in_progress")
    main = actions.add_run(head_sha="c" * 40, event="push", head_branch="main", created_at=hours_ago(5),
                           conclusion="success")
    actions.add_job(main, "test (3.12)", "success")
    return run


def test_pull_request_classifies_what_finished(action: Action) -> None:
    failing_ci(action)
    job_run = action.fake.actions.add_job_check_run(action.upstream.pr_head, CHECK_NAME)
    result = action()
    report = report_of(result)
    [verdict] = report["ci"]
    assert (verdict["name"], verdict["classification"]) == ("test (3.12)", "pr")
    assert result.outputs["ci-failures"] == "1"
    ours = [r for r in action.fake.check_runs.values() if r["external_id"] == "pr-review:7"]
    assert len(ours) == 1 and ours[0]["id"] != job_run["id"]
    assert job_run["status"] == "in_progress"  # the job's own run is never touched
    assert not action.fake.requests("PATCH", f"/check-runs/{job_run['id']}")
    assert "### CI failures" in result.summary and "caused by this PR" in result.summary
    assert "E   AssertionError: scale dtype" in ours[0]["output"]["summary"]
    ci_findings = [f for f in report["findings"] + report["preview_findings"] if f["rule"] == "ci-failure-classification"]
    assert [(f["path"], f["line"]) for f in ci_findings] == [("aiter/ops/quant.py", 9)]


def test_pull_request_lists_unfinished_jobs_as_pending(action: Action) -> None:
    failing_ci(action, status="in_progress")
    result = action()
    assert [(v["name"], v["classification"]) for v in report_of(result)["ci"]] == [("test (3.12)", "pending")]
    assert result.outputs["ci-failures"] == "0"


def test_workflow_run_updates_the_pull_request_review_in_place(action: Action) -> None:
    first = action()  # the pull_request review, CI not started yet
    [ours] = action.fake.check_runs.values()
    annotations = list(action.fake.annotations[ours["id"]])
    findings_before = {f["fingerprint"] for f in report_of(first)["findings"]}
    run = failing_ci(action)
    action.fake.actions.add_job_check_run(action.upstream.pr_head, CHECK_NAME)
    # the same PR text the pull_request event carried: description rules decide from it
    action.fake.add_pull(7, head_sha=action.upstream.pr_head, base_sha=action.upstream.base_sha,
                         title="Speed up quant", body="Faster.")
    action.event_name = "workflow_run"
    action.event = {"action": "completed", "workflow_run": {
        "id": run["id"], "name": "CI", "head_sha": action.upstream.pr_head, "head_branch": "feature",
        "pull_requests": [{"number": 7, "head": {"sha": action.upstream.pr_head}}],
        "head_repository": {"owner": {"login": "acme"}}}}
    second = action()
    mine = [r for r in action.fake.check_runs.values() if r["external_id"] == "pr-review:7"]
    assert [r["id"] for r in mine] == [ours["id"]]  # the same run, updated
    assert not action.fake.requests("POST", "/check-runs")[1:]  # only the first review created one
    assert action.fake.annotations[ours["id"]][:len(annotations)] == annotations  # nothing re-annotated
    report = report_of(second)
    assert {f["fingerprint"] for f in report["findings"] if f["rule"] != "ci-failure-classification"} == findings_before
    assert second.outputs["ci-failures"] == "1"
    assert "caused by this PR" in mine[0]["output"]["summary"]


def test_workflow_run_of_a_commit_with_no_open_pr_posts_nothing(action: Action) -> None:
    action.event_name = "workflow_run"
    action.event = {"action": "completed", "workflow_run": {
        "id": 1, "name": "CI", "head_sha": "d" * 40, "head_branch": "main", "pull_requests": [],
        "head_repository": {"owner": {"login": "acme"}}}}
    result = action()
    assert not action.fake.requests("POST") and not action.fake.requests("PATCH")
    assert "belongs to no open pull request" in result.stdout
    assert result.outputs["verdict"] == "SKIPPED" and result.outputs["ci-failures"] == "0"


def test_ci_inputs_are_checked(action: Action) -> None:
    for name, value, message in (("INPUT_CI_WINDOW_HOURS", "two days", "input ci-window-hours"),
                                 ("INPUT_WAIT_FOR_CI", "-5", "input wait-for-ci"),
                                 ("INPUT_NOTIFY_OWNERS", "yes", "input notify-owners")):
        result = action(**{name: value})
        assert result.code == 1 and message in result.stdout


def test_ci_workflows_input_limits_the_classification(action: Action) -> None:
    failing_ci(action)
    result = action(INPUT_CI_WORKFLOWS="nightly.yml, Docs")
    assert report_of(result)["ci"] == [] and result.outputs["ci-failures"] == "0"


def test_a_rerun_finds_our_run_by_external_id_not_the_jobs_run_of_the_same_name(action: Action) -> None:
    action()
    [ours] = action.fake.check_runs.values()
    job_run = action.fake.actions.add_job_check_run(action.upstream.pr_head, CHECK_NAME)  # newer, same name
    result = action()
    assert result.outputs["check-run-url"] == ours["html_url"]
    assert [r.path for r in action.fake.requests("PATCH")] == [f"/repos/acme/kernels/check-runs/{ours['id']}"]
    assert job_run["status"] == "in_progress" and len(action.fake.check_runs) == 2
