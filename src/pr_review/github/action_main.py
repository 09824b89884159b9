"""Entry point of the composite action: `python -m pr_review.github.action_main`.

Inputs arrive as INPUT_* variables (action.yml maps each `inputs.<name>` through `env:`); the
runner's GITHUB_* variables say which event, repository and files. A misconfigured input stops
the step with a message naming it. Anything else a user can cause — an unsupported event, a PR
that cannot be fetched, a token that may not post, GitHub being down, the time budget running
out — ends in a log line, a job summary and report.json, with exit status 0: the review is
advisory and never fails a job. The token is masked line by line, and every exit — the log, the
job summary, the outputs, report.json, the SARIF file and the check run — is scrubbed of it.
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
import tempfile
import time
import traceback
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, MutableMapping, TextIO

from actions_toolkit import core

from .. import __version__
from ..catalog import load_catalog
from ..ci import CIRequest
from ..ci.collect import RETENTION_DAYS, Selection
from ..config import CONFIG_PATH
from ..git import GitError
from ..model import Report, record, replace, verdict_id
from ..pipeline import ReviewRequest, review
from ..profiles import load_profiles
from ..report.escape import markdown_inline
from ..report.render import render_json
from ..report.sarif import render_sarif
from .budget import DEFAULT_MINUTES, REVIEW_SHARE, OutOfTime, time_limit
from .checks import annotation, external_id, find_runs, mark_new, post, post_unfinished, split_by_cap, title
from .client import GitHubClient, GitHubError
from .commands import (
    annotation_commands,
    append_step_summary,
    command,
    log,
    log_group,
    mask,
    step_summary_room,
    write_outputs,
)
from .event import (
    PullRequestTarget,
    Unsupported,
    UserError,
    authenticate_git,
    prepare_checkout,
    read_event,
    resolve_target,
)
from .secrets import Scrubber, ScrubbedStream
from .summary import CHECK_SUMMARY_LIMIT, JOB_SUMMARY_LIMIT, Publication, render_summary

LANGUAGES = ("en", "zh")
UNFINISHED_TITLE = {"en": "⏱ Review not finished (advisory)", "zh": "⏱ 审查未完成（建议性）"}
DEFAULT_CHECK_NAME = "PR review (advisory)"
DEFAULT_MAX_ANNOTATIONS = 200
DEFAULT_CI_WINDOW_HOURS = 48
WHOLE_NUMBER = re.compile(r"[0-9]+")  # not str.isdigit(), which also takes "²", and int() refuses it
MINUTES = re.compile(r"[0-9]+(\.[0-9]+)?")
OUTPUT_NAMES = ("verdict", "verdict-id", "high", "medium", "low", "report-path", "sarif-path", "check-run-url",
                "ci-failures")


class InputError(Exception):
    """A misconfigured input; the message names it."""


@record(frozen=True)
class Inputs:
    token: str
    pr_number: int | None
    base_ref: str
    profile: str
    config: str
    check_name: str
    max_annotations: int
    language: str
    time_budget: float = DEFAULT_MINUTES  # minutes
    ci_workflows: tuple[str, ...] = ()
    ci_window_hours: int = DEFAULT_CI_WINDOW_HOURS
    wait_for_ci: int = 0
    notify_owners: bool = False


def read_inputs(profiles: list[str]) -> Inputs:
    def get(name: str, default: str = "") -> str:
        # action.yml maps input `pr-number` to INPUT_PR_NUMBER: composite actions get no INPUT_* of their own
        return core.get_input(name.replace("-", "_")) or default

    raw_number = get("pr-number")
    if raw_number and not (WHOLE_NUMBER.fullmatch(raw_number) and int(raw_number) > 0):
        raise InputError(f"input pr-number: '{raw_number}' is not a pull-request number")
    if not raw_number and os.environ.get("GITHUB_EVENT_NAME") == "workflow_dispatch":
        raise InputError("input pr-number: required on workflow_dispatch (the number of the pull request to review)")
    raw_cap = get("max-annotations", str(DEFAULT_MAX_ANNOTATIONS))
    if not WHOLE_NUMBER.fullmatch(raw_cap):
        raise InputError(f"input max-annotations: '{raw_cap}' is not a whole number (0 turns annotations off)")
    raw_budget = get("time-budget", f"{DEFAULT_MINUTES:g}")
    if not (MINUTES.fullmatch(raw_budget) and 0 < float(raw_budget) < math.inf):
        raise InputError(f"input time-budget: '{raw_budget}' is not a positive number of minutes")
    language = get("language", "en")
    if language not in LANGUAGES:
        raise InputError(f"input language: '{language}' is not one of {', '.join(LANGUAGES)}")
    profile = get("profile")
    if profile and profile not in profiles:
        raise InputError(f"input profile: '{profile}' is not one of {', '.join(sorted(profiles))} "
                         "(leave it empty to detect the profile)")
    config = get("config")
    if config and (config.startswith("/") or ".." in config.split("/") or "\\" in config):
        raise InputError(f"input config: '{config}' must be a path inside the repository, like .github/pr-review.yml")
    check_name = get("check-name", DEFAULT_CHECK_NAME)
    window, wait = get("ci-window-hours", str(DEFAULT_CI_WINDOW_HOURS)), get("wait-for-ci", "0")
    if not (WHOLE_NUMBER.fullmatch(window) and int(window) > 0):
        raise InputError(f"input ci-window-hours: '{window}' is not a positive whole number of hours")
    if not WHOLE_NUMBER.fullmatch(wait):
        raise InputError(f"input wait-for-ci: '{wait}' is not a whole number of minutes (0 does not wait)")
    if int(wait) >= float(raw_budget) * REVIEW_SHARE:  # the wait is part of the review, which the budget ends
        raise InputError(f"input wait-for-ci: {wait} minutes do not fit in the review's share of time-budget "
                         f"({float(raw_budget) * REVIEW_SHARE:g} of {raw_budget} minutes); raise time-budget")
    notify = get("notify-owners", "false").lower()
    if notify not in ("true", "false"):
        raise InputError(f"input notify-owners: '{notify}' is not true or false")
    workflows = tuple(w.strip() for w in get("ci-workflows").replace("\n", ",").split(",") if w.strip())
    return Inputs(token=get("github-token"), pr_number=int(raw_number) if raw_number else None,
                  base_ref=get("base-ref"), profile=profile, config=config, check_name=check_name,
                  max_annotations=int(raw_cap), language=language, time_budget=float(raw_budget), ci_workflows=workflows,
                  ci_window_hours=int(window), wait_for_ci=int(wait), notify_owners=notify == "true")


@record(frozen=True)
class Runner:
    """The GITHUB_* / RUNNER_* environment the step runs in."""

    repository: str
    api_url: str
    server_url: str
    summary_path: str | None
    out_dir: Path
    workspace: str

    @classmethod
    def from_env(cls, env: MutableMapping[str, str]) -> "Runner":
        temp = env.get("RUNNER_TEMP") or tempfile.gettempdir()
        return cls(repository=env.get("GITHUB_REPOSITORY", ""),
                   api_url=env.get("GITHUB_API_URL") or "https://api.github.com",
                   server_url=env.get("GITHUB_SERVER_URL") or "https://github.com",
                   summary_path=env.get("GITHUB_STEP_SUMMARY") or None,
                   out_dir=Path(temp) / "pr-review", workspace=env.get("GITHUB_WORKSPACE") or os.getcwd())


@record(frozen=True)
class Exits:
    """What the step leaves besides its log (a scrubbed stream): each is scrubbed on the way out."""

    runner: Runner
    scrub: Scrubber

    def file(self, name: str, text: str) -> Path:
        path = self.runner.out_dir / name
        path.write_text(self.scrub(text), encoding="utf-8")
        return path

    def summary(self, markdown: str) -> None:
        append_step_summary(self.runner.summary_path, self.scrub(markdown))

    def outputs(self, values: dict[str, str]) -> None:
        write_outputs({name: self.scrub(value) for name, value in values.items()})


def main(out: TextIO | None = None) -> int:
    """Run the action in the step's environment (which git, run from here, reads too); the log goes to
    `out`, standard output by default, where actions-toolkit writes its commands."""
    env = os.environ
    out = out or sys.stdout
    with redirect_stdout(out):
        try:
            inputs = read_inputs(list(load_profiles()))
        except InputError as exc:
            core.info(command("error", str(exc), title="pr-review: misconfigured input"))
            return 1
        scrub = Scrubber.for_token(inputs.token)
        mask(scrub.masks())  # before anything else is printed, and unscrubbed: the runner needs the values
    runner = Runner.from_env(env)
    runner.out_dir.mkdir(parents=True, exist_ok=True)
    exits = Exits(runner, scrub)
    budget_ends = time.monotonic() + inputs.time_budget * 60
    with redirect_stdout(ScrubbedStream(out, scrub)), redirect_stderr(ScrubbedStream(sys.stderr, scrub)):
        try:
            _run(inputs, runner, env, exits, budget_ends)
        except Exception as exc:  # a bug of ours must not fail the job of the repository under review
            log_group("pr-review internal error", traceback.format_exc())
            _not_reviewed(exits, "ERROR", f"pr-review {__version__} failed: {type(exc).__name__}: {exc}. "
                          "Please report this with the log above.", inputs.language)
    return 0


def _run(inputs: Inputs, runner: Runner, env: MutableMapping[str, str], exits: Exits, budget_ends: float) -> None:
    if "/" not in runner.repository:
        _not_reviewed(exits, "ERROR", "GITHUB_REPOSITORY is not set: this entry point runs inside GitHub "
                      "Actions; use `pr-review review` on a workstation", inputs.language)
        return
    owner, repo = runner.repository.split("/", 1)
    clients: list[GitHubClient] = []

    def client() -> GitHubClient:
        if not clients:
            clients.append(GitHubClient(runner.api_url, inputs.token, owner, repo, budget_ends=budget_ends))
        return clients[0]

    target: PullRequestTarget | None = None
    try:
        with time_limit(inputs.time_budget * 60 * REVIEW_SHARE):
            event = read_event(env)
            target = resolve_target(event, inputs.pr_number, client)
            authenticate_git(runner.workspace, runner.server_url, inputs.token, env)
            request, notes = prepare_checkout(target, runner.workspace, base_override=inputs.base_ref or None,
                                              profile=inputs.profile or None, repo_name=runner.repository,
                                              config_path=inputs.config or CONFIG_PATH)
            if inputs.token:
                request = replace(request, ci=_ci_request(inputs, env, client(), target))
            report = _review(request)
    except OutOfTime:
        reason = (f"the review did not finish within the time budget of {inputs.time_budget:g} minutes "
                  "(input time-budget)")
        _not_reviewed(exits, "ERROR", reason, inputs.language,
                      check_run_url=_post_unfinished(client(), target, inputs, reason, exits) if target else "")
        return
    except Unsupported as exc:
        _not_reviewed(exits, "SKIPPED", str(exc), inputs.language)
        return
    except (UserError, GitError) as exc:
        _not_reviewed(exits, "ERROR", str(exc), inputs.language)
        return
    except GitHubError as exc:
        _not_reviewed(exits, "ERROR", _github_reason(exc, "read the pull request"), inputs.language)
        return
    report.notes.extend(notes)
    _publish(report, target, inputs, client(), exits)


def _ci_request(inputs: Inputs, env: MutableMapping[str, str], client: GitHubClient,
                target: PullRequestTarget) -> CIRequest:
    run_id, retention = env.get("GITHUB_RUN_ID", ""), env.get("GITHUB_RETENTION_DAYS", "")
    return CIRequest(client, target.number, target.base_ref,
                     Selection(inputs.ci_workflows, int(run_id) if run_id.isdigit() else None,
                               env.get("GITHUB_WORKFLOW", "")),
                     window_hours=inputs.ci_window_hours, wait_minutes=inputs.wait_for_ci,
                     notify_owners=inputs.notify_owners, labels=tuple(target.info.labels),
                     retention_days=int(retention) if retention.isdigit() else RETENTION_DAYS)


def _review(request: ReviewRequest) -> Report:
    try:
        return review(request)
    except ValueError as exc:  # an unknown profile named by the repository's own config
        raise UserError(str(exc)) from exc


def _publish(report: Report, target: PullRequestTarget, inputs: Inputs, client: GitHubClient, exits: Exits) -> None:
    annotated, listed_only = split_by_cap(report.findings, inputs.max_annotations)
    publication = Publication(check_name=inputs.check_name, annotation_cap=inputs.max_annotations,
                              unannotated=listed_only)
    run_id = None
    already_annotated: frozenset[str] = frozenset()
    try:
        found = find_runs(client, inputs.check_name, report.head_sha, target.previous_head,
                          external_id(target.number))
        run_id, previous = found.run_id, found.previous
        if found.previous_unread is not None and target.previous_head:
            publication.previous_unread = target.previous_head
            publication.previous_unread_reason = _github_reason(found.previous_unread, "read its check runs")
        if previous is not None:
            publication.previous_sha = previous.head_sha
            publication.new_count, publication.gone_count = mark_new(report.findings, previous)
            if previous.run_id == run_id:
                already_annotated = previous.annotated
                current = {f.fingerprint for f in report.findings}
                publication.stale_annotations = len(previous.annotated - current)
    except GitHubError as exc:
        publication.fallback = _github_reason(exc, "read this commit's check runs", fork=target.fork)

    report_path = exits.file("report.json", render_json(report))
    sarif_path = exits.file("report.sarif", render_sarif(report, load_catalog()))

    if publication.fallback is None:
        to_send = [(f.fingerprint, _scrubbed_annotation(annotation(f, inputs.language), exits.scrub))
                   for f in annotated if f.fingerprint not in already_annotated]
        summary = render_summary(report, publication, inputs.language, limit=CHECK_SUMMARY_LIMIT)
        try:
            posted = post(client, name=inputs.check_name, head_sha=report.head_sha, run_id=run_id,
                          output_title=exits.scrub(title(report, inputs.language)), summary=exits.scrub(summary),
                          report=report, already_annotated=already_annotated, annotations=to_send,
                          external_id=external_id(target.number))
        except GitHubError as exc:
            publication.fallback = _github_reason(exc, "create the check run", fork=target.fork)
        else:
            publication.check_run_url = posted.url
            if posted.error is not None:
                publication.unposted = posted.unsent
                publication.unposted_reason = _github_reason(posted.error, "add them to the check run")
                log(f"pr-review: {posted.unsent} annotation(s) could not be posted: {publication.unposted_reason} "
                    "A re-run of this job adds them.")

    if publication.fallback is not None:
        log(f"pr-review: {publication.fallback} Falling back to workflow-command annotations and the job summary.")
        lines, publication.commands_left_out = annotation_commands(report.findings, inputs.language,
                                                                    inputs.max_annotations)
        for line in lines:
            core.info(line)
    room = step_summary_room(exits.runner.summary_path, JOB_SUMMARY_LIMIT)
    if room:
        exits.summary(render_summary(report, publication, inputs.language, limit=room,
                                     size=lambda s: len(s.encode("utf-8")), where="job"))
    counts = report.counts()
    exits.outputs({
        "verdict": report.verdict, "verdict-id": verdict_id(report.verdict), "high": str(counts["high"]),
        "medium": str(counts["medium"]), "low": str(counts["low"]), "report-path": str(report_path), "sarif-path": str(sarif_path),
        "check-run-url": publication.check_run_url or "",
        "ci-failures": str(sum(1 for c in report.ci if c.classification == "pr")),
    })
    log(f"pr-review: {title(report, 'en')} for PR #{target.number} at {report.head_sha[:12]}"
        + (f"; check run {publication.check_run_url}" if publication.check_run_url else ""))


def _scrubbed_annotation(item: dict[str, Any], scrub: Scrubber) -> dict[str, Any]:
    return {key: scrub(value) if key in ("title", "message") else value for key, value in item.items()}


def _github_reason(exc: GitHubError, doing: str, fork: bool = False) -> str:
    if exc.forbidden:
        why = ("this is a fork PR, and GitHub gives fork PRs a read-only token" if fork else
               "the token lacks a permission; the workflow needs `permissions: checks: write, contents: read, "
               "pull-requests: read, actions: read`")
        return f"GitHub refused to {doing} ({exc.status}: {exc.detail}): {why}."
    if exc.unavailable:
        return f"GitHub did not answer when asked to {doing} ({exc.detail})."
    return f"GitHub could not {doing} ({exc})."


def _post_unfinished(client: GitHubClient, target: PullRequestTarget, inputs: Inputs, reason: str,
                     exits: Exits) -> str:
    """The check run saying the review ran out of time, so that the PR shows it; '' when GitHub refuses."""
    try:
        return post_unfinished(client, name=inputs.check_name, head_sha=target.head_sha,
                               output_title=UNFINISHED_TITLE[inputs.language],
                               summary=exits.scrub(markdown_inline(reason)), external_id=external_id(target.number))
    except GitHubError as exc:
        log(f"pr-review: {_github_reason(exc, 'post a check run saying so', fork=target.fork)}")
        return ""


def _not_reviewed(exits: Exits, verdict: str, reason: str, language: str, check_run_url: str = "") -> None:
    """No review: say why in the log and the job summary, and still leave report.json and the outputs."""
    core.info(command("notice" if verdict == "SKIPPED" else "warning", reason, title="PR review not run"))
    exits.runner.out_dir.mkdir(parents=True, exist_ok=True)
    report_path = exits.file("report.json", json.dumps({
        "schema": 1, "engine_version": __version__, "verdict": verdict, "reason": reason,
        "counts": {"high": 0, "medium": 0, "low": 0}}, indent=2, ensure_ascii=False) + "\n")
    heading = {"en": "PR review not run", "zh": "未进行 PR 审查"}[language]
    if step_summary_room(exits.runner.summary_path, JOB_SUMMARY_LIMIT) > 4096:
        exits.summary(f"## ℹ️ {heading}\n\n{markdown_inline(reason)}\n")
    exits.outputs({"verdict": verdict, "verdict-id": verdict_id(verdict), "high": "0", "medium": "0", "low": "0",
                                       "report-path": str(report_path), "sarif-path": "", "check-run-url": check_run_url,
                                       "ci-failures": "0"})


if __name__ == "__main__":
    sys.exit(main())
