"""Render a Report: terminal text, Markdown (jinja2), JSON (schema 1) and SARIF 2.1.0."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from ..catalog import Catalog
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


SARIF_LEVEL = {"high": "error", "medium": "warning", "low": "note"}


def render_sarif(report: Report, catalog: Catalog) -> str:
    used = sorted({f.rule for f in report.findings if f.path})
    rules: list[dict[str, Any]] = []
    for rule_id in used:
        rule = catalog.rules.get(rule_id)
        if rule is None:
            rules.append({"id": rule_id, "shortDescription": {"text": rule_id}})
            continue
        rules.append({
            "id": rule.id,
            "name": "".join(part.capitalize() for part in rule.id.split("-")),
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.summary},
            "help": {"text": f"{rule.summary}\n\nImpact: {rule.impact}\n\nAction: {rule.action}\n\n"
                             f"Before firing: {rule.fp_check}"},
            "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
            "properties": {"tags": [rule.group], "code": rule.code_for(report.profile)},
        })
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for f in report.findings:
        if not f.path:
            continue  # a finding about the PR description has no file location for code scanning
        region: dict[str, int] = {"startLine": f.line or 1}
        if f.end_line and f.line and f.end_line > f.line:
            region["endLine"] = f.end_line
        message = f.problem + (f" Impact: {f.impact}" if f.impact else "") + (f" Action: {f.action}" if f.action else "")
        results.append({
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": SARIF_LEVEL[f.severity or "medium"],
            "message": {"text": message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                                                "region": region}}],
            "partialFingerprints": {"prReviewFingerprint/v1": f.fingerprint},
            "properties": {"tag": f.tag, "code": f.code, **({"trigger": f.trigger} if f.trigger else {})},
        })
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "pr-review-action", "version": report.engine_version,
                                "informationUri": "https://github.com/rocm/pr-review-action", "rules": rules}},
            "automationDetails": {"id": f"pr-review/{report.profile}/"},
            "results": results,
        }],
    }
    return json.dumps(sarif, indent=2, ensure_ascii=False) + "\n"
