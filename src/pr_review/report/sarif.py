"""SARIF 2.1.0 for GitHub code scanning: rules with help in Markdown and a link to their text at the
released tag, results at head-side lines with the fingerprints code scanning matches alerts by."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from .. import __version__
from ..catalog import Catalog, Rule
from ..model import Report
from ..rulesdata import rules_root
from .escape import json_safe

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
REPOSITORY_URL = "https://github.com/rocm/pr-review-action"
LEVEL = {"high": "error", "medium": "warning", "low": "note"}


def help_uri(rule: Rule) -> str | None:
    """The rule's YAML in this repository at the release tag; None for a repository's own rule_dirs rule."""
    try:
        relative = Path(rule.source).resolve().relative_to(rules_root().resolve())
    except ValueError:
        return None
    return f"{REPOSITORY_URL}/blob/v{__version__}/rules/{relative.as_posix()}"


def help_markdown(rule: Rule) -> str:
    return (f"{rule.summary}\n\n**Impact.** {rule.impact}\n\n**Action.** {rule.action}\n\n"
            f"**Before acting on it, rule out:** {rule.fp_check}")


def sarif_rule(rule: Rule, profile: str) -> dict[str, Any]:
    uri = help_uri(rule)
    return {
        "id": rule.id,
        "name": "".join(part.capitalize() for part in rule.id.split("-")),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.summary},
        "help": {"text": f"{rule.summary}\n\nImpact: {rule.impact}\n\nAction: {rule.action}\n\n"
                         f"Before acting on it, rule out: {rule.fp_check}",
                 "markdown": help_markdown(rule)},
        **({"helpUri": uri} if uri else {}),
        "defaultConfiguration": {"level": LEVEL[rule.severity]},
        "properties": {"tags": [rule.group], "code": rule.code_for(profile)},
    }


def render_sarif(report: Report, catalog: Catalog) -> str:
    located = [f for f in report.findings if f.path]  # a finding about the PR description has no file to show
    rules = [sarif_rule(catalog.rules[rule_id], report.profile) if rule_id in catalog.rules
             else {"id": rule_id, "shortDescription": {"text": rule_id}}
             for rule_id in sorted({f.rule for f in located})]
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    occurrences: Counter[str] = Counter()
    results = []
    for f in located:
        region: dict[str, int] = {"startLine": f.line or 1}
        if f.end_line and f.line and f.end_line > f.line:
            region["endLine"] = f.end_line
        message = f.problem + (f" Impact: {f.impact}" if f.impact else "") + (f" Action: {f.action}" if f.action else "")
        # Code scanning matches alerts across runs by primaryLocationLineHash ("hash:occurrence", as upload-sarif
        # computes it). Ours hashes rule, path and the line's text, so an alert survives its line moving, and
        # it is there even when the runner's checkout lacks the head's files (workflow_dispatch).
        occurrences[f.fingerprint] += 1
        results.append({
            "ruleId": f.rule,
            "ruleIndex": index[f.rule],
            "level": LEVEL[f.severity or "medium"],
            "message": {"text": message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                                                "region": region}}],
            "partialFingerprints": {"primaryLocationLineHash": f"{f.fingerprint}:{occurrences[f.fingerprint]}"},
            "properties": {"tag": f.tag, "code": f.code, **({"trigger": f.trigger} if f.trigger else {})},
        })
    sarif = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "pr-review-action", "version": report.engine_version,
                                "informationUri": REPOSITORY_URL, "rules": rules}},
            "automationDetails": {"id": f"pr-review/{report.profile}/"},
            "results": results,
        }],
    }
    return json_safe(json.dumps(sarif, indent=2, ensure_ascii=False)) + "\n"
