#!/usr/bin/env python3
"""Scaffold a new rule: its catalog YAML, a detector module and a fire/clean fixture pair.

    python scripts/new_rule.py <rule-id> --group housekeeping [--root .]

Fill in the YAML's text, the detector's logic and the fixtures' code; the catalog meta-tests
fail until the rule has both a firing and a clean fixture.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

GROUPS = ["coverage", "bypass", "arch-dtype", "state", "sync", "resources", "streams", "perf-evidence",
          "housekeeping", "triton", "flydsl", "description", "structure", "process"]

RULE_YAML = """id: {id}
group: {group}
codes: {{}}
severity: medium
detector: structural
title: {title}
summary: Describe in one or two sentences what the rule looks for.
impact: Say what breaks at run time, and for whom, when this is left in.
action: Author must … (end with the imperative a maintainer would write).
trigger: The concrete construct on an added line that makes the rule fire.
fp_check: What must be ruled out before firing (the seeds' false-positive self-check).
languages: [python]
families: []
"""

DETECTOR = '''"""{title}."""
from __future__ import annotations

import ast
from typing import Iterable

from ..model import Finding
from . import detector
from .base import ReviewInput


@detector("{id}")
def {func}(review: ReviewInput) -> Iterable[Finding]:
    for changed, tree in review.python_files(include_tests=False):
        for node in ast.walk(tree):
            if getattr(node, "lineno", None) not in changed.added_lines:
                continue
            # Decide the rule from `node` here and yield a Finding with problem/impact/action.
'''

EXPECT = "findings:{findings}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rule_id")
    parser.add_argument("--group", choices=GROUPS, required=True)
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args()
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", args.rule_id):
        print(f"new_rule: '{args.rule_id}' is not a kebab-case id", file=sys.stderr)
        return 2
    root = Path(args.root)
    title = args.rule_id.replace("-", " ").capitalize() + " (edit this title)"
    func = args.rule_id.replace("-", "_")
    files = {
        root / "rules/catalog" / args.group / f"{args.rule_id}.yml": RULE_YAML.format(id=args.rule_id, group=args.group, title=title),
        root / "src/pr_review/detectors" / f"{func}.py": DETECTOR.format(id=args.rule_id, func=func, title=title),
        root / "tests/fixtures/rules" / args.rule_id / "fire-example/head/example.py": "# code that must fire\n",
        root / "tests/fixtures/rules" / args.rule_id / "fire-example/expect.yml":
            EXPECT.format(findings=f"\n  - {{rule: {args.rule_id}, path: example.py, line: 1}}"),
        root / "tests/fixtures/rules" / args.rule_id / "clean-example/head/example.py": "# code that must stay quiet\n",
        root / "tests/fixtures/rules" / args.rule_id / "clean-example/expect.yml": EXPECT.format(findings=" []"),
    }
    existing = [str(p) for p in files if p.exists()]
    if existing:
        print(f"new_rule: already exists: {', '.join(existing)}", file=sys.stderr)
        return 2
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"created {path.relative_to(root)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
