"""The CI classification stage: collect → compare with the default branch → classify, plus the
downstream-coverage (E4) and owner sign-off (E5) checks that read the same CI data.

Runs only when a token and a PR are known (the action, `pr-review ci`); a local review skips it.
`run` takes plain data (and the API client it reads through) and returns plain data.
"""
from __future__ import annotations

import time
from typing import Callable

from ..git import Repo
from ..git.diff import ChangedFile
from ..github.client import GitHubClient, GitHubError
from ..model import CIVerdict, Finding, Owner, field, record
from ..profiles import Profile
from . import downstream
from .classify import classify
from .collect import REQUEST_BUDGET, RETENTION_DAYS, Selection
from .collect import collect as collect_data
from .owners import owners

WAIT_STEPS_SECONDS = (30.0, 60.0, 120.0, 300.0)  # polling backoff for wait-for-ci; the last step repeats


@record
class CIRequest:
    client: GitHubClient
    pr_number: int | None
    branch: str  # the branch the PR merges into, whose push runs are the comparison
    selection: Selection = field(default_factory=Selection)
    window_hours: int = 48
    wait_minutes: int = 0
    notify_owners: bool = False
    retention_days: int = RETENTION_DAYS
    budget: int = REQUEST_BUDGET
    labels: tuple[str, ...] = ()  # from the event, used when the labels cannot be read
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


@record
class CIResult:
    verdicts: list[CIVerdict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    owners: list[Owner] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    downstream_clear: str | None = None  # why E4 needs no label; None when it fired or was not checked

    @property
    def caused_by_pr(self) -> int:
        return sum(1 for v in self.verdicts if v.classification == "pr")


def run(request: CIRequest, head_sha: str, files: list[ChangedFile], profile: Profile, repo: Repo,
        base_rev: str, workflow_text: Callable[[str], str | None]) -> CIResult:
    result = CIResult()
    if request.wait_minutes > 0:
        result.notes.extend(wait_for_runs(request, head_sha))
    data = collect_data(request.client, head_sha, request.pr_number, default_branch=request.branch,
                   selection=request.selection, window_hours=request.window_hours,
                   retention_days=request.retention_days, budget=request.budget)
    classified = classify(data, files, profile, secrets=(request.client.token,))
    result.verdicts, result.findings = classified.verdicts, classified.findings
    result.notes.extend(data.notes)
    if not data.jobs and not data.checks and not data.partial:
        result.notes.append(f"No CI run or check has reported on {head_sha[:12]} yet.")
    labels = data.labels if data.labels is not None else list(request.labels)
    e4, notes, result.downstream_clear = downstream.check(files, profile, data.jobs, labels, workflow_text)
    result.findings.extend(e4)
    result.notes.extend(notes)
    result.owners, notes = owners(repo, base_rev, files, profile, request.notify_owners)
    result.notes.extend(notes)
    result.notes.append(f"CI classification: {data.requests} API request(s)"
                        + (", partial" if data.partial else "") + ".")
    return result


def wait_for_runs(request: CIRequest, head_sha: str) -> list[str]:
    """Poll the head's workflow runs (conditional requests: an unchanged answer costs no quota) until
    the selected workflows have all finished or `wait_minutes` are up."""
    deadline = request.clock() + request.wait_minutes * 60
    step = 0
    while True:
        try:
            runs, _ = request.client.list_page("actions.list_workflow_runs_for_repo", "workflow_runs",
                                               head_sha=head_sha, per_page=100, page=1)
        except GitHubError as exc:
            return [f"Stopped waiting for CI: GitHub {exc.detail}."]
        kept = [r for r in runs if request.selection.keeps(r)]
        named = {r.get("name") for r in kept} | {(r.get("path") or "").rsplit("/", 1)[-1] for r in kept}
        missing = [w for w in request.selection.workflows if w not in named]
        running = [r for r in kept if r.get("status") != "completed"]
        if not running and not missing:
            return []
        wait = WAIT_STEPS_SECONDS[min(step, len(WAIT_STEPS_SECONDS) - 1)]
        left = deadline - request.clock()
        if left <= 0:
            names = sorted({r.get("name") or "" for r in running} | set(missing))
            return [f"Waited {request.wait_minutes} min (input wait-for-ci); still running or not started: "
                    f"{', '.join(names)}. Those are listed as pending."]
        request.sleep(min(wait, left))
        step += 1
