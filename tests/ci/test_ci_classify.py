"""CI classification against the fake GitHub: collect through the real client, classify, check the
class and the evidence of every scenario the issue names."""
from __future__ import annotations

from typing import Iterator

import pytest
from ci_support import HEAD, NOW, FakeGitHub, changed, hours_ago, log_text, push_run

from pr_review.ci import WAIT_STEPS_SECONDS, CIRequest, wait_for_runs
from pr_review.ci import collect as collect_module
from pr_review.ci.classify import classify
from pr_review.ci.collect import Selection, collect
from pr_review.github import client as client_module
from pr_review.github.client import GitHubClient
from pr_review.profiles import load_profiles

PROFILES = load_profiles()
CODE_PR = [changed("aiter/ops/quant.py"), changed("op_tests/test_quant.py")]


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "BACKOFF_SECONDS", (0.0, 0.0))


def client(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient(fake.url, "write-token", fake.owner, fake.repo, sleep=lambda s: None)


def classified(fake: FakeGitHub, files=CODE_PR, profile: str = "aiter", **options):
    data = collect(client(fake), HEAD, 7, default_branch="main", now=NOW, **options)
    return data, classify(data, files, PROFILES[profile], secrets=("write-token",))


def pr_run(fake: FakeGitHub, **extra):
    return fake.actions.add_run(head_sha=HEAD, created_at=hours_ago(1), **extra)


def test_a_job_main_also_fails_is_baseline(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test (3.12)", log=log_text("E   AssertionError: 1 != 2"))
    for hours in (3, 10, 20):
        push_run(fake, "test (3.12)", "failure", hours)
    push_run(fake, "test (3.12)", "success", 60)  # outside the ±48 h window: not compared
    data, result = classified(fake)
    [verdict] = result.verdicts
    assert verdict.classification == "baseline" and not result.findings
    assert "main fails the same job too: 3 of 3 run(s) in the ±48 h window" in verdict.evidence
    assert len(verdict.links) == 3 and all("/actions/runs/" in link for link in verdict.links)
    assert not data.partial


def test_a_job_main_passes_is_the_prs_with_the_log_naming_the_changed_file(fake: FakeGitHub) -> None:
    log = log_text("Run pytest op_tests", "\x1b[31mcollected 3 items\x1b[0m", *[f"line {n}" for n in range(30)],
                   "op_tests/test_quant.py::test_scale FAILED",
                   "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123 and write-token",
                   "aiter/ops/quant.py:12: in per_token_quant", "E   AssertionError: scale dtype",
                   *[f"tail {n}" for n in range(40)], "##[error]Process completed with exit code 1.")
    fake.actions.add_job(pr_run(fake), "test (3.12)", log=log)
    push_run(fake, "test (3.12)", "success", 5)
    push_run(fake, "test (3.12)", "success", 30)
    data, result = classified(fake)
    [verdict] = result.verdicts
    assert verdict.classification == "pr"
    assert "main passes the same job in 2 of 2 run(s)" in verdict.evidence
    # The first error with context, colour codes gone, tokens blanked, bounded.
    assert "op_tests/test_quant.py::test_scale FAILED" in verdict.excerpt
    assert "ghp_" not in verdict.excerpt and "write-token" not in verdict.excerpt and "\x1b" not in verdict.excerpt
    assert "line 10" in verdict.excerpt and "line 9\n" not in verdict.excerpt  # 20 lines before the error
    assert "tail 16" in verdict.excerpt and "tail 17" not in verdict.excerpt  # and 20 after
    [finding] = result.findings
    assert (finding.rule, finding.path, finding.severity) == ("ci-failure-classification", "op_tests/test_quant.py", "medium")
    assert fake.actions.storage_requests_with_token == 0  # the redirect to log storage drops the token


def test_the_log_line_number_anchors_the_finding(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "lint", log=log_text("aiter/ops/quant.py:12:5: error: undefined name"))
    push_run(fake, "lint", "success", 2)
    _, result = classified(fake)
    assert (result.findings[0].path, result.findings[0].line) == ("aiter/ops/quant.py", 12)


def test_a_log_naming_no_changed_file_gives_a_pr_level_finding(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "build", log=log_text("error: linker failed in csrc/other.cu"))
    push_run(fake, "build", "success", 2)
    _, result = classified(fake)
    assert result.verdicts[0].classification == "pr" and result.findings[0].path == ""


def test_external_docs_check_failing_on_a_code_only_pr_is_infra(fake: FakeGitHub) -> None:
    fake.actions.add_status(HEAD, "docs/readthedocs.org:atom", "failure", "Read the Docs build failed!")
    fake.actions.add_check_run(HEAD, "Buildkite: lint", "success")
    _, result = classified(fake, profile="atom")
    [verdict] = result.verdicts
    assert verdict.classification == "infra" and verdict.workflow == ""
    assert "changes no documentation source" in verdict.evidence
    assert verdict.url == "https://readthedocs.test/builds/1"


def test_a_docs_check_failing_on_a_docs_pr_is_compared_with_main(fake: FakeGitHub) -> None:
    fake.actions.add_status(HEAD, "docs/readthedocs.org:atom", "failure", "Read the Docs build failed!")
    fake.actions.add_commit("main", "c" * 40)
    fake.actions.add_status("c" * 40, "docs/readthedocs.org:atom", "success")
    _, result = classified(fake, files=[changed("docs/index.rst")], profile="atom")
    assert result.verdicts[0].classification == "pr"
    assert "passes on 1 recent default-branch commit(s)" in result.verdicts[0].evidence


def test_logs_answering_410_are_stale(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test (3.12)", log=410)
    push_run(fake, "test (3.12)", "success", 5)
    _, result = classified(fake)
    [verdict] = result.verdicts
    assert verdict.classification == "stale" and "410" in verdict.evidence and "rebase" in verdict.evidence
    assert not result.findings


def test_a_run_older_than_retention_is_stale_without_asking_for_its_log(fake: FakeGitHub) -> None:
    run = fake.actions.add_run(head_sha=HEAD, created_at=hours_ago(24 * 100))
    fake.actions.add_job(run, "test", log=log_text("E   boom"))
    _, result = classified(fake)
    assert result.verdicts[0].classification == "stale" and "90-day" in result.verdicts[0].evidence
    assert not fake.requests("GET", "/logs")


def test_a_fork_branch_called_main_does_not_count(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test (3.12)", log=log_text("E   AssertionError"))
    fork = fake.actions.add_run(head_sha="f" * 40, event="pull_request", head_branch="main",
                                head_repo="someone/kernels", created_at=hours_ago(2))
    fake.actions.add_job(fork, "test (3.12)", "failure")
    fork_push = fake.actions.add_run(head_sha="e" * 40, event="push", head_branch="main",
                                     head_repo="someone/kernels", created_at=hours_ago(3))
    fake.actions.add_job(fork_push, "test (3.12)", "failure")
    _, result = classified(fake)
    assert result.verdicts[0].classification == "unknown"  # no run of main itself: not enough data
    assert "no completed push run of CI on main" in result.verdicts[0].evidence
    push_run(fake, "test (3.12)", "success", 4)
    _, result = classified(fake)
    assert result.verdicts[0].classification == "pr" and len(result.verdicts[0].links) == 1


def test_a_matrix_job_is_matched_with_its_suffix(fake: FakeGitHub) -> None:
    run = pr_run(fake)
    fake.actions.add_job(run, "test (3.11)", log=log_text("E   AssertionError"))
    fake.actions.add_job(run, "test (3.12)", "success")
    main = push_run(fake, "test (3.11)", "success", 6)
    fake.actions.add_job(main, "test (3.12)", "failure")  # another matrix leg failing on main is not this job
    _, result = classified(fake)
    [verdict] = result.verdicts
    assert (verdict.name, verdict.classification) == ("test (3.11)", "pr")


def test_a_rerun_attempt_that_passed_is_flaky(fake: FakeGitHub) -> None:
    run = pr_run(fake, attempt=2, conclusion="success")
    fake.actions.add_job(run, "test (3.12)", "failure", attempt=1, log=log_text("E   boom"))
    fake.actions.add_job(run, "test (3.12)", "success", attempt=2)
    _, result = classified(fake)
    [verdict] = result.verdicts
    assert verdict.classification == "flaky" and "a later attempt" in verdict.evidence
    assert not fake.requests("GET", "/logs") and not fake.requests("GET", "/workflows/")


def test_main_alternating_is_flaky(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test", log=log_text("E   boom"))
    push_run(fake, "test", "failure", 2)
    push_run(fake, "test", "success", 4)
    _, result = classified(fake)
    assert result.verdicts[0].classification == "flaky" and "1 failed, 1 passed" in result.verdicts[0].evidence


def test_an_infra_signature_in_the_log_is_infra(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "Aiter Test", log=log_text("::error::Expected exactly one Aiter wheel artifact, found 0"))
    push_run(fake, "Aiter Test", "success", 2)
    _, result = classified(fake)
    assert result.verdicts[0].classification == "infra" and "wheel" in result.verdicts[0].evidence
    assert not result.findings


def test_unfinished_jobs_and_checks_are_pending(fake: FakeGitHub) -> None:
    run = fake.actions.add_run(head_sha=HEAD, created_at=hours_ago(1), status="in_progress")
    fake.actions.add_job(run, "test", None, status="in_progress")
    fake.actions.add_check_run(HEAD, "Buildkite: gpu", None)
    _, result = classified(fake)
    assert [v.classification for v in result.verdicts] == ["pending", "pending"]


def test_rate_limiting_half_way_gives_a_partial_result_said_as_such(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test (3.12)", log=log_text("E   boom"))
    push_run(fake, "test (3.12)", "success", 2)
    fake.inject(403, path="/actions/workflows/", message="API rate limit exceeded for installation ID 1.",
                headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW.timestamp()) + 3600)})
    data, result = classified(fake)
    assert data.partial and data.jobs
    assert any("rate-limited or unavailable" in note and "partial" in note for note in data.notes)
    [verdict] = result.verdicts
    assert verdict.classification == "unknown" and "were not read" in verdict.evidence


def test_the_request_budget_cuts_and_says_so(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test", log=log_text("E   boom"))
    data, result = classified(fake, budget=2)
    assert data.partial and data.requests == 2 and "request budget (2 requests)" in data.notes[0]


def test_selection_keeps_named_workflows_and_drops_our_own_run(fake: FakeGitHub) -> None:
    ours = fake.actions.add_run(head_sha=HEAD, workflow="PR review", path=".github/workflows/pr-review.yml",
                                created_at=hours_ago(1), status="in_progress")
    fake.actions.add_job(ours, "review", None, status="in_progress")
    other = fake.actions.add_run(head_sha=HEAD, workflow="Nightly", path=".github/workflows/nightly.yml",
                                 created_at=hours_ago(1), status="in_progress")
    fake.actions.add_job(other, "gpu", None, status="in_progress")
    data, _ = classified(fake, selection=Selection(own_run_id=ours["id"]))
    assert {j.workflow for j in data.jobs} == {"Nightly"}
    data, _ = classified(fake, selection=Selection(workflows=("ci.yml",)))
    assert data.jobs == []


def test_conditional_requests_reuse_unchanged_answers(fake: FakeGitHub) -> None:
    fake.actions.add_job(pr_run(fake), "test", "success")
    api = client(fake)
    first = api.list_page("actions.list_workflow_runs_for_repo", "workflow_runs", head_sha=HEAD)
    again = api.list_page("actions.list_workflow_runs_for_repo", "workflow_runs", head_sha=HEAD)
    assert first == again and [r.status for r in fake.requests("GET", "/actions/runs")] == [200, 304]


def test_pages_follow_the_link_header(fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect_module, "PER_PAGE", 2)
    run = pr_run(fake, conclusion="success")
    for n in range(5):
        fake.actions.add_job(run, f"shard {n}", "success")
    data, _ = classified(fake)
    assert len(data.jobs) == 5 and len(fake.requests("GET", f"/runs/{run['id']}/jobs")) == 3


def test_a_long_log_is_streamed_and_cut(fake: FakeGitHub) -> None:
    run = pr_run(fake)
    job = fake.actions.add_job(run, "test", log=log_text(*["x" * 100] * 2000))
    text, cut = client(fake).job_log(job["id"], max_bytes=10_000, seconds=10)
    assert cut and len(text.encode()) == 10_000


def test_every_fixture_matches_githubs_response_schemas(fake: FakeGitHub) -> None:
    pytest.importorskip("githubkit_schemas")
    run = pr_run(fake)
    fake.actions.add_job(run, "test")
    fake.actions.add_status(HEAD, "docs", "failure")
    fake.actions.add_check_run(HEAD, "Buildkite", "failure")
    fake.actions.add_commit("main", "c" * 40)
    assert fake.actions.validated == 5


def test_wait_for_ci_polls_with_backoff_until_the_runs_finish(fake: FakeGitHub) -> None:
    run = fake.actions.add_run(head_sha=HEAD, created_at=hours_ago(1), status="in_progress")
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            run.update(status="completed", conclusion="success")

    request = CIRequest(client(fake), 7, "main", wait_minutes=10, sleep=sleep, clock=lambda: sum(waits))
    assert wait_for_runs(request, HEAD) == [] and waits == list(WAIT_STEPS_SECONDS[:2])
    polls = fake.requests("GET", "/actions/runs")
    assert [p.status for p in polls] == [200, 304, 200]  # an unchanged answer is free of quota


def test_wait_for_ci_gives_up_and_says_what_is_still_running(fake: FakeGitHub) -> None:
    fake.actions.add_run(head_sha=HEAD, created_at=hours_ago(1), status="in_progress")
    waits: list[float] = []
    request = CIRequest(client(fake), 7, "main", wait_minutes=2, sleep=waits.append, clock=lambda: sum(waits))
    [note] = wait_for_runs(request, HEAD)
    assert sum(waits) == 120 and "still running or not started: CI" in note
