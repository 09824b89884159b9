"""Events to review targets, and a default actions/checkout workspace completed with the PR's commits."""
from __future__ import annotations

from pathlib import Path

import pytest
from fake_github import FakeGitHub
from gh_fixtures import fake, upstream  # noqa: F401 - pytest fixtures
from gh_upstream import Upstream, checkout, git

from pr_review.github.client import GitHubClient
from pr_review.github.event import (
    Event,
    Unsupported,
    UserError,
    authenticate_git,
    prepare_checkout,
    read_event,
    resolve_target,
)


def pull_request_payload(upstream: Upstream, action: str = "opened", fork: bool = False, **extra) -> dict:
    head_repo = "someone/kernels" if fork else "acme/kernels"
    return {"action": action, "number": 7, **extra, "pull_request": {
        "number": 7, "title": "Speed up quant", "body": None, "state": "open", "merged": False,
        "html_url": "https://github.test/acme/kernels/pull/7", "user": {"login": "dev"},
        "labels": [{"name": "perf"}],
        "head": {"sha": upstream.pr_head, "ref": "feature", "repo": {"full_name": head_repo}},
        "base": {"sha": upstream.base_sha, "ref": "main", "repo": {"full_name": "acme/kernels"}},
    }}


def no_api() -> GitHubClient:
    raise AssertionError("this event needs no API call")


def client_for(fake: FakeGitHub):
    return lambda: GitHubClient(fake.url, "write-token", fake.owner, fake.repo, sleep=lambda s: None)


def test_pull_request_is_read_from_the_event_file(upstream: Upstream) -> None:
    target = resolve_target(Event("pull_request", pull_request_payload(upstream)), None, no_api)
    assert (target.number, target.head_sha, target.base_sha, target.base_ref) == (7, upstream.pr_head,
                                                                                   upstream.base_sha, "main")
    assert target.info.labels == ["perf"] and target.info.body == "" and not target.fork
    assert target.previous_head is None


def test_fork_and_synchronize(upstream: Upstream) -> None:
    payload = pull_request_payload(upstream, "synchronize", fork=True, before="b" * 40)
    target = resolve_target(Event("pull_request", payload), None, no_api)
    assert target.fork and target.previous_head == "b" * 40


@pytest.mark.parametrize("name,action", [("pull_request", "closed"), ("pull_request", "labeled"),
                                         ("push", None), ("pull_request_target", "opened"), ("schedule", None)])
def test_other_events_are_not_reviewed(upstream: Upstream, name: str, action: str | None) -> None:
    payload = pull_request_payload(upstream, action) if action else {}
    with pytest.raises(Unsupported, match="not reviewed"):
        resolve_target(Event(name, payload), None, no_api)


def test_workflow_dispatch_needs_a_pr_number(upstream: Upstream) -> None:
    with pytest.raises(UserError, match="pr-number"):
        resolve_target(Event("workflow_dispatch", {"inputs": {}}), None, no_api)


def test_workflow_dispatch_reads_an_open_pr_and_its_base_tip(fake: FakeGitHub, upstream: Upstream) -> None:
    fake.add_pull(7, head_sha=upstream.pr_head, base_sha=upstream.base_sha, title="Speed up quant",
                  labels=("perf",))
    fake.branches["main"] = upstream.main_sha
    target = resolve_target(Event("workflow_dispatch", {}), 7, client_for(fake))
    assert target.head_sha == upstream.pr_head and target.base_tip == upstream.main_sha
    assert target.info.state == "open" and target.info.labels == ["perf"]


def test_workflow_dispatch_of_a_merged_pr_skips_staleness(fake: FakeGitHub, upstream: Upstream) -> None:
    fake.add_pull(3, head_sha=upstream.old_head, base_sha=upstream.old_base_sha, state="closed", merged=True)
    target = resolve_target(Event("workflow_dispatch", {}), 3, client_for(fake))
    assert target.info.state == "merged" and target.info.merged and target.base_tip is None
    assert any("merged" in note for note in target.notes)
    assert [r.path for r in fake.log] == ["/repos/acme/kernels/pulls/3"]


def test_workflow_dispatch_of_a_missing_pr(fake: FakeGitHub) -> None:
    with pytest.raises(UserError, match="pull request #404 does not exist in acme/kernels"):
        resolve_target(Event("workflow_dispatch", {}), 404, client_for(fake))


def test_workflow_run_with_listed_pull_request(fake: FakeGitHub, upstream: Upstream) -> None:
    fake.add_pull(7, head_sha=upstream.pr_head, base_sha=upstream.base_sha)
    fake.branches["main"] = upstream.main_sha
    payload = {"action": "completed", "workflow_run": {
        "head_sha": upstream.pr_head, "pull_requests": [{"number": 7, "head": {"sha": upstream.pr_head}}]}}
    assert resolve_target(Event("workflow_run", payload), None, client_for(fake)).number == 7


def test_workflow_run_of_a_fork_finds_the_pr_by_head(fake: FakeGitHub, upstream: Upstream) -> None:
    fake.add_pull(7, head_sha=upstream.pr_head, base_sha=upstream.base_sha, head_owner="someone",
                  head_ref="feature")
    fake.branches["main"] = upstream.main_sha
    payload = {"action": "completed", "workflow_run": {
        "head_sha": upstream.pr_head, "pull_requests": [], "head_branch": "feature",
        "head_repository": {"owner": {"login": "someone"}}}}
    target = resolve_target(Event("workflow_run", payload), None, client_for(fake))
    assert target.number == 7 and target.fork
    assert fake.log[0].query["head"] == "someone:feature"


def test_workflow_run_without_a_pr(fake: FakeGitHub, upstream: Upstream) -> None:
    payload = {"action": "completed", "workflow_run": {
        "head_sha": upstream.main_sha, "pull_requests": [], "head_branch": "main",
        "head_repository": {"owner": {"login": "acme"}}}}
    with pytest.raises(Unsupported, match="belongs to no open pull request"):
        resolve_target(Event("workflow_run", payload), None, client_for(fake))
    with pytest.raises(Unsupported, match="only 'completed'"):
        resolve_target(Event("workflow_run", {**payload, "action": "requested"}), None, client_for(fake))


def test_event_file_problems_are_user_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="inside GitHub Actions"):
        read_event({})
    (tmp_path / "event.json").write_text("[1]")
    with pytest.raises(UserError, match="JSON object"):
        read_event({"GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(tmp_path / "event.json")})
    payload = {"action": "opened", "pull_request": {"number": 7}}
    with pytest.raises(UserError, match=r"pull_request event file is malformed \(\$.pull_request: 'head' is a required"):
        resolve_target(Event("pull_request", payload), None, no_api)


def test_default_checkout_gets_head_and_base_fetched(upstream: Upstream, tmp_path: Path) -> None:
    workspace = checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    target = resolve_target(Event("pull_request", pull_request_payload(upstream)), None, no_api)
    request, notes = prepare_checkout(target, str(workspace), repo_name="acme/kernels")
    assert (request.head, request.base, request.base_tip) == (upstream.pr_head, upstream.base_sha, upstream.base_sha)
    assert request.remote == "origin" and notes == []
    assert git(workspace, "rev-parse", "--is-shallow-repository") == "true"  # fetched shallow, not the whole history


def test_merged_pr_on_a_default_branch_checkout(fake: FakeGitHub, upstream: Upstream, tmp_path: Path) -> None:
    workspace = checkout(upstream, tmp_path / "ws", upstream.main_sha, "refs/remotes/origin/main")
    fake.add_pull(3, head_sha=upstream.old_head, base_sha=upstream.old_base_sha, state="closed", merged=True)
    target = resolve_target(Event("workflow_dispatch", {}), 3, client_for(fake))
    request, notes = prepare_checkout(target, str(workspace))
    assert (request.head, request.base, request.base_tip) == (upstream.old_head, upstream.old_base_sha, None)
    assert notes and "merged" in notes[0]


def test_head_force_pushed_away(upstream: Upstream, tmp_path: Path) -> None:
    workspace = checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    payload = pull_request_payload(upstream)
    payload["pull_request"]["head"]["sha"] = "c" * 40  # a head nobody can fetch any more
    target = resolve_target(Event("pull_request", payload), None, no_api)
    with pytest.raises(UserError, match=r"no longer in the repository \(force-pushed away\?\); "
                                        rf"refs/pull/7/head now points to {upstream.pr_head[:12]}"):
        prepare_checkout(target, str(workspace))


def test_base_ref_input_overrides_the_base(upstream: Upstream, tmp_path: Path) -> None:
    workspace = checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    target = resolve_target(Event("pull_request", pull_request_payload(upstream)), None, no_api)
    request, _ = prepare_checkout(target, str(workspace), base_override="main")
    assert request.base == upstream.main_sha == request.base_tip
    with pytest.raises(UserError, match="base-ref input 'nope'"):
        prepare_checkout(target, str(workspace), base_override="nope")


def test_no_checkout_is_a_user_error(upstream: Upstream, tmp_path: Path) -> None:
    target = resolve_target(Event("pull_request", pull_request_payload(upstream)), None, no_api)
    with pytest.raises(UserError, match="add actions/checkout"):
        prepare_checkout(target, str(tmp_path))


def test_git_fetch_credentials_travel_in_the_environment(upstream: Upstream, tmp_path: Path) -> None:
    workspace = checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
    environ: dict[str, str] = {"GIT_CONFIG_COUNT": "1"}
    assert authenticate_git(str(workspace), "https://github.com", "s3cret", environ)
    assert environ["GIT_CONFIG_COUNT"] == "2" and environ["GIT_CONFIG_KEY_1"] == "http.https://github.com/.extraheader"
    assert environ["GIT_CONFIG_VALUE_1"].startswith("AUTHORIZATION: basic ")
    assert "s3cret" not in (workspace / ".git" / "config").read_text()
    git(workspace, "config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic xyz")
    assert not authenticate_git(str(workspace), "https://github.com", "s3cret", {})  # checkout's own credentials win
