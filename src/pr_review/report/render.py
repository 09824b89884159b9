"""Render a Report: terminal text, Markdown (jinja2), JSON (schema 1) and SARIF 2.1.0."""
from __future__ import annotations

import json
import re
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ..model import SEVERITY_ICON, Report
from .escape import markdown_code, markdown_inline

TEMPLATES = Path(__file__).parent / "templates"
VERDICT_ICON = {"LGTM": "✅", "NEEDS WORK": "⚠️", "BLOCK": "🔴"}
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def prose(text: str) -> str:
    """Engine-written prose that quotes PR code in backticks: escape the prose, re-emit code safely."""
    out, last = [], 0
    for match in CODE_SPAN.finditer(text or ""):
        out.append(markdown_inline(text[last:match.start()]))
        out.append(markdown_code(match.group(2)))
        last = match.end()
    out.append(markdown_inline((text or "")[last:]))
    return "".join(out)


def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=True)
    env.filters["md"] = markdown_inline
    env.filters["code"] = markdown_code
    env.filters["prose"] = prose
    env.globals["icon"] = SEVERITY_ICON
    env.globals["verdict_icon"] = VERDICT_ICON
    return env


def render_markdown(report: Report, language: str = "en", template: str = "summary") -> str:
    return environment().get_template(f"{template}.{language}.md.j2").render(r=report)


def render_json(report: Report) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


def render_text(report: Report, color: bool = False) -> str:
    def paint(code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if color else text

    colors = {"high": "31;1", "medium": "33;1", "low": "36"}
    lines = [
        paint("1", f"{VERDICT_ICON[report.verdict]} {report.verdict} (advisory)")
        + f"  profile={report.profile}  {report.merge_base[:12]}..{report.head_sha[:12]}",
        *report.summary,
    ]
    if not report.runtime_surface:
        lines.append(report.runtime_reason)
    if report.stale:
        lines.append(paint("33", report.stale))
    if report.findings:
        lines.append("")
    for f in report.findings:
        sev = f.severity or "medium"
        lines.append(paint(colors[sev], f"{SEVERITY_ICON[sev]} {f.location}  {f.title}")
                     + f"  [{f.tag}] ({f.code})")
        lines.append(f"    {f.problem}")
        if f.trigger:
            lines.append(f"    trigger: {f.trigger}")
        lines.append(f"    → {f.action}")
        lines.extend(f"    note: {n}" for n in f.notes)
    if report.core_files:
        lines.append("")
        lines.append("Backbone files:")
        lines.extend(f"  {c.path} TIER{c.tier} {c.status} -- {c.reason}" for c in report.core_files)
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
    lines.append(f"pr-review {report.engine_version}, {total:.2f}s")
    return "\n".join(lines) + "\n"
