"""CI classification end to end through action.yml's composite steps (run as the runner runs them,
tests/e2e/test_e2e_action.py's harness), against a real git repository and the fake GitHub:
the pull_request review posts the check run, the workflow_run after CI updates it with the CI table."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import ci_support  # noqa: F401 - puts tests/github on the path
from ci_support import hours_ago, log_text
from gh_fixtures import fake, upstream  # noqa: F401 - pytest fixtures

HARNESS = Path(__file__).resolve().parents[1] / "e2e" / "test_e2e_action.py"
SUMMARY_OUT = os.environ.get("PR_REVIEW_CI_E2E_SUMMARY")  # set to a path to keep the posted summary


def _harness():
    if "e2e_action_harness" not in sys.modules:
        spec = importlib.util.spec_from_file_location("e2e_action_harness", HARNESS)
        module = importlib.util.module_from_spec(spec)
        sys.modules["e2e_action_harness"] = module
        spec.loader.exec_module(module)
    return sys.modules["e2e_action_harness"]


def test_workflow_run_classifies_ci_through_the_composite_steps(upstream, fake, tmp_path: Path) -> None:
    e2e = _harness()
    gh_upstream = sys.modules["gh_upstream"]
    workspace = gh_upstream.checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    (tmp_path / "pr").mkdir()
    (tmp_path / "run").mkdir()
    own = fake.actions.add_run(head_sha=upstream.pr_head, workflow="PR review", path=".github/workflows/pr-review.yml",
                               created_at=hours_ago(0.5), status="in_progress")
    first = e2e.run_action(with_={}, token="write-token", event_name="pull_request",
                           event=e2e.pull_request_event(upstream), workspace=workspace, api_url=fake.url,
                           tmp=tmp_path / "pr", env={"GITHUB_RUN_ID": str(own["id"]), "GITHUB_WORKFLOW": "PR review"})
    [check] = fake.check_runs.values()
    assert first.outputs["ci-failures"] == "0" and json.loads(Path(first.outputs["report-path"]).read_text())["ci"] == []

    # CI finishes: a matrix leg fails with a log naming the PR's file (main passes it), a docs
    # build fails on this code-only PR, a wheel hand-off flakes, and an old job's log is gone.
    actions = fake.actions
    ci = actions.add_run(head_sha=upstream.pr_head, created_at=hours_ago(1))
    actions.add_job(ci, "test (3.12)", log=log_text("collected 12 items", "op_tests/test_quant.py::test_fp16 FAILED",
                                                    "aiter/ops/quant.py:9: in per_token_quant",
                                                    "E   AssertionError: scale dtype is float32, expected float16"))
    actions.add_job(ci, "test (3.11)", "success")
    actions.add_job(ci, "Aiter Test", log=log_text("::error::Expected exactly one Aiter wheel artifact, found 0"))
    actions.add_job(ci, "Build docs image", log=410)
    actions.add_status(upstream.pr_head, "docs/readthedocs.org:aiter", "failure", "Read the Docs build failed!")
    for hours, conclusion in ((4, "success"), (20, "success"), (30, "failure")):
        main = actions.add_run(head_sha=f"{hours:040x}", event="push", head_branch="main",
                               created_at=hours_ago(hours), conclusion=conclusion)
        actions.add_job(main, "test (3.12)", "success")
        actions.add_job(main, "Aiter Test", "success")
        actions.add_job(main, "Build docs image", conclusion)
    actions.add_job_check_run(upstream.pr_head, "PR review (advisory)")
    opened = e2e.pull_request_event(upstream)["pull_request"]  # the PR as the API gives it later: same text
    fake.add_pull(7, head_sha=upstream.pr_head, base_sha=upstream.base_sha, title=opened["title"], body=opened["body"])
    event = {"action": "completed", "workflow_run": {
        "id": ci["id"], "name": "CI", "head_sha": upstream.pr_head, "head_branch": "feature",
        "pull_requests": [{"number": 7, "head": {"sha": upstream.pr_head}}], "head_repository": {"owner": {"login": "acme"}}}}
    second = e2e.run_action(with_={"ci-window-hours": "48"}, token="write-token", event_name="workflow_run", event=event,
                            workspace=workspace, api_url=fake.url, tmp=tmp_path / "run")

    assert [r["id"] for r in fake.check_runs.values() if r["external_id"] == "pr-review:7"] == [check["id"]]
    report = json.loads(Path(second.outputs["report-path"]).read_text())
    classes = {v["name"]: v["classification"] for v in report["ci"]}
    assert classes == {"test (3.12)": "pr", "Aiter Test": "infra", "Build docs image": "stale",
                       "docs/readthedocs.org:aiter": "infra"}
    assert second.outputs["ci-failures"] == "1"
    posted = fake.check_runs[check["id"]]["output"]["summary"]
    assert "### CI failures" in posted and "scale dtype is float32" in posted and "rebase" in posted
    # the rule findings are as they were: the one new finding is the failure CI now shows, nothing is gone
    assert "1 finding(s) marked 🆕 are new since the review" in posted and "are gone" not in posted
    # the upstream opts into preview rules, so the failure caused by the PR is annotated at the file its log names
    [ci_annotation] = [a for a in fake.annotations[check["id"]] if a["path"] == "aiter/ops/quant.py" and a["start_line"] == 9]
    assert "scale dtype" in ci_annotation["message"] or "test (3.12)" in ci_annotation["message"]
    assert fake.actions.storage_requests_with_token == 0
    if SUMMARY_OUT:
        Path(SUMMARY_OUT).write_text(posted, encoding="utf-8")
