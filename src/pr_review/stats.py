"""`pr-review stats`: how derivation behaves over a repository's history (one PR per first-parent commit)."""
from __future__ import annotations

import re
import statistics
import subprocess
import time
from collections import Counter
from typing import TextIO

from .model import PRInfo
from .pipeline import ReviewRequest, review

PR_SUBJECT = re.compile(r"\(#(\d+)\)\s*$")


def first_parent_commits(repo: str, rev_range: str, limit: int | None, prs_only: bool) -> list[tuple[str, str]]:
    out = subprocess.run(["git", "-C", repo, "log", "--first-parent", "--no-merges", "--format=%H%x09%s", rev_range],
                         check=True, capture_output=True, text=True).stdout
    commits = [tuple(line.split("\t", 1)) for line in out.splitlines() if "\t" in line]
    if prs_only:
        commits = [c for c in commits if PR_SUBJECT.search(c[1])]
    return commits[:limit] if limit else commits  # type: ignore[return-value]


def run_stats(repo: str, rev_range: str, out: TextIO, limit: int | None = None, profile: str | None = None,
              prs_only: bool = True) -> int:
    commits = first_parent_commits(repo, rev_range, limit, prs_only)
    if not commits:
        out.write(f"no {'merged-PR ' if prs_only else ''}first-parent commit in {rev_range}\n")
        return 0
    started = time.perf_counter()
    fired: Counter[str] = Counter()
    derived: list[int] = []
    catalog_size = 0
    step4 = runtime = nothing = 0
    for sha, subject in commits:
        match = PR_SUBJECT.search(subject)
        report = review(ReviewRequest(repo_dir=repo, base=f"{sha}^1", head=sha, remote=None, profile=profile,
                                      pr=PRInfo(title=subject, number=int(match.group(1)) if match else None)))
        families = report.stats["families"]
        fired.update(families)
        derived.append(len(report.checklist))
        catalog_size = report.stats["catalog_rules"]
        step4 += bool(report.core_files)
        runtime += report.runtime_surface
        nothing += not families
        profile = profile or report.profile
    total = len(commits)
    elapsed = time.perf_counter() - started
    out.write(f"{total} PRs of {repo} ({rev_range}, profile {profile}) in {elapsed:.1f}s "
              f"({elapsed / total:.2f}s per PR)\n")
    out.write(f"runtime surface: {runtime} ({100 * runtime / total:.0f}%); no family fired: {nothing}; "
              f"Step-4 backbone assessment: {step4} ({100 * step4 / total:.1f}%)\n")
    out.write(f"derived rules per PR: median {statistics.median(derived):g}, "
              f"p90 {sorted(derived)[int(0.9 * (total - 1))]}, max {max(derived)} (catalog: {catalog_size})\n")
    out.write(f"{'family':36} {'PRs':>5} {'share':>6}\n")
    for family, count in sorted(fired.items(), key=lambda kv: (-kv[1], kv[0])):
        out.write(f"{family:36} {count:5d} {100 * count / total:5.1f}%\n")
    return 0
