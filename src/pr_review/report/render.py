"""Render a Report: terminal text, Markdown (jinja2), JSON (schema 1) and SARIF 2.1.0."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..lang.regex import lazy_re
from ..model import SEVERITY_ICON, ChecklistItem, Finding, NotChecked, Report
from .escape import (command_safe, json_safe, markdown_block, markdown_code, markdown_inline, markdown_url,
                     safe_text, terminal_safe)

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).parent / "templates"
BUDGET_REASON = "not analysed"  # how pipeline.apply_budget words a file left out
VERDICT_ICON = {"LGTM": "✅", "NEEDS WORK": "⚠️", "BLOCK": "🔴"}
CODE_SPAN = lazy_re(r"(`+)(.+?)\1")


def prose(text: str) -> str:
    """Engine-written prose that quotes PR code in backticks: escape the prose, re-emit code safely."""
    out, last = [], 0
    for match in CODE_SPAN.finditer(text or ""):
        out.append(markdown_inline(text[last:match.start()]))
        out.append(markdown_code(match.group(2)))
        last = match.end()
    out.append(markdown_inline((text or "")[last:]))
    return "".join(out)


def checklist_view(items: list[ChecklistItem]) -> dict[str, Any]:
    """What a reviewer works through (FIRE and OPEN items, one per rule) and the CLEAR items folded into
    one line per detector, so the checklist reads in seconds."""
    seen: set[str] = set()
    open_items: list[ChecklistItem] = []
    clear: dict[str, list[str]] = {}
    for item in items:
        if item.rule in seen:
            continue
        seen.add(item.rule)
        if item.verdict == "CLEAR":
            detector = item.reason.split(" read ", 1)[0] if " read " in item.reason else "detectors"
            clear.setdefault(detector, []).append(item.title)
        else:
            open_items.append(item)
    return {"to_review": open_items, "cleared": sorted(clear.items())}


def finding_groups(findings: list[Finding]) -> list[dict[str, Any]]:
    """Findings of one rule that say the same thing at several places read as one: the first in full, each
    other place as one line under it. A 🔴 finding stays apart, since each carries its own trigger."""
    groups: list[dict[str, Any]] = []
    by_text: dict[tuple, dict[str, Any]] = {}
    for finding in findings:
        key = None if finding.trigger else (finding.rule, finding.severity, finding.tag, finding.impact,
                                            finding.action, tuple(finding.notes))
        if key in by_text:
            by_text[key]["also"].append(finding)
            continue
        group = {"lead": finding, "also": []}
        groups.append(group)
        if key is not None:
            by_text[key] = group
    return groups


def not_checked_view(items: list[NotChecked]) -> dict[str, Any]:
    """Files left out by the analysis budget are counted in one line; every other unread file is named."""
    budget = [n for n in items if n.reason.startswith(BUDGET_REASON)]
    return {"listed": [n for n in items if not n.reason.startswith(BUDGET_REASON)], "over_budget": len(budget),
            "budget_reason": budget[0].reason.split(": ", 1)[-1] if budget else ""}


@lru_cache(maxsize=1)
def _translations() -> dict[str, dict[str, str]]:
    from ..catalog import load_catalog

    return {rule.id: rule.zh for rule in load_catalog().rules.values() if rule.zh}


def rule_zh(rule_id: str) -> dict[str, str]:
    """A shipped rule's title, impact and action in Simplified Chinese; empty for a rule without them (a
    repository's own rule), whose English text the zh templates then show."""
    return {"title": "", "impact": "", "action": "", **_translations().get(rule_id, {})}


def environment() -> Environment:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined  # only Markdown needs it

    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=True,
                      finalize=terminal_safe)  # every value a template prints, PR text included
    env.filters["md"] = markdown_inline
    env.filters["link"] = markdown_url
    env.filters["block"] = markdown_block
    env.filters["code"] = markdown_code
    env.filters["prose"] = prose
    env.globals["icon"] = SEVERITY_ICON
    env.globals["verdict_icon"] = VERDICT_ICON
    env.globals["checklist_view"] = checklist_view
    env.globals["not_checked_view"] = not_checked_view
    env.globals["finding_groups"] = finding_groups
    env.globals["rule_zh"] = rule_zh
    return env


def render_markdown(report: Report, language: str = "en", template: str = "summary") -> str:
    return command_safe(environment().get_template(f"{template}.{language}.md.j2").render(r=report))


def render_json(report: Report) -> str:
    return json_safe(json.dumps(report.to_dict(), indent=2, ensure_ascii=False)) + "\n"


def timing_lines(report: Report) -> list[str]:
    """Seconds per stage, then per detector and evidence collector, slowest first."""
    lines = ["Timings (s): " + ", ".join(f"{stage} {s:.2f}" for stage, s in report.timings.items())]
    for step, seconds in report.step_timings.items():
        slowest = [(name, s) for name, s in sorted(seconds.items(), key=lambda kv: -kv[1]) if s >= 0.001]
        quick = len(seconds) - len(slowest)
        lines.append(f"  {step}: " + ", ".join([f"{name} {s:.3f}" for name, s in slowest]
                                              + ([f"{quick} more under 1 ms"] if quick else [])))
    return lines


def render_text(report: Report, color: bool = False, verbose: bool = False) -> str:
    lines: list[str] = []
    styles: dict[int, str] = {}  # line index → colour of the whole line, applied after sanitising

    def add(text: str, style: str) -> None:
        styles[len(lines)] = style
        lines.append(text)

    colors = {"high": "31;1", "medium": "33;1", "low": "36"}
    add(f"{VERDICT_ICON[report.verdict]} {report.verdict} (advisory)"
        f"  profile={report.profile}  {report.merge_base[:12]}..{report.head_sha[:12]}", "1")
    lines.extend(report.summary)
    if not report.runtime_surface:
        lines.append(report.runtime_reason)
    if report.stale:
        add(report.stale, "33")
    if report.findings:
        lines.append("")
    for f in report.findings:
        sev = f.severity or "medium"
        add(f"{SEVERITY_ICON[sev]} {f.location}  {f.title}  [{f.tag}] ({f.code})", colors[sev])
        lines.append(f"    {f.problem}")
        if f.trigger:
            lines.append(f"    trigger: {f.trigger}")
        lines.append(f"    → {f.action}")
        lines.extend(f"    note: {n}" for n in f.notes)
    if report.core_files:
        lines.append("")
        lines.append("Backbone files:")
        lines.extend(f"  {c.path} TIER{c.tier} {c.status} -- {c.reason}" for c in report.core_files)
    if report.ci or report.ci_notes:
        lines.append("")
        lines.append("CI failures:")
        for c in report.ci:
            lines.append(f"  [{c.classification:8}] {c.name} ({c.workflow or 'external'}, {c.conclusion}) — {c.evidence}")
            lines.extend(f"      main: {link}" for link in c.links)
            if c.url:
                lines.append(f"      {c.url}")
            lines.extend(f"      | {line}" for line in c.excerpt.splitlines())
        lines.extend(f"  note: {n}" for n in report.ci_notes)
    for o in report.owners:
        lines.append(f"Owner sign-off: {o.path} (Tier {o.tier}) — {o.name}" + (f" ({o.login})" if o.login else "")
                     + f", {o.commits} of {o.total} commit(s)")
    lines.append("")
    fired = sum(1 for c in report.checklist if c.verdict == "FIRE")
    lines.append(f"Checklist: {len(report.checklist)} derived rule(s), {fired} fired; families: "
                 + (", ".join(report.stats.get("families", [])) or "none"))
    for c in report.checklist:
        lines.append(f"  [{c.verdict:5}] {c.code:6} {c.title}" + (f" — {c.reason}" if c.reason else ""))
    if report.not_checked:
        lines.append("Not checked:")
        lines.extend(f"  {n.path}: {n.reason}" for n in report.not_checked)
    lines.extend(f"note: {n}" for n in report.notes)
    total = sum(report.timings.values())
    if verbose:
        lines.extend(timing_lines(report))
    lines.append(f"pr-review {report.engine_version}, {total:.2f}s")
    safe = [safe_text(line) for line in lines]  # PR text shows as text, never as a command or an escape
    if color:
        safe = [f"\033[{styles[i]}m{line}\033[0m" if i in styles else line for i, line in enumerate(safe)]
    return "\n".join(safe) + "\n"
