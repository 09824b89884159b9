"""`pr-review stats`: how derivation behaves over a repository's history (one PR per first-parent commit)."""
from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Iterator, TextIO

from .cli import UsageError
from .model import PRInfo
from .pipeline import ReviewRequest, review
from .progress import Progress

PR_SUBJECT = re.compile(r"\(#(\d+)\)\s*$")


def first_parent_commits(repo: str, rev_range: str, limit: int | None, prs_only: bool) -> list[tuple[str, str]]:
    try:
        out = subprocess.run(["git", "-C", repo, "log", "--first-parent", "--no-merges", "--format=%H%x09%s",
                              rev_range, "--"], check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as exc:  # a range git cannot read is an unusable argument
        raise UsageError(f"--range {rev_range}: {(exc.stderr.strip().splitlines() or ['git log failed'])[0]}") from exc
    commits = [tuple(line.split("\t", 1)) for line in out.splitlines() if "\t" in line]
    if prs_only:
        commits = [c for c in commits if PR_SUBJECT.search(c[1])]
    return commits[:limit] if limit else commits  # type: ignore[return-value]


def review_summary(repo: str, sha: str, subject: str, profile: str | None) -> dict:
    """What the statistics need of one PR's review, as plain data (it crosses a process boundary);
    `error` instead when the review could not run, so one bad commit costs only itself."""
    match = PR_SUBJECT.search(subject)
    try:
        report = review(ReviewRequest(repo_dir=repo, base=f"{sha}^1", head=sha, remote=None, profile=profile,
                                      pr=PRInfo(title=subject, number=int(match.group(1)) if match else None)))
    except Exception as exc:  # reported in the summary, never hidden
        return {"sha": sha, "error": f"{type(exc).__name__}: {exc}"}
    return {"sha": sha, "families": report.stats["families"], "derived": len(report.checklist),
            "catalog_rules": report.stats["catalog_rules"], "core_files": bool(report.core_files),
            "runtime": report.runtime_surface, "profile": report.profile}


def review_all(repo: str, commits: list[tuple[str, str]], profile: str | None, jobs: int) -> Iterator[dict]:
    """Review summaries in the order they finish, `jobs` processes at a time (1: in this process)."""
    if jobs <= 1:
        for sha, subject in commits:
            yield review_summary(repo, sha, subject, profile)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(review_summary, repo, sha, subject, profile): sha for sha, subject in commits}
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception as exc:  # the worker process itself died (out of memory, a signal)
                yield {"sha": futures[future], "error": f"{type(exc).__name__}: {exc}"}


def run_stats(repo: str, rev_range: str, out: TextIO, limit: int | None = None, profile: str | None = None,
              prs_only: bool = True, jobs: int | None = None, shard: tuple[int, int] = (1, 1),
              json_out: str | None = None) -> int:
    """Review the range's PRs (shard K of N: every Nth from the Kth, for a CI matrix), write the
    statistics to `out` and, with `json_out`, the per-PR rows that `scripts/merge_shards.py` merges."""
    commits = first_parent_commits(repo, rev_range, limit, prs_only)[shard[0] - 1::shard[1]]
    roots = _root_commits(repo)
    reviewable = [c for c in commits if c[0] not in roots]
    if not commits:
        out.write(f"no {'merged-PR ' if prs_only else ''}first-parent commit in {rev_range}\n")
        return 0
    if len(reviewable) < len(commits):  # keep what the range does allow, then say why it is unusable
        if reviewable:
            _review_and_summarize(repo, reviewable, rev_range, out, profile, jobs, shard, json_out)
        root = next(c[0] for c in commits if c[0] in roots)
        raise UsageError(f"--range {rev_range} reaches the root commit {root[:12]}, which has no parent to review "
                         f"against; end the range above it (e.g. {root[:12]}..HEAD)"
                         + (f" — the {len(reviewable)} PR(s) after it are counted above" if reviewable else ""))
    return _review_and_summarize(repo, commits, rev_range, out, profile, jobs, shard, json_out)


def _root_commits(repo: str) -> set[str]:
    out = subprocess.run(["git", "-C", repo, "rev-list", "--max-parents=0", "--all"],
                         capture_output=True, text=True).stdout
    return set(out.split())


def _review_and_summarize(repo: str, commits: list[tuple[str, str]], rev_range: str, out: TextIO, profile: str | None,
                 jobs: int | None, shard: tuple[int, int], json_out: str | None) -> int:
    started = time.perf_counter()
    rows = []
    progress = Progress(len(commits))
    for row in review_all(repo, commits, profile, jobs or os.cpu_count() or 1):
        progress.advance(failed="error" in row)
        rows.append(row)
    elapsed = time.perf_counter() - started
    if json_out:
        Path(json_out).write_text(json.dumps({"repo": repo, "range": rev_range, "shard": list(shard),
                                              "seconds": round(elapsed, 1), "rows": rows}, indent=1), encoding="utf-8")
    return write_summary(rows, f"{repo} ({rev_range})", elapsed, out)


def write_summary(rows: list[dict], source: str, elapsed: float, out: TextIO) -> int:
    """The statistics of review rows (`review_summary`); 1 when no review succeeded."""
    failed = [r for r in rows if "error" in r]
    done = [r for r in rows if "error" not in r]
    for row in failed:
        out.write(f"{row['sha'][:12]}: review failed: {row['error']}\n")
    if not done:
        out.write(f"no review of the {len(rows)} commit(s) of {source} succeeded\n")
        return 1
    fired: Counter[str] = Counter(family for r in done for family in r["families"])
    derived = sorted(r["derived"] for r in done)
    total = len(done)
    runtime = sum(r["runtime"] for r in done)
    step4 = sum(r["core_files"] for r in done)
    nothing = sum(not r["families"] for r in done)
    profiles = ", ".join(sorted({r["profile"] for r in done}))
    out.write(f"{total} PRs of {source}, profile {profiles}, in {elapsed:.1f}s "
              f"({elapsed / len(rows):.2f}s per PR)" + (f", {len(failed)} failed" if failed else "") + "\n")
    out.write(f"runtime surface: {runtime} ({100 * runtime / total:.0f}%); no family fired: {nothing}; "
              f"Step-4 backbone assessment: {step4} ({100 * step4 / total:.1f}%)\n")
    out.write(f"derived rules per PR: median {statistics.median(derived):g}, "
              f"p90 {derived[int(0.9 * (total - 1))]}, max {derived[-1]} (catalog: {done[-1]['catalog_rules']})\n")
    out.write(f"{'family':36} {'PRs':>5} {'share':>6}\n")
    for family, count in sorted(fired.items(), key=lambda kv: (-kv[1], kv[0])):
        out.write(f"{family:36} {count:5d} {100 * count / total:5.1f}%\n")
    return 0
