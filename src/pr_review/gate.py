"""The 🔴 gate and finding hygiene: catalog metadata, unproven-red downgrade, suppression, anchors, fingerprints."""
from __future__ import annotations

import re

from .catalog import Catalog
from .git.diff import ChangedFile
from .model import Finding, NotChecked
from .source import Source

SUPPRESSION = re.compile(r"pr-review:\s*ignore\[([a-z0-9,\s-]+)\]\s*(.*)")


def finalize(findings: list[Finding], catalog: Catalog, profile: str, code_fallback: str | None,
             files: list[ChangedFile], source: Source, disabled: set[str], severities: dict[str, str],
             ) -> tuple[list[Finding], list[Finding]]:
    """Return (kept findings, suppressions-without-reason findings), each complete and fingerprinted."""
    by_path = {f.path: f for f in files}
    kept: list[Finding] = []
    seen: set[tuple[str, str, int | None]] = set()
    reasonless: list[Finding] = []
    for finding in findings:
        rule = catalog.rules.get(finding.rule)
        if rule is None or finding.rule in disabled:
            continue
        key = (finding.rule, finding.path, finding.line)
        if key in seen:
            continue
        seen.add(key)
        finding.code = rule.code_for(profile, code_fallback)
        finding.title = finding.title or rule.title
        finding.severity = severities.get(finding.rule) or finding.severity or rule.severity  # type: ignore[assignment]
        if finding.severity == "high" and not (finding.trigger or "").strip():
            finding.severity = "medium"
            finding.notes.append("Downgraded from 🔴: no concrete triggering input was established.")
        lines = source.lines(finding.path) if finding.line else []
        if finding.line and 0 < finding.line <= len(lines):
            finding.line_text = lines[finding.line - 1]
            suppression = _suppression(lines, finding.line, finding.rule)
            if suppression is not None:
                if not suppression.strip():
                    reasonless.append(_reasonless(finding))
                continue
        changed = by_path.get(finding.path)
        finding.anchor = _anchor(finding, changed)
        finding.fingerprint = finding.compute_fingerprint()
        kept.append(finding)
    for extra in reasonless:
        extra.code = catalog.rules[extra.rule].code_for(profile, code_fallback) if extra.rule in catalog.rules else ""
        extra.fingerprint = extra.compute_fingerprint()
    return kept, reasonless


def _suppression(lines: list[str], line: int, rule: str) -> str | None:
    """The reason text of an `ignore[rule]` on the line or the line above, or None when not suppressed."""
    for index in (line - 1, line - 2):
        if 0 <= index < len(lines):
            match = SUPPRESSION.search(lines[index])
            if match and rule in {r.strip() for r in match.group(1).split(",")}:
                return match.group(2).strip()
    return None


def _reasonless(finding: Finding) -> Finding:
    return Finding(
        rule="suppression-without-reason", path=finding.path, line=finding.line, severity="low",
        problem=f"`pr-review: ignore[{finding.rule}]` has no reason, so the finding it hides cannot be audited.",
        action="Author must add a short reason after the ignore marker.",
        title="Suppression without a reason", line_text=finding.line_text,
    )


def _anchor(finding: Finding, changed: ChangedFile | None) -> str:
    if changed is None:
        return "elsewhere"
    if finding.line and finding.line in changed.added_lines:
        return "added"
    if finding.line and changed.in_hunk(finding.line):
        return "hunk"
    return "file"


def not_checked_files(files: list[ChangedFile]) -> list[NotChecked]:
    return [NotChecked(f.path, f.skipped) for f in files if f.skipped]
