"""Process rules decided by the engine itself: backbone coverage gaps and stale diffs."""
from __future__ import annotations

from typing import Iterable

from ..model import Finding
from . import detector
from .base import ReviewInput


@detector("backbone-tier-gap")
def backbone_tier_gap(review: ReviewInput) -> Iterable[Finding]:
    for core in review.evidence.get("backbone") or []:
        if core.status != "GAP":
            continue
        changed = next((f for f in review.files if f.path == core.path), None)
        code = review.code.get(core.path)
        line = (code.added[0][0] if code and code.added else None) or (changed.added[0][0] if changed and changed.added else 1)
        yield Finding(
            rule="backbone-tier-gap", path=core.path, line=line, tag="inferred",
            problem=f"Tier {core.tier} backbone file with no covering test in this PR: {core.reason}.",
            impact="A defect here reaches every user of this file's callers; nothing in the PR would catch it.",
            action="Reviewer should ask for a test (or an end-to-end run) that exercises the changed code "
                   "on the production shapes and archs this file serves.",
        )


@detector("stale-diff")
def stale_diff(review: ReviewInput) -> Iterable[Finding]:
    if review.stale is None or not review.stale.conflicts:
        return
    path = review.stale.conflicts[0]
    changed = next((f for f in review.files if f.path == path), None)
    yield Finding(
        rule="stale-diff", path=path, line=changed.added[0][0] if changed and changed.added else 1,
        problem=review.stale.message,
        impact="CI results and this review describe a tree that no longer exists once the base moved.",
        action="Author must rebase onto the current base and re-run CI before merge.",
    )
