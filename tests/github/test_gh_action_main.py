"""action_main in-process: inputs, events, the check run, re-runs, fallbacks, outputs and files."""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import fake_github
import pytest
from gh_action import Action, action, no_waiting, on_files, report_of  # noqa: F401 - pytest fixtures
from gh_fixtures import fake, upstream  # noqa: F401 - pytest fixtures
from gh_upstream import REVIEW_CONFIG

from pr_review.github import action_main
from pr_review.github import client as client_module


def test_pull_request_posts_one_neutral_check_run(action: Action) -> None:
    run = action()
    assert run.code == 0
    [check] = action.fake.check_runs.values()
    assert check["head_sha"] == action.upstream.pr_head  # the PR head, not the merge commit
    assert (check["status"], check["conclusion"]) == ("completed", "neutral")
    report = report_of(run)
    counts = report["counts"]
    assert check["output"]["title"] == (f"🔴 BLOCK (advisory) · 🔴 {counts['high']} · ⚠️ {counts['medium']} · "
                                        f"📝 {counts['low']}")
    assert check["external_id"] == "pr-review:7"
    annotated = action.fake.annotations[check["id"]]
    assert [(a["path"], a["start_line"]) for a in annotated] == [(f["path"], f["line"] or 1) for f in on_files(run)]
    assert run.outputs["verdict"] == "BLOCK" == report["verdict"]
    assert [run.outputs[s] for s in ("high", "medium", "low")] == [str(counts[s]) for s in ("high", "medium", "low")]
    assert run.outputs["check-run-url"] == check["html_url"]
    assert json.loads(Path(run.outputs["sarif-path"]).read_text())["version"] == "2.1.0"
    assert report["base_ref"] == "main" and report["pr"]["number"] == 7
    assert f"Posted as the check run [PR review \\(advisory\\)]({check['html_url']})" in run.summary
    assert "pr-review: 🔴 BLOCK (advisory)" in run.stdout and "::warning" not in run.stdout
    assert fake_github.gk_models is None or action.fake.validated_with_githubkit >= 1


def test_rerun_updates_the_same_run_without_duplicate_annotations(action: Action) -> None:
    action()
    run = action()
    assert run.code == 0
    [check] = action.fake.check_runs.values()
    assert len(action.fake.annotations[check["id"]]) == len(on_files(run))
    ours = [r.method for r in action.fake.requests(path="/check-runs") if r.method != "GET" or "check_name" in r.query]
    assert ours == ["GET", "POST", "GET", "PATCH"]  # the CI stage's listing of other apps' checks aside
    assert "No finding is new since the review of" in check["output"]["summary"]
    assert "🆕" not in check["output"]["summary"]
    assert all(f["new"] is False for f in json.loads(Path(run.outputs["report-path"]).read_text())["findings"])


def test_findings_new_since_the_review_before_a_push(action: Action) -> None:
    first = action()
    fingerprints = [f["fingerprint"] for f in json.loads(Path(first.outputs["report-path"]).read_text())["findings"]]
    # Pretend the previous head was reviewed with only the first two findings.
    old = action.fake.check_runs.pop(next(iter(action.fake.check_runs)))
    previous_head = action.upstream.base_sha
    old.update(head_sha=previous_head, output={**old["output"], "text": "<!-- pr-review:state " + json.dumps(
        {"v": 1, "head": previous_head, "findings": fingerprints[:2], "annotated": fingerprints[:2]}) + " -->"})
    action.fake.check_runs[old["id"]] = old
    action.event = action.pull_request("synchronize", before=previous_head)
    run = action()
    new = [f["new"] for f in report_of(run)["findings"]]
    fresh = len(new) - 2
    assert new == [False, False] + [True] * fresh and fresh > 0
    created = [c for c in action.fake.check_runs.values() if c["head_sha"] == action.upstream.pr_head]
    assert len(created) == 1  # a new run on the new head, annotated in full
    assert len(action.fake.annotations[created[0]["id"]]) == len(on_files(run))
    assert f"{fresh} finding(s) marked 🆕 are new since the review of" in created[0]["output"]["summary"]
    assert created[0]["output"]["summary"].count("🆕") == fresh + 1  # the findings and the explanation


def test_annotation_cap_lists_the_rest(action: Action) -> None:
    run = action(INPUT_MAX_ANNOTATIONS="2")
    [check] = action.fake.check_runs.values()
    assert len(action.fake.annotations[check["id"]]) == 2
    summary = check["output"]["summary"]
    assert "Annotations stop at 2 (input `max-annotations`)" in summary
    assert summary.split("### Findings without an annotation")[1].count("\n- ") == len(on_files(run)) - 2
    assert run.code == 0


def test_config_input_names_the_repository_config(action: Action) -> None:
    default = {f["rule"] for f in report_of(action())["findings"]}
    configured = {f["rule"] for f in report_of(action(INPUT_CONFIG=REVIEW_CONFIG))["findings"]}
    assert default - configured == {"syspath-mutation"}  # the rule that config disables


def test_zh_summary_and_title(action: Action) -> None:
    action(INPUT_LANGUAGE="zh")
    [check] = action.fake.check_runs.values()
    assert check["output"]["title"].startswith("🔴 BLOCK（建议性） · 🔴 1 · ⚠️ ")
    assert "## 2. Review 意见" in check["output"]["summary"]
    assert "行动:" in action.fake.annotations[check["id"]][0]["message"]


def test_fork_pr_with_a_read_only_token_falls_back(action: Action) -> None:
    action.event = action.pull_request(fork=True)
    run = action(INPUT_GITHUB_TOKEN="read-token")
    assert run.code == 0 and action.fake.check_runs == {}
    assert "this is a fork PR, and GitHub gives fork PRs a read-only token" in run.stdout
    commands = [line for line in run.stdout.splitlines() if re.match(r"::(error|warning|notice) ", line)]
    assert len(commands) == len(report_of(run)["findings"])  # description findings become job-level annotations
    assert commands[0].startswith("::error file=aiter/configs/tuned_gemm.csv,line=3,title=")
    assert run.outputs["check-run-url"] == "" and run.outputs["verdict"] == "BLOCK"
    assert "No check run was posted" in run.summary and "## 🔴 BLOCK" in run.summary
    assert Path(run.outputs["report-path"]).exists()


def test_github_down_still_leaves_the_review(action: Action) -> None:
    action.fake.inject(502, message="Bad Gateway")
    run = action()
    assert run.code == 0
    assert "GitHub did not answer when asked to read this commit's check runs" in run.stdout
    assert "Bad Gateway" in run.stdout
    assert "## 🔴 BLOCK" in run.summary and Path(run.outputs["report-path"]).exists()
    assert {r.status for r in action.fake.log} == {502} and len(action.fake.log) == 3  # one call, bounded retries


def test_secondary_rate_limit_then_success(action: Action, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    monkeypatch.setattr(action_main, "GitHubClient", functools.partial(client_module.GitHubClient, sleep=waits.append))
    action.fake.inject(403, method="POST", times=1, headers={"Retry-After": "2"},
                       message="You have exceeded a secondary rate limit")
    run = action()
    assert run.code == 0 and len(action.fake.check_runs) == 1 and 2.0 in waits


@pytest.mark.parametrize("name,value,message", [
    ("INPUT_MAX_ANNOTATIONS", "lots", "input max-annotations: 'lots' is not a whole number"),
    ("INPUT_MAX_ANNOTATIONS", "-1", "input max-annotations"),
    ("INPUT_LANGUAGE", "fr", "input language: 'fr' is not one of en, zh"),
    ("INPUT_PROFILE", "nope", "input profile: 'nope' is not one of aiter, atom, generic, vllm"),
    ("INPUT_PR_NUMBER", "#12", "input pr-number: '#12' is not a pull-request number"),
    ("INPUT_CONFIG", "../outside.yml", "input config: '../outside.yml' must be a path inside the repository"),
])
def test_misconfigured_inputs_fail_fast(action: Action, name: str, value: str, message: str) -> None:
    run = action(**{name: value})
    assert run.code == 1
    assert run.stdout.startswith("::error title=pr-review%3A misconfigured input::") and message in run.stdout
    assert action.fake.log == []


def test_workflow_dispatch_without_pr_number_fails_fast(action: Action) -> None:
    action.event_name, action.event = "workflow_dispatch", {"inputs": {}}
    run = action()
    assert run.code == 1 and "input pr-number: required on workflow_dispatch" in run.stdout


def test_token_is_masked_and_never_logged(action: Action) -> None:
    action.fake.tokens["ghs_S3CRETtoken"] = "read"
    run = action(INPUT_GITHUB_TOKEN="ghs_S3CRETtoken")
    masks = [line for line in run.stdout.splitlines() if line.startswith("::add-mask::")]
    assert "::add-mask::ghs_S3CRETtoken" in masks and run.stdout.startswith("\n".join(masks))
    assert run.stdout.count("ghs_S3CRETtoken") == 1
    written = [p for p in action.tmp.rglob("*") if p.is_file() and ".git" not in p.parts]
    assert not any("ghs_S3CRETtoken" in p.read_text(errors="replace") for p in written)


def test_unsupported_event_is_skipped_quietly(action: Action) -> None:
    action.event_name, action.event = "push", {"ref": "refs/heads/main"}
    run = action()
    assert run.code == 0 and run.outputs["verdict"] == "SKIPPED"
    assert "\n::notice title=PR review not run::the 'push' event" in run.stdout
    assert json.loads(Path(run.outputs["report-path"]).read_text())["verdict"] == "SKIPPED"
    assert "PR review not run" in run.summary and action.fake.log == []


def test_user_error_gives_an_advisory_report(action: Action) -> None:
    action.event_name, action.event = "workflow_dispatch", {"inputs": {"pr-number": "99"}}
    run = action(INPUT_PR_NUMBER="99")
    assert run.code == 0 and run.outputs["verdict"] == "ERROR"
    assert "pull request #99 does not exist in acme/kernels" in run.stdout
    assert json.loads(Path(run.outputs["report-path"]).read_text())["reason"].startswith("pull request #99")


def test_internal_error_never_fails_the_job(action: Action, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(request):
        raise RuntimeError("detector exploded on ::error::x.py")

    monkeypatch.setattr(action_main, "review", broken)
    run = action()
    assert run.code == 0 and run.outputs["verdict"] == "ERROR"
    assert "RuntimeError: detector exploded" in run.stdout and "Traceback" in run.stdout
    lines = run.stdout.splitlines()
    start = lines.index("::group::pr-review internal error")  # a real group, folded in the log
    assert lines[start + 1].startswith("::stop-commands::")  # the traceback cannot issue workflow commands
    assert lines[lines.index("::endgroup::") - 1] == f"::{lines[start + 1].split('::')[2]}::"
