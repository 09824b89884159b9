"""From the Actions environment to a review request: which PR, which commits, and a checkout holding them.

`pull_request` carries everything in the event file. `workflow_dispatch` names a PR number (input
`pr-number`) and `workflow_run` names a head commit; both are completed through the API. With
actions/checkout's defaults the workspace holds only the merge commit at depth 1, so the PR head,
its base and the base tip are fetched here (shallow first; the engine deepens to the merge base).
"""
from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping, MutableMapping

from ..config import CONFIG_PATH
from ..git import GitError, Repo
from ..model import PRInfo, record
from ..pipeline import ReviewRequest
from . import shapes
from .client import GitHubClient, GitHubError

PULL_REQUEST_ACTIONS = ("opened", "synchronize", "reopened", "ready_for_review")
SHA = re.compile(r"[0-9a-f]{40}")
FETCH_DEPTH = 50  # first fetch of a missing commit into a shallow clone; find_merge_base deepens further


class Unsupported(Exception):
    """An event this action does not review; the run ends quietly with this message."""


class UserError(Exception):
    """Something the user can fix (missing PR, unfetchable commit, no checkout): reported, exit 0."""


@record(frozen=True)
class PullRequestTarget:
    """The PR to review, as GitHub describes it."""

    number: int
    head_sha: str
    base_ref: str  # branch name, for display
    base_sha: str  # the commit the PR is based on
    base_tip: str | None  # current tip of the base branch (staleness); None for closed PRs
    info: PRInfo
    fork: bool
    previous_head: str | None = None  # head before a `synchronize` push, for "new since the last review"
    notes: tuple[str, ...] = ()


@record(frozen=True)
class Event:
    name: str
    payload: dict[str, Any]


def read_event(env: Mapping[str, str]) -> Event:
    name = env.get("GITHUB_EVENT_NAME", "")
    path = env.get("GITHUB_EVENT_PATH", "")
    if not name or not path:
        raise UserError("GITHUB_EVENT_NAME and GITHUB_EVENT_PATH are not set: this entry point runs inside "
                        "GitHub Actions; use `pr-review review` on a workstation")
    try:
        payload = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"cannot read the event file {path}: {exc}") from exc
    if not isinstance(payload, dict):
        raise UserError(f"the event file {path} does not hold a JSON object")
    return Event(name, payload)


def resolve_target(event: Event, pr_number: int | None, client: Callable[[], GitHubClient]) -> PullRequestTarget:
    """The PR the event is about. `client` is called only when the API is needed."""
    if event.name == "pull_request":
        _check_shape("pull_request", event.payload, shapes.PULL_REQUEST_EVENT)
        action = event.payload.get("action", "")
        if action not in PULL_REQUEST_ACTIONS:
            raise Unsupported(f"pull_request '{action}' is not reviewed (only {', '.join(PULL_REQUEST_ACTIONS)})")
        return _from_pull_request(event.payload)
    if event.name == "workflow_dispatch":
        if pr_number is None:
            raise UserError("workflow_dispatch needs the input pr-number: the number of the pull request to review")
        return _from_api(client(), pr_number)
    if event.name == "workflow_run":
        return _from_workflow_run(event.payload, client)
    raise Unsupported(f"the '{event.name}' event is not reviewed; run this action on pull_request, "
                      "workflow_dispatch (with pr-number) or workflow_run")


def _check_shape(event_name: str, payload: Mapping[str, Any], schema: dict[str, Any]) -> None:
    wrong = shapes.problem(payload, schema)
    if wrong:
        raise UserError(f"the {event_name} event file is malformed ({wrong}); was it written by GitHub?")


def _pr_info(pr: Mapping[str, Any]) -> PRInfo:
    merged = bool(pr.get("merged") or pr.get("merged_at"))
    return PRInfo(
        number=pr["number"], title=pr.get("title") or "", body=pr.get("body") or "",
        labels=[label["name"] for label in pr.get("labels") or [] if label.get("name")],
        author=(pr.get("user") or {}).get("login", ""),
        state="merged" if merged else (pr.get("state") or ""), merged=merged, url=pr.get("html_url") or "",
    )


def _is_fork(pr: Mapping[str, Any]) -> bool:
    head_repo = (pr["head"].get("repo") or {}).get("full_name")  # null when the fork was deleted
    return head_repo != ((pr["base"].get("repo") or {}).get("full_name"))


def _from_pull_request(payload: Mapping[str, Any]) -> PullRequestTarget:
    pr = payload["pull_request"]
    before = payload.get("before") if payload.get("action") == "synchronize" else None
    return PullRequestTarget(
        number=pr["number"], head_sha=pr["head"]["sha"], base_ref=pr["base"]["ref"],
        base_sha=pr["base"]["sha"], base_tip=pr["base"]["sha"], info=_pr_info(pr), fork=_is_fork(pr),
        previous_head=before if before and SHA.fullmatch(before) else None,
    )


def _from_api(client: GitHubClient, number: int, head_sha: str | None = None) -> PullRequestTarget:
    try:
        pr = client.pull(number)
    except GitHubError as exc:
        if exc.status == 404:
            raise UserError(f"pull request #{number} does not exist in {client.owner}/{client.repo}") from exc
        raise
    info = _pr_info(pr)
    notes: list[str] = []
    base_tip: str | None = None
    if info.state == "open":
        try:
            base_tip = client.branch(pr["base"]["ref"])["commit"]["sha"]
        except GitHubError as exc:
            if exc.unavailable:
                raise
            notes.append(f"The base branch {pr['base']['ref']} could not be read ({exc.detail}); "
                         "staleness against its tip was not checked.")
    else:
        notes.append(f"PR #{number} is {info.state}; whether it still merges onto today's base tip was not checked.")
    return PullRequestTarget(
        number=number, head_sha=head_sha or pr["head"]["sha"], base_ref=pr["base"]["ref"],
        base_sha=pr["base"]["sha"], base_tip=base_tip, info=info, fork=_is_fork(pr), notes=tuple(notes),
    )


def _from_workflow_run(payload: Mapping[str, Any], client: Callable[[], GitHubClient]) -> PullRequestTarget:
    if payload.get("action") != "completed":
        raise Unsupported(f"workflow_run '{payload.get('action')}' is not reviewed (only 'completed')")
    _check_shape("workflow_run", payload, shapes.WORKFLOW_RUN_EVENT)
    run = payload["workflow_run"]
    head_sha = run["head_sha"]
    listed = [p for p in run.get("pull_requests") or [] if (p.get("head") or {}).get("sha") == head_sha]
    listed = listed or list(run.get("pull_requests") or [])
    api = client()
    if listed:
        return _from_api(api, listed[0]["number"], head_sha)
    # Runs of fork PRs list no pull_requests: find the open PR whose head is this commit.
    head_repo = run.get("head_repository") or {}
    owner = (head_repo.get("owner") or {}).get("login")
    branch = run.get("head_branch")
    matches = [p for p in api.pulls_with_head(f"{owner}:{branch}") if p["head"]["sha"] == head_sha] \
        if owner and branch else []
    if not matches:
        raise Unsupported(f"the workflow run of {head_sha[:12]} belongs to no open pull request")
    return _from_api(api, matches[0]["number"], head_sha)


# -- the checkout ---------------------------------------------------------------------------

def prepare_checkout(target: PullRequestTarget, repo_dir: str, *, base_override: str | None = None,
                     profile: str | None = None, repo_name: str = "",
                     config_path: str = CONFIG_PATH) -> tuple[ReviewRequest, list[str]]:
    """Fetch what the review needs into the checkout; return the request and notes for the report."""
    try:
        repo = Repo.open(repo_dir)
    except GitError as exc:
        raise UserError(f"{repo_dir} is not a git checkout; add actions/checkout before this action") from exc
    remote = "origin" if "origin" in repo.remotes() else None
    notes = list(target.notes)
    head = _ensure_head(repo, remote, target)
    if base_override:
        try:
            base = repo.ensure_commit(base_override, remote)
        except GitError as exc:
            raise UserError(f"the base-ref input '{base_override}' is not in the checkout and could not be "
                            f"fetched ({exc})") from exc
        base_tip: str | None = base
    else:
        base = _ensure_base(repo, remote, target)
        base_tip = target.base_tip
        if base_tip and base_tip != base and not _have(repo, remote, base_tip):
            notes.append(f"The tip {base_tip[:12]} of {target.base_ref} could not be fetched; "
                         "staleness was not checked.")
            base_tip = None
    request = ReviewRequest(repo_dir=str(repo.root), base=base, head=head, pr=target.info, profile=profile,
                            remote=remote, base_tip=base_tip, repo_name=repo_name, config_path=config_path,
                            base_label=base_override or target.base_ref)
    return request, notes


def _have(repo: Repo, remote: str | None, sha: str) -> bool:
    """Whether `sha` is in the clone, fetching it (shallow when the clone is shallow) if not."""
    if repo.resolve(sha):
        return True
    if remote is None:
        return False
    depth = [f"--depth={FETCH_DEPTH}"] if repo.is_shallow() else []
    return repo.run_ok("fetch", "--no-tags", "--quiet", *depth, remote, sha) and repo.resolve(sha) is not None


def _ensure_base(repo: Repo, remote: str | None, target: PullRequestTarget) -> str:
    if _have(repo, remote, target.base_sha):
        return target.base_sha
    # A server that refuses fetching by sha still serves the branch, which usually holds the base commit.
    try:
        repo.ensure_commit(target.base_ref, remote)
    except GitError as exc:
        raise UserError(f"the base commit {target.base_sha[:12]} of PR #{target.number} could not be fetched, "
                        f"nor its branch {target.base_ref} ({exc})") from exc
    if repo.resolve(target.base_sha) is None:
        raise UserError(f"the base commit {target.base_sha[:12]} of PR #{target.number} is not on {target.base_ref} "
                        "and could not be fetched by its sha")
    return target.base_sha


def _ensure_head(repo: Repo, remote: str | None, target: PullRequestTarget) -> str:
    if _have(repo, remote, target.head_sha):
        return target.head_sha
    pull_ref = f"refs/pull/{target.number}/head"
    try:
        current = repo.ensure_commit(pull_ref, remote)
    except GitError as exc:
        raise UserError(f"the head {target.head_sha[:12]} of PR #{target.number} could not be fetched, "
                        f"nor {pull_ref} ({exc})") from exc
    if current != target.head_sha and repo.resolve(target.head_sha) is None:
        raise UserError(f"the head {target.head_sha[:12]} of PR #{target.number} is no longer in the repository "
                        f"(force-pushed away?); {pull_ref} now points to {current[:12]}: review that commit instead")
    return target.head_sha


def authenticate_git(repo_dir: str, server_url: str, token: str, environ: MutableMapping[str, str]) -> bool:
    """Let `git fetch` use the token through GIT_CONFIG_* variables (nothing written to .git/config),
    unless the checkout already carries credentials for the server (persist-credentials: true)."""
    if not token or not server_url.startswith("https://"):
        return False
    key = f"http.{server_url.rstrip('/')}/.extraheader"
    try:
        repo = Repo.open(repo_dir)
    except GitError:
        return False
    code, _ = repo.run("config", "--get-regexp", r"^http\..*\.extraheader$")
    if code == 0:
        return False
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    index = int(environ.get("GIT_CONFIG_COUNT", "0") or 0)
    environ[f"GIT_CONFIG_KEY_{index}"] = key
    environ[f"GIT_CONFIG_VALUE_{index}"] = f"AUTHORIZATION: basic {basic}"
    environ["GIT_CONFIG_COUNT"] = str(index + 1)
    return True
