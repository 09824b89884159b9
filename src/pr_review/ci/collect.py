"""Collect what GitHub knows about the CI of one head commit, as plain records: the Actions jobs of
every workflow run and attempt on the commit, the other apps' check runs and the commit statuses,
the PR's labels, the default branch's runs of each failed job's workflow in a window around the
PR's run, and the failed jobs' logs.

Every request counts against a budget; what the budget or GitHub (rate limits, outages) cut short is
recorded in `notes` and `partial`, never passed off as data. The records go to `classify`, which
makes no request.
"""
from __future__ import annotations

from ..model import field, record
from datetime import datetime, timedelta, timezone
from typing import Any

from ..github.client import GitHubClient, GitHubError
from . import logs as logtext

FAILED = ("failure", "timed_out", "cancelled", "startup_failure", "action_required")
PASSED = ("success", "neutral", "skipped")
REQUEST_BUDGET = 150  # GITHUB_TOKEN allows 1,000 requests an hour per repository; one review takes a slice
PER_PAGE = 100
MAIN_RUNS_PER_WORKFLOW = 10  # default-branch runs compared per workflow, nearest to the PR's run first
LOG_BYTES = 8 * 1024 * 1024  # per job log, streamed
LOG_SECONDS = 20.0  # per job log
LOG_BYTES_TOTAL = 24 * 1024 * 1024  # all logs of one review
EXCERPT_CHARS = 3000  # per failed job
EXCERPT_CHARS_TOTAL = 20000  # per review
RETENTION_DAYS = 90  # GitHub's default for logs; GITHUB_RETENTION_DAYS says the repository's own


@record
class Job:
    """One attempt of one job of a workflow run on the PR head."""

    id: int
    name: str  # with the matrix suffix, as GitHub shows it: "test (3.12)"
    workflow: str
    workflow_id: int
    run_id: int
    attempt: int
    status: str
    conclusion: str | None
    url: str
    run_created_at: str
    failed_step: str = ""
    step_started: str | None = None
    step_completed: str | None = None

    @property
    def failed(self) -> bool:
        return self.status == "completed" and self.conclusion in FAILED


@record
class Check:
    """A check run of another app (not Actions) or a commit status, in its latest state."""

    name: str
    kind: str  # "check" | "status"
    state: str  # a check's conclusion (or status when not completed); a status's state
    url: str
    detail: str = ""  # a status's description, a check's output title

    @property
    def failed(self) -> bool:
        return self.state in FAILED or self.state == "error"

    @property
    def pending(self) -> bool:
        return self.state in ("queued", "in_progress", "pending", "waiting", "requested")


@record
class MainRun:
    """The same job (or check) on a default-branch commit."""

    url: str
    conclusion: str


@record
class Log:
    state: str  # read | gone | not-read
    lines: list[logtext.LogLine] = field(default_factory=list)
    detail: str = ""  # why it is gone or was not read; "cut at N MB" when streamed only in part


@record
class CIData:
    head_sha: str
    default_branch: str
    jobs: list[Job] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    labels: list[str] | None = None  # None: not read
    main_jobs: dict[tuple[int, str], list[MainRun] | None] = field(default_factory=dict)  # None: not read
    main_checks: dict[str, list[MainRun] | None] = field(default_factory=dict)
    logs: dict[int, Log] = field(default_factory=dict)
    window_hours: int = 48
    retention_days: int = RETENTION_DAYS
    now: str = ""
    requests: int = 0
    partial: bool = False
    notes: list[str] = field(default_factory=list)


@record(frozen=True)
class Selection:
    """Which workflow runs on the head count."""

    workflows: tuple[str, ...] = ()  # names or file names; empty: every workflow but our own
    own_run_id: int | None = None  # the run this review executes in (GITHUB_RUN_ID)
    own_workflow: str = ""  # its workflow name (GITHUB_WORKFLOW)

    def keeps(self, run: dict[str, Any]) -> bool:
        if self.own_run_id and run.get("id") == self.own_run_id:
            return False
        names = {run.get("name") or "", (run.get("path") or "").rsplit("/", 1)[-1]}
        if self.workflows:
            return bool(names & set(self.workflows))
        return not (self.own_workflow and self.own_workflow in names)


class OutOfBudget(Exception):
    pass


class Collector:
    def __init__(self, client: GitHubClient, budget: int = REQUEST_BUDGET):
        self.client = client
        self.budget = budget
        self.spent = 0
        self.log_bytes = 0

    def pages(self, operation: str, key: str | None, limit: int = 1000, **params: Any) -> list[Any]:
        items: list[Any] = []
        page: int | None = 1
        while page is not None and len(items) < limit:
            self.spend()
            found, page = self.client.list_page(operation, key, per_page=PER_PAGE, page=page, **params)
            items.extend(found)
        return items[:limit]

    def spend(self) -> None:
        if self.spent >= self.budget:
            raise OutOfBudget()
        self.spent += 1


def collect(client: GitHubClient, head_sha: str, pr_number: int | None, *, default_branch: str,
            selection: Selection = Selection(), window_hours: int = 48, retention_days: int = RETENTION_DAYS,
            budget: int = REQUEST_BUDGET, now: datetime | None = None) -> CIData:
    now = now or datetime.now(timezone.utc)
    data = CIData(head_sha, default_branch, window_hours=window_hours, retention_days=retention_days,
                  now=now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    collector = Collector(client, budget)
    steps = [("the workflow runs and jobs of the head commit", lambda: _head_jobs(collector, data, selection)),
             ("the other apps' check runs", lambda: _head_checks(collector, data)),
             ("the commit statuses", lambda: _head_statuses(collector, data)),
             ("the PR's labels", lambda: _labels(collector, data, pr_number)),
             ("the default branch's runs of the failed jobs", lambda: _main_jobs(collector, data, client)),
             ("the failed external checks on the default branch", lambda: _main_checks(collector, data)),
             ("the failed jobs' logs", lambda: _logs(collector, data))]
    for what, step in steps:
        try:
            step()
        except OutOfBudget:
            data.partial = True
            data.notes.append(f"Stopped at the request budget ({budget} requests) while reading {what}; "
                              "the rows below that lack data say so.")
            break
        except GitHubError as exc:
            data.partial = True
            why = "rate-limited or unavailable" if exc.unavailable else f"refused ({exc.status})"
            data.notes.append(f"GitHub {why} while reading {what} ({exc.detail}); "
                              "the classification is partial: rows without data say so.")
            if exc.unavailable:
                break
    data.requests = collector.spent
    return data


# -- the head commit ---------------------------------------------------------------------------

def _head_jobs(c: Collector, data: CIData, selection: Selection) -> None:
    runs = [r for r in c.pages("actions.list_workflow_runs_for_repo", "workflow_runs", head_sha=data.head_sha)
            if selection.keeps(r)]
    for run in runs:
        for job in c.pages("actions.list_jobs_for_workflow_run", "jobs", run_id=run["id"], filter="all"):
            data.jobs.append(_job(job, run))


def _job(job: dict[str, Any], run: dict[str, Any]) -> Job:
    failed = next((s for s in job.get("steps") or [] if s.get("conclusion") in FAILED), None)
    return Job(id=int(job["id"]), name=job.get("name") or "", workflow=run.get("name") or job.get("workflow_name") or "",
               workflow_id=int(run["workflow_id"]), run_id=int(run["id"]),
               attempt=int(job.get("run_attempt") or 1), status=job.get("status") or "",
               conclusion=job.get("conclusion"), url=job.get("html_url") or "",
               run_created_at=run.get("run_started_at") or run.get("created_at") or "",
               failed_step=(failed or {}).get("name") or "", step_started=(failed or {}).get("started_at"),
               step_completed=(failed or {}).get("completed_at"))


def _head_checks(c: Collector, data: CIData) -> None:
    for run in c.pages("checks.list_for_ref", "check_runs", ref=data.head_sha, filter="latest"):
        app = (run.get("app") or {}).get("slug") or ""
        if app == "github-actions":
            continue  # Actions jobs come with their workflow run; our own review run is one of these too
        state = run.get("conclusion") or run.get("status") or ""
        data.checks.append(Check(run.get("name") or "", "check", state, run.get("html_url") or "",
                                 ((run.get("output") or {}).get("title")) or ""))


def _head_statuses(c: Collector, data: CIData) -> None:
    seen: set[str] = set()
    for status in c.pages("repos.list_commit_statuses_for_ref", None, ref=data.head_sha, limit=300):
        context = status.get("context") or ""
        if context in seen:
            continue  # newest first: the first status of a context is its current state
        seen.add(context)
        data.checks.append(Check(context, "status", status.get("state") or "", status.get("target_url") or "",
                                 status.get("description") or ""))


def _labels(c: Collector, data: CIData, pr_number: int | None) -> None:
    if pr_number is not None:
        data.labels = [label.get("name") or "" for label in
                       c.pages("issues.list_labels_on_issue", None, issue_number=pr_number)]


# -- the default branch ------------------------------------------------------------------------

def failed_jobs(jobs: list[Job]) -> dict[tuple[int, str], Job]:
    """Each failed job once (its latest failed attempt), keyed by workflow and job name; a job that
    passed on another attempt of the same run is not among them (it is flaky, decided without more data)."""
    passed = {(j.run_id, j.name) for j in jobs if j.status == "completed" and j.conclusion == "success"}
    out: dict[tuple[int, str], Job] = {}
    for job in sorted(jobs, key=lambda j: j.attempt):
        if job.failed and (job.run_id, job.name) not in passed:
            out[(job.workflow_id, job.name)] = job
    return out


def _main_jobs(c: Collector, data: CIData, client: GitHubClient) -> None:
    failed = failed_jobs(data.jobs)
    for key in failed:
        data.main_jobs[key] = None
    full_name = f"{client.owner}/{client.repo}"
    runs_by_workflow: dict[int, list[dict[str, Any]]] = {}
    jobs_by_run: dict[int, list[dict[str, Any]]] = {}
    for (workflow_id, name), job in failed.items():
        if workflow_id not in runs_by_workflow:
            center = _parse_time(job.run_created_at) or _parse_time(data.now)
            window = timedelta(hours=data.window_hours)
            created = f"{_format_time(center - window)}..{_format_time(center + window)}"
            runs = c.pages("actions.list_workflow_runs", "workflow_runs", limit=300, workflow_id=workflow_id,
                           branch=data.default_branch, event="push", created=created, status="completed")
            # `branch` matches head_branch, which a fork's branch called main shares: only pushes to
            # this repository are the default branch's own runs.
            runs = [r for r in runs if r.get("event") == "push" and r.get("head_sha") != data.head_sha
                    and ((r.get("head_repository") or {}).get("full_name") or "").lower() == full_name.lower()]
            runs.sort(key=lambda r: abs(((_parse_time(r.get("created_at")) or center) - center).total_seconds()))
            runs_by_workflow[workflow_id] = runs[:MAIN_RUNS_PER_WORKFLOW]
        found: list[MainRun] = []
        for run in runs_by_workflow[workflow_id]:
            if run["id"] not in jobs_by_run:
                jobs_by_run[run["id"]] = c.pages("actions.list_jobs_for_workflow_run", "jobs", run_id=run["id"],
                                                 filter="latest")
            for main_job in jobs_by_run[run["id"]]:
                if main_job.get("name") == name and main_job.get("status") == "completed":
                    found.append(MainRun(main_job.get("html_url") or run.get("html_url") or "",
                                         main_job.get("conclusion") or ""))
        data.main_jobs[(workflow_id, name)] = found


def _main_checks(c: Collector, data: CIData) -> None:
    failed = [check for check in data.checks if check.failed]
    if not failed:
        return
    for check in failed:
        data.main_checks[check.name] = None
    commits = c.pages("repos.list_commits", None, limit=5, sha=data.default_branch)
    states: dict[str, list[MainRun]] = {check.name: [] for check in failed}
    for commit in commits:
        sha = commit["sha"]
        if any(check.kind == "check" for check in failed):
            for run in c.pages("checks.list_for_ref", "check_runs", ref=sha, filter="latest"):
                if run.get("name") in states and run.get("status") == "completed":
                    states[run["name"]].append(MainRun(run.get("html_url") or "", run.get("conclusion") or ""))
        if any(check.kind == "status" for check in failed):
            seen: set[str] = set()
            for status in c.pages("repos.list_commit_statuses_for_ref", None, limit=300, ref=sha):
                context = status.get("context") or ""
                if context in states and context not in seen and status.get("state") != "pending":
                    seen.add(context)
                    states[context].append(MainRun(status.get("target_url") or "", status.get("state") or ""))
    data.main_checks.update(states)


# -- logs --------------------------------------------------------------------------------------

def _logs(c: Collector, data: CIData) -> None:
    now = _parse_time(data.now)
    for job in failed_jobs(data.jobs).values():
        created = _parse_time(job.run_created_at)
        if now and created and now - created > timedelta(days=data.retention_days):
            data.logs[job.id] = Log("gone", detail=f"the run is older than the {data.retention_days}-day log retention")
            continue
        if c.log_bytes >= LOG_BYTES_TOTAL:
            data.logs[job.id] = Log("not-read", detail="the review's log budget was spent on earlier jobs")
            continue
        c.spend()
        try:
            text, cut = c.client.job_log(job.id, max_bytes=min(LOG_BYTES, LOG_BYTES_TOTAL - c.log_bytes),
                                         seconds=LOG_SECONDS)
        except GitHubError as exc:
            if exc.status in (404, 410):
                data.logs[job.id] = Log("gone", detail=f"GitHub answers {exc.status} for the log")
                continue
            if exc.unavailable:
                raise
            data.logs[job.id] = Log("not-read", detail=f"the log could not be read ({exc.detail})")
            continue
        c.log_bytes += len(text.encode("utf-8", "replace"))
        data.logs[job.id] = Log("read", logtext.parse(text),
                                f"only the first {len(text.encode('utf-8', 'replace')) / 2**20:.1f} MB were read" if cut else "")


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _format_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
