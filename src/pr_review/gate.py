"""The 🔴 gate and finding hygiene: catalog metadata, unproven-red downgrade, suppression, anchors, fingerprints."""
from __future__ import annotations

from .catalog import Catalog
from .git.diff import ChangedFile
from .lang.regex import lazy_re
from .model import Finding, NotChecked
from .source import Source

# Rules the gate itself decides (no detector): listed so the catalog's meta-tests know.
ENGINE_DECIDED = ("suppression-without-reason",)
SUPPRESSION = lazy_re(r"pr-review:\s*ignore\[([a-z0-9,\s-]+)\]\s*(.*)")


def finalize(findings: list[Finding], catalog: Catalog, profile: str, code_fallback: str | None,
             files: list[ChangedFile], source: Source, disabled: set[str], severities: dict[str, str],
             ) -> list[Finding]:
    """Complete, gate, suppress, anchor and fingerprint the detectors' findings."""
    by_path = {f.path: f for f in files}
    kept: list[Finding] = []
    seen: set[tuple[str, str, int | None]] = set()
    queue = list(findings)
    while queue:
        finding = queue.pop(0)
        rule = catalog.rules.get(finding.rule)
        key = (finding.rule, finding.path, finding.line)
        if rule is None or finding.rule in disabled or key in seen:
            continue
        seen.add(key)
        finding.code = rule.code_for(profile, code_fallback)
        finding.title = finding.title or rule.title
        finding.group = rule.group
        finding.severity = severities.get(finding.rule) or finding.severity or rule.severity  # type: ignore[assignment]
        if finding.severity == "high" and not (finding.trigger or "").strip():
            finding.severity = "medium"
            finding.notes.append("Downgraded from 🔴: no concrete triggering input was established.")
        lines = source.lines(finding.path) if finding.line else []
        if finding.line and 0 < finding.line <= len(lines):
            finding.line_text = lines[finding.line - 1]
            reason = _suppression(lines, finding.line, finding.rule)
            if reason is not None:
                if not reason:
                    queue.append(_reasonless(finding))
                continue
        finding.anchor = _anchor(finding, by_path.get(finding.path))
        finding.fingerprint = finding.compute_fingerprint()
        kept.append(finding)
    return kept


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
        rule="suppression-without-reason", path=finding.path, line=finding.line,
        problem=f"`pr-review: ignore[{finding.rule}]` has no reason, so the {finding.title.lower()} "
                "finding it hides cannot be audited.",
        action="Author must add a short reason after the ignore marker.",
    )


def _anchor(finding: Finding, changed: ChangedFile | None) -> str:
    if not finding.path:
        return "pr"  # about the PR's title or description, not a line
    if changed is None:
        return "elsewhere"
    if finding.line and finding.line in changed.added_lines:
        return "added"
    if finding.line and changed.in_hunk(finding.line):
        return "hunk"
    return "file"


def not_checked_files(files: list[ChangedFile]) -> list[NotChecked]:
    return [NotChecked(f.path, f.skipped) for f in files if f.skipped]
