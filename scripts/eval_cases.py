#!/usr/bin/env python3
"""Check the engine against the labelled real cases in shared/eval/cases.json.

    python scripts/eval_cases.py --cases ../shared/eval/cases.json --aiter /tmp/aiter --atom /tmp/atom

A `fire` case passes when the rule is reported in the file within 3 lines of one of its lines
(anywhere in the file when none are listed); a `clear` case passes when it is not reported there.
A case's rule counts the rules that refine it (split from it to be measured apart).
"""
from __future__ import annotations

import argparse
import json
import sys

from pr_review.catalog import load_catalog
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", required=True)
    parser.add_argument("--aiter")
    parser.add_argument("--atom")
    parser.add_argument("--rule", action="append", help="only cases of these rule ids")
    args = parser.parse_args()
    repos = {"aiter": args.aiter, "atom": args.atom}
    passed = failed = skipped = 0
    catalog = load_catalog()
    for case in json.load(open(args.cases, encoding="utf-8")):
        if args.rule and case["rule_id"] not in args.rule:
            continue
        repo = repos.get(case["repo"])
        if not repo:
            skipped += 1
            continue
        subject = _subject(repo, case["commit"])
        report = review(ReviewRequest(repo_dir=repo, base=case["parent"], head=case["commit"], remote=None,
                                      pr=PRInfo(title=subject, number=case.get("pr"))))
        # Recall counts what the engine decided, annotated or preview; the stage is printed beside it.
        annotated = {id(f) for f in report.findings}
        rules = {case["rule_id"]} | {r.id for r in catalog.rules.values() if r.refines == case["rule_id"]}
        hits = [f for f in report.all_findings if f.rule in rules and f.path == case["file"]]
        if case["lines"]:
            hits = [f for f in hits if f.line and any(abs(f.line - n) <= 3 for n in case["lines"])]
        ok = bool(hits) if case["expect"] == "fire" else not hits
        passed += ok
        failed += not ok
        where = ", ".join(f"{f.path}:{f.line}" + ("" if id(f) in annotated else " (preview)") for f in hits[:3]) or "-"
        print(f"{'PASS' if ok else 'FAIL'} {case['id']:40} expect={case['expect']:5} got={where}")
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed else 0


def _subject(repo: str, sha: str) -> str:
    import subprocess
    out = subprocess.run(["git", "-C", repo, "log", "-1", "--format=%s", sha], capture_output=True, text=True)
    return out.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
