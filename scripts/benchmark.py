#!/usr/bin/env python3
"""Review every first-parent commit of a range as a PR (parent..commit) and report speed.

    python scripts/benchmark.py --repo /tmp/aiter --count 100 [--jsonl findings.jsonl]

Prints p50/p95/max seconds per review and the process's peak memory. With --jsonl, writes one
line per reviewed commit (findings, derived rules, families) for precision sampling.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review


def commits(repo: str, rev_range: str | None, count: int) -> list[tuple[str, str]]:
    args = ["git", "-C", repo, "log", "--first-parent", "--format=%H%x09%s", f"-{count}"]
    args.append(rev_range or "HEAD")
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [tuple(line.split("\t", 1)) for line in out.splitlines() if "\t" in line]  # type: ignore[misc]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True)
    parser.add_argument("--range", dest="rev_range", help="rev or range for git log (default HEAD)")
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--profile")
    parser.add_argument("--jsonl", help="write per-commit findings here")
    args = parser.parse_args()

    times: list[tuple[float, str]] = []
    sink = open(args.jsonl, "w", encoding="utf-8") if args.jsonl else None
    failures = 0
    broken = 0  # detector/evidence crashes the pipeline survived; they must not pass for "found nothing"
    for sha, subject in commits(args.repo, args.rev_range, args.count):
        start = time.perf_counter()
        try:
            report = review(ReviewRequest(repo_dir=args.repo, base=f"{sha}^1", head=sha, remote=None,
                                          profile=args.profile, pr=PRInfo(title=subject)))
        except Exception as exc:  # measured, reported, never hidden
            failures += 1
            print(f"{sha[:10]} FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        elapsed = time.perf_counter() - start
        times.append((elapsed, sha))
        broken += sum(1 for n in report.notes if n.startswith(("detector ", "evidence ")) and "failed" in n)
        if sink:
            sink.write(json.dumps({
                "sha": sha, "subject": subject, "seconds": round(elapsed, 3),
                "files": report.stats["files"], "families": report.stats["families"],
                "derived": [c.rule for c in report.checklist],
                "core_files": [[c.path, c.tier, c.status] for c in report.core_files],
                "runtime": report.runtime_surface,
                "findings": [{"rule": f.rule, "path": f.path, "line": f.line, "severity": f.severity,
                              "problem": f.problem} for f in report.findings],
                "not_checked": len(report.not_checked),
                "notes": report.notes,
            }) + "\n")
    if sink:
        sink.close()
    if not times:
        print("no commit reviewed")
        return 1
    seconds = [t for t, _ in times]
    slowest = max(times)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"reviewed {len(times)} commits ({failures} failed) of {args.repo}")
    print(f"p50 {statistics.median(seconds):.3f}s  p95 {percentile(seconds, 0.95):.3f}s  "
          f"max {slowest[0]:.3f}s ({slowest[1][:10]})  mean {statistics.mean(seconds):.3f}s")
    print(f"peak memory {peak_mb:.0f} MB (whole process)")
    if broken:
        print(f"WARNING: {broken} detector/evidence failure(s); see the notes in --jsonl output")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
