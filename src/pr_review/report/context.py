"""The review-context artifact: exactly the derived rules' full text plus evidence and tiers.

It is the deterministic half of the seeds' workflow, written for the human or language-model
reviewer who does the other half (`pr-review review --context-out DIR`).
"""
from __future__ import annotations

from pathlib import Path

from ..catalog import Catalog, Rule
from ..model import Report
from .escape import safe_text


def format_rule(rule: Rule, code: str) -> str:
    codes = ", ".join(f"{p} {c}" for p, c in sorted(rule.codes.items())) or "none"
    lines = [
        f"{rule.title}",
        f"  id: {rule.id}   code: {code}   codes: {codes}",
        f"  group: {rule.group}   default severity: {rule.severity}   decided by: {rule.detector}",
        f"  stage: {rule.stage}" + (f" (measured {m['true_findings']}/{m['read']} true on {m['corpus']}, {m['date']}"
                                    + (f"; annotates only under profile: {', '.join(m['profiles'])}" if m.get("profiles") else "")
                                    + ")"
                                    if (m := rule.measurement) else " (not annotated until measured ≥ 85 % true)"),
        "",
        f"What: {rule.summary}",
        f"Fires on: {rule.trigger}",
        f"Before firing, rule out: {rule.fp_check}",
        f"Impact: {rule.impact}",
        f"Action: {rule.action}",
    ]
    if rule.examples:
        lines.append("Examples:")
        lines += [f"  {e['ref']}{' (' + e['kind'] + ')' if e.get('kind') else ''}: {e['note']}" for e in rule.examples]
    return "\n".join(lines)



def write_context(report: Report, catalog: Catalog, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def put(name: str, lines: list[str]) -> None:
        path = directory / name
        path.write_text(safe_text("\n".join(lines).rstrip("\n")) + "\n", encoding="utf-8")
        written.append(path)

    blocks: list[str] = [f"# Rules derived for {report.merge_base[:12]}..{report.head_sha[:12]} "
                         f"({len(report.checklist)} of {len(catalog.rules)}, profile {report.profile})", ""]
    for item in report.checklist:
        rule = catalog.rules[item.rule]
        blocks += [format_rule(rule, item.code), f"Derived by: {'; '.join(item.derived_by[:5])}", ""]
    put("rules_expanded.txt", blocks)
    put("checklist.txt", [f"{c.code} {c.rule} {c.verdict} -- {c.reason or 'to adjudicate: ' + '; '.join(c.derived_by[:2])}"
                          for c in report.checklist] or ["NONE -- no rule derived"])
    put("core_files.txt", [f"{c.path} TIER{c.tier} {c.status} -- {c.reason}" for c in report.core_files]
        or report.evidence.get("backbone") or ["NONE -- no backbone file touched"])
    put("findings.txt", [f"{f.severity} {f.code} {f.rule} {f.path}:{f.line} [{f.tag}] {f.problem}"
                         + (f" | trigger: {f.trigger}" if f.trigger else "") for f in report.findings]
        or ["no detector finding"])
    for name, lines in sorted(report.evidence.items()):
        put(f"evidence_{name}.txt", lines or [f"{name}: nothing found"])
    put("not_checked.txt", [f"{n.path}: {n.reason}" for n in report.not_checked] or ["everything in the diff was read"])
    put("triage.txt", [report.runtime_reason if not report.runtime_surface else "runtime surface: yes",
                       report.stale or "applies to the base tip (or the base tip was not given)"])
    return written
