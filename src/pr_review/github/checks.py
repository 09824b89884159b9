"""The check run: one per head commit and name, conclusion `neutral`, annotations in batches.

A re-run on the same head updates the run it finds instead of adding another. The run's
`output.text` carries, in an HTML comment, the fingerprints of the findings it reported and of
those it annotated, so the next review can say what is new and avoid annotating twice (annotations
sent to a run are appended, and GitHub offers no way to delete them).
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

from ..model import Finding, Report, record
from .client import GitHubClient, GitHubError

CONCLUSION = "neutral"  # advisory: never a red X, never a merge gate
LEVEL = {"high": "failure", "medium": "warning", "low": "notice"}
ANNOTATIONS_PER_REQUEST = 50
ANNOTATION_TITLE_LIMIT = 255  # characters
ANNOTATION_MESSAGE_LIMIT = 60_000  # bytes; GitHub allows 64 KB
TEXT_LIMIT = 65535
STATE = re.compile(r"<!-- pr-review:state (\{.*?\}) -->", re.S)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

LABELS = {
    "en": {"trigger": "Triggered by", "impact": "Impact", "action": "Action", "verified": "verified",
           "inferred": "inferred", "advisory": "advisory",
           "no_line": "Anchored to line 1: the finding has no line of its own in the head commit.",
           "outside": "This line is outside the PR's changes.",
           "elsewhere": "This file is not changed by the PR."},
    "zh": {"trigger": "触发输入", "impact": "影响", "action": "行动", "verified": "已验证", "inferred": "推测",
           "advisory": "建议性",
           "no_line": "标注在第 1 行：该意见在 head 提交中没有对应的行。",
           "outside": "该行不在本 PR 的改动范围内。",
           "elsewhere": "本 PR 没有改动这个文件。"},
}
VERDICT_ICON = {"LGTM": "✅", "NEEDS WORK": "⚠️", "BLOCK": "🔴"}


@record(frozen=True)
class PreviousReview:
    """A check run of ours found for this PR, and what it recorded."""

    run_id: int
    head_sha: str
    findings: frozenset[str]
    annotated: frozenset[str]


def title(report: Report, language: str) -> str:
    counts = report.counts()
    advisory = LABELS[language]["advisory"]
    verdict = f"{VERDICT_ICON[report.verdict]} {report.verdict} ({advisory})" if language == "en" \
        else f"{VERDICT_ICON[report.verdict]} {report.verdict}（{advisory}）"
    return f"{verdict} · 🔴 {counts['high']} · ⚠️ {counts['medium']} · 📝 {counts['low']}"


def plain(text: str) -> str:
    """Annotation text is shown verbatim (no Markdown); drop control characters only."""
    return CONTROL.sub(" ", str(text))


def _zh(finding: Finding, language: str) -> dict[str, str]:
    """The rule's catalog text in Chinese for a zh review, as the zh summary shows it (empty otherwise)."""
    if language != "zh":
        return {}
    from ..report.render import rule_zh

    return rule_zh(finding.rule)


def annotation_message(finding: Finding, language: str) -> str:
    labels = LABELS[language]
    zh = _zh(finding, language)
    impact, action = zh.get("impact") or finding.impact, zh.get("action") or finding.action
    parts = [finding.problem]
    if finding.trigger:
        parts.append(f"{labels['trigger']}: {finding.trigger}")
    if impact:
        parts.append(f"{labels['impact']}: {impact}")
    if action:
        parts.append(f"{labels['action']}: {action}")
    parts.extend(finding.notes)
    if finding.path:  # a finding about the PR description has no location to explain
        parts.append(_where(finding, labels))
    message = plain("\n".join(p for p in parts if p))
    encoded = message.encode("utf-8")
    if len(encoded) > ANNOTATION_MESSAGE_LIMIT:
        message = encoded[:ANNOTATION_MESSAGE_LIMIT - 3].decode("utf-8", "ignore") + "…"
    return message


def _where(finding: Finding, labels: dict[str, str]) -> str:
    if not finding.line:
        return labels["no_line"]
    return {"elsewhere": labels["elsewhere"], "file": labels["outside"]}.get(finding.anchor, "")


def annotation_title(finding: Finding, language: str) -> str:
    name = _zh(finding, language).get("title") or finding.title or finding.rule
    text = plain(f"{name} [{LABELS[language][finding.tag]}]").replace("\n", " ")
    return text if len(text) <= ANNOTATION_TITLE_LIMIT else text[:ANNOTATION_TITLE_LIMIT - 1] + "…"


def annotation(finding: Finding, language: str) -> dict[str, Any]:
    start = finding.line or 1
    end = finding.end_line if finding.line and finding.end_line and finding.end_line >= start else start
    return {
        "path": finding.path,  # repo-relative with '/', exactly as git names it, or it will not attach
        "start_line": start,
        "end_line": end,
        "annotation_level": LEVEL[finding.severity or "medium"],
        "title": annotation_title(finding, language),
        "message": annotation_message(finding, language),
    }


def split_by_cap(findings: list[Finding], cap: int) -> tuple[list[Finding], list[Finding]]:
    """(annotated, over the cap and listed in the summary instead); findings arrive sorted by severity.
    A finding about the PR description has no file to sit on and is in the summary only."""
    on_files = [f for f in findings if f.path]
    return on_files[:cap], on_files[cap:]


def batches(items: list[Any], size: int = ANNOTATIONS_PER_REQUEST) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


# -- state kept on the run -------------------------------------------------------------------

def state_text(report: Report, annotated: Iterable[str]) -> str:
    """`output.text`: an invisible record of this review for the next one."""
    findings = [f.fingerprint for f in report.findings]
    marks = sorted(set(annotated))
    while True:
        text = "<!-- pr-review:state " + json.dumps(
            {"v": 1, "head": report.head_sha, "findings": findings, "annotated": marks},
            separators=(",", ":")) + " -->"
        if len(text) <= TEXT_LIMIT:
            return text
        # Thousands of findings: keep the most severe; the rest count as new next time.
        findings, marks = findings[: len(findings) * 3 // 4], marks[: len(marks) * 3 // 4]


def read_state(run: Any) -> tuple[frozenset[str], frozenset[str]] | None:
    text = ((run.get("output") or {}).get("text")) or ""
    match = STATE.search(text)
    if not match:
        return None
    try:
        data = json.loads(match.group(1))
        return frozenset(map(str, data["findings"])), frozenset(map(str, data["annotated"]))
    except (ValueError, KeyError, TypeError):
        return None


def external_id(pr_number: int) -> str:
    """What our check runs carry in `external_id`: the Actions job running this action has a check run
    of its own, often with the same name, which the token may not complete."""
    return f"pr-review:{pr_number}"


@record(frozen=True)
class FoundRuns:
    run_id: int | None  # our run on this head, to update
    previous: PreviousReview | None  # the review to compare with
    previous_unread: GitHubError | None = None  # the previous head's runs could not be read


def find_runs(client: GitHubClient, name: str, head_sha: str, previous_head: str | None, ours: str) -> FoundRuns:
    """Our runs on this head and, failing a review there, on the head before the push; runs are ours
    by `external_id`, never by name alone. The previous head only marks what is new, so GitHub
    refusing that lookup (422 for a commit force-pushed away) leaves the review to post unmarked."""
    existing: int | None = None
    for run in _own_runs(client, name, head_sha, ours):
        existing = existing or run["id"]
        state = read_state(run)
        if state is not None:
            return FoundRuns(existing, PreviousReview(run["id"], head_sha, *state))
    if not previous_head or previous_head == head_sha:
        return FoundRuns(existing, None)
    try:
        runs = _own_runs(client, name, previous_head, ours)
    except GitHubError as exc:
        if exc.unavailable:
            raise
        return FoundRuns(existing, None, exc)
    states = ((run, read_state(run)) for run in runs)
    return FoundRuns(existing, next((PreviousReview(run["id"], previous_head, *state)
                                     for run, state in states if state is not None), None))


def post_unfinished(client: GitHubClient, *, name: str, head_sha: str, output_title: str, summary: str,
                    external_id: str) -> str:
    """The URL of a neutral run on this head saying the review did not finish. A run of ours already
    there holds an earlier review of this very head and is left as it is; a new one records no state,
    so the next review to finish updates it and annotates in full."""
    for run in _own_runs(client, name, head_sha, external_id):
        return run.get("html_url") or ""
    run = client.create_check_run({"name": name, "head_sha": head_sha, "status": "completed",
                                   "conclusion": CONCLUSION, "external_id": external_id,
                                   "output": {"title": output_title, "summary": summary}})
    return run.get("html_url") or ""


def _own_runs(client: GitHubClient, name: str, sha: str, ours: str) -> list[dict[str, Any]]:
    return [run for run in client.check_runs_for_ref(sha, name)
            if run["name"] == name and run.get("external_id") == ours]


def mark_new(findings: list[Finding], previous: PreviousReview) -> tuple[int, int]:
    """Set `Finding.new`; return (new, gone) counts."""
    current = set()
    for finding in findings:
        finding.new = finding.fingerprint not in previous.findings
        current.add(finding.fingerprint)
    return sum(1 for f in findings if f.new), len(previous.findings - current)


# -- posting ------------------------------------------------------------------------------

@record(frozen=True)
class Posted:
    url: str
    unsent: int = 0  # annotations not posted because a batch failed
    error: GitHubError | None = None  # why


def post(client: GitHubClient, *, name: str, head_sha: str, run_id: int | None, output_title: str,
         summary: str, report: Report, already_annotated: frozenset[str],
         annotations: list[tuple[str, dict[str, Any]]], external_id: str) -> Posted:
    """Create (or update) the completed, neutral run, then append the remaining annotation batches.

    `annotations` are (fingerprint, annotation) pairs. Each request records in the run's state only
    the annotations GitHub has taken so far, so after a failed batch the next review sends the rest.
    Failing the first request raises (there is no run); failing a later one is reported in `Posted`.
    """
    chunks = batches(annotations)
    taken = set(already_annotated)

    def output(chunk: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        # Each update appends its annotations; title and summary must come along with them.
        return {"title": output_title, "summary": summary,
                "text": state_text(report, taken | {fingerprint for fingerprint, _ in chunk}),
                "annotations": [item for _, item in chunk]}

    first = {"status": "completed", "conclusion": CONCLUSION, "external_id": external_id, "output": output(chunks[0])}
    if run_id is None:
        run = client.create_check_run({"name": name, "head_sha": head_sha, **first})
    else:
        run = client.update_check_run(run_id, first)
    url = run.get("html_url") or ""
    for index, chunk in enumerate(chunks):
        if index:
            try:
                client.update_check_run(run["id"], {"output": output(chunk)})
            except GitHubError as exc:
                return Posted(url, sum(len(rest) for rest in chunks[index:]), exc)
        taken.update(fingerprint for fingerprint, _ in chunk)
    return Posted(url)
