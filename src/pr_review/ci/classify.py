"""Decide, for every failed or unfinished job and check on the PR head, whether the PR caused it —
from the records `collect` gathered, without a request of its own.

Classes, each with the evidence that decided it:
  pending   not finished;
  flaky     another attempt of the same run passed, or the default branch alternates pass/fail;
  stale     the log is gone (404/410) or the run is older than log retention: rebase and re-run;
  infra     a known infrastructure signature (profile data) in the job, step or log, or a docs build
            failing on a PR that touches no documentation source;
  baseline  the default branch fails the same job in the window;
  pr        the default branch passes it and nothing above explains it: a ⚠️ finding;
  unknown   not enough data, said as such.
"""
from __future__ import annotations

import re

from ..git.diff import ChangedFile
from ..model import CIVerdict, Finding, field, record
from ..profiles import Profile
from . import logs as logtext
from .collect import EXCERPT_CHARS, EXCERPT_CHARS_TOTAL, CIData, Check, Job, MainRun, failed_jobs

RULE = "ci-failure-classification"
DOCS_CHECK = re.compile(r"(?i)readthedocs|\bdocs?\b|sphinx|mkdocs|documentation")
DOCS_SOURCE = re.compile(r"(?i)^docs?/|\.(?:rst|md|ipynb)$|(?:^|/)(?:\.readthedocs\.ya?ml|mkdocs\.ya?ml|conf\.py)$")
LINKS_SHOWN = 3


@record
class Classified:
    verdicts: list[CIVerdict] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def classify(data: CIData, files: list[ChangedFile], profile: Profile, secrets: tuple[str, ...] = ()) -> Classified:
    out = Classified()
    signatures = [(re.compile(s["pattern"]), s["reason"]) for s in profile.data.get("ci_infra_signatures") or []]
    docs_touched = any(DOCS_SOURCE.search(f.path) for f in files)
    excerpt_room = EXCERPT_CHARS_TOTAL
    for job in _pending(data.jobs):
        out.verdicts.append(CIVerdict(job.name, job.status, "pending", f"{job.workflow}: {job.status}, not finished",
                                      job.url, workflow=job.workflow))
    for job in _flaky_by_attempt(data.jobs):
        out.verdicts.append(CIVerdict(job.name, job.conclusion or "", "flaky",
                                      f"attempt {job.attempt} failed, a later attempt of run {job.run_id} passed",
                                      job.url, workflow=job.workflow))
    for key, job in failed_jobs(data.jobs).items():
        verdict, finding = _job_verdict(job, data, data.main_jobs.get(key), signatures, files, secrets, excerpt_room)
        excerpt_room -= len(verdict.excerpt)
        out.verdicts.append(verdict)
        if finding is not None:
            out.findings.append(finding)
    for check in data.checks:
        if check.pending:
            out.verdicts.append(CIVerdict(check.name, check.state, "pending", f"{check.kind} not finished", check.url))
        elif check.failed:
            verdict = _check_verdict(check, data.main_checks.get(check.name), signatures, docs_touched)
            out.verdicts.append(verdict)
            if verdict.classification == "pr":
                out.findings.append(_finding(verdict, None, None))
    return out


def _pending(jobs: list[Job]) -> list[Job]:
    latest: dict[tuple[int, str], Job] = {}
    for job in sorted(jobs, key=lambda j: j.attempt):
        latest[(job.run_id, job.name)] = job
    return [j for j in latest.values() if j.status != "completed"]


def _flaky_by_attempt(jobs: list[Job]) -> list[Job]:
    passed = {(j.run_id, j.name) for j in jobs if j.status == "completed" and j.conclusion == "success"}
    failed: dict[tuple[int, str], Job] = {}
    for job in sorted(jobs, key=lambda j: j.attempt):
        if job.failed and (job.run_id, job.name) in passed:
            failed[(job.run_id, job.name)] = job
    return list(failed.values())


def _job_verdict(job: Job, data: CIData, main: list[MainRun] | None, signatures: list[tuple[re.Pattern[str], str]],
                 files: list[ChangedFile], secrets: tuple[str, ...], excerpt_room: int) -> tuple[CIVerdict, Finding | None]:
    def verdict(cls: str, evidence: str, links: list[str] | None = None, excerpt: str = "") -> CIVerdict:
        return CIVerdict(job.name, job.conclusion or "", cls, evidence, job.url, workflow=job.workflow,
                         links=links or [], excerpt=excerpt)

    log = data.logs.get(job.id)
    step = f"step “{job.failed_step}”" if job.failed_step else "no failed step recorded"
    if log is not None and log.state == "gone":
        return verdict("stale", f"{step}; {log.detail}: the result is too old to judge against today's "
                                "default branch — ask for a rebase and a fresh run"), None
    lines = logtext.step_lines(log.lines, job.step_started, job.step_completed) if log and log.state == "read" else []
    for pattern, reason in signatures:
        for text in (job.name, job.failed_step, *(line.text for line in lines)):
            match = pattern.search(text)
            if match:
                quoted = logtext.redact(text.strip()[:200], secrets)
                return verdict("infra", f"{reason} (matched “{quoted}”)"), None
    if main is None:
        return verdict("unknown", f"{step}; the default branch's runs of {job.workflow} were not read "
                                  "(see the note on this classification)"), None
    failures = [m for m in main if m.conclusion in ("failure", "timed_out", "cancelled")]
    passes = [m for m in main if m.conclusion == "success"]
    links = [m.url for m in (failures or main)[:LINKS_SHOWN]]
    window = f"±{data.window_hours} h"
    if not main:
        return verdict("unknown", f"{step}; no completed push run of {job.workflow} on {data.default_branch} "
                                  f"with this job in the {window} window to compare with"), None
    if failures and not passes:
        return verdict("baseline", f"{step}; {data.default_branch} fails the same job too: {len(failures)} of "
                                   f"{len(main)} run(s) in the {window} window", links), None
    if failures:
        return verdict("flaky", f"{step}; {data.default_branch} alternates: {len(failures)} failed, {len(passes)} "
                                f"passed of {len(main)} run(s) in the {window} window", links), None
    if log is None or log.state != "read":
        why = log.detail if log else "the log was not read"
        return verdict("unknown", f"{step}; {data.default_branch} passes it in {len(passes)} run(s), but {why}, "
                                  "so no infrastructure signature could be ruled out", links), None
    index = logtext.first_error(lines)
    excerpt = logtext.excerpt(lines, index, min(EXCERPT_CHARS, max(excerpt_room, 0)), secrets) \
        if index is not None and excerpt_room > 0 else ""
    named = logtext.named_paths(lines[max(0, (index or 0) - logtext.CONTEXT_LINES):] if index is not None else lines,
                                [f.path for f in files if f.status != "deleted"])
    cut = f" ({log.detail})" if log.detail else ""
    evidence = (f"{step}; {data.default_branch} passes the same job in {len(passes)} of {len(main)} run(s) in the "
                f"{window} window and no infrastructure signature matches the log{cut}")
    result = verdict("pr", evidence, links, excerpt)
    path, line = named[0] if named else (None, None)
    return result, _finding(result, path, line)


def _check_verdict(check: Check, main: list[MainRun] | None, signatures: list[tuple[re.Pattern[str], str]],
                   docs_touched: bool) -> CIVerdict:
    def verdict(cls: str, evidence: str, links: list[str] | None = None) -> CIVerdict:
        return CIVerdict(check.name, check.state, cls, evidence, check.url, links=links or [])

    what = f"external {check.kind}" + (f" (“{check.detail[:120]}”)" if check.detail else "")
    docs = bool(DOCS_CHECK.search(check.name))
    if docs and not docs_touched:
        return verdict("infra", f"{what}: a documentation build failing on a PR that changes no documentation "
                                "source; it cannot have been broken by this PR's content")
    for pattern, reason in signatures:
        # A docs check's name says what it builds, not why it failed: on a docs PR only its message counts.
        if (not docs and pattern.search(check.name)) or pattern.search(check.detail):
            return verdict("infra", f"{what}: {reason}")
    if main is None:
        return verdict("unknown", f"{what}; the same check on the default branch was not read")
    failures = [m for m in main if m.conclusion in ("failure", "error", "timed_out")]
    passes = [m for m in main if m.conclusion == "success"]
    links = [m.url for m in (failures or main)[:LINKS_SHOWN] if m.url]
    if not main:
        return verdict("unknown", f"{what}; it did not report on the recent default-branch commits")
    if failures and not passes:
        return verdict("baseline", f"{what}; it fails on {len(failures)} of {len(main)} recent default-branch "
                                   "commit(s) too", links)
    if failures:
        return verdict("flaky", f"{what}; on recent default-branch commits it failed {len(failures)} and passed "
                                f"{len(passes)} time(s)", links)
    return verdict("pr", f"{what}; it passes on {len(passes)} recent default-branch commit(s)", links)


def _finding(verdict: CIVerdict, path: str | None, line: int | None) -> Finding:
    where = f" The log names `{path}`" + (f" line {line}" if line else "") + "." if path else ""
    return Finding(
        rule=RULE, path=path or "", line=line, severity="medium", tag="inferred",
        problem=f"CI {verdict.conclusion}: “{verdict.name}”" + (f" in {verdict.workflow}" if verdict.workflow else "")
                + f" fails on this PR while the default branch passes it.{where}",
        impact="A failure the default branch does not have is most likely caused by this PR.",
        action="Author should read the failing job's log" + (" (excerpt in the CI table)" if verdict.excerpt else "")
               + " and fix the cause before merging.",
        notes=[verdict.evidence],
    )
