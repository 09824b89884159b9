"""removed-guard, the synchronisation kind: a kernel function loses a barrier its sibling functions keep.

aiter #1412, a build change titled "prebuild gen so", turned `end_sync<ngpus, true>(sg, self_sg, rank);` in
`cross_device_reduce_1stage` into a comment ("maybe do not need device sync") while every other all-reduce
kernel of the file kept it: a fast rank then leaves while a slow one still reads its buffer over IPC, and the
output turns to NaN under graph-pool reuse (#3514 put it back).

Decided from the C++ syntax trees of the file's two sides: a call whose callee names a barrier (`__syncthreads`,
`*_sync`, `*barrier*`, `__threadfence*`) on a removed base line of a function the head still defines, where the
head function calls it fewer times than the base one did — directly or through a helper of the same file that
calls it (headers count: a `sync_lds()` wrapper is the barrier) — and where another function of the head file
still calls it. A PR that says it is about synchronisation (sync, barrier, race, fence) argued the removal.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from ..lang import Unparsable, cpp, one_line
from ..lang.regex import lazy_re
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput

SYNC_CALLEE = lazy_re(r"barrier|^__sync(threads|warp)$|(^|_)sync(_|$)|^__threadfence")
# warp data exchange (`__shfl_sync`, `__ballot_sync`, `warp_shfl_sync`) names a mask of lanes, not a barrier
WARP_EXCHANGE = lazy_re(r"shfl|ballot|vote|match|(any|all)_sync|reduce")
SMALL_EDIT = 4  # other code lines of the function the PR may touch for it to count as left alone
SYNC_SUBJECT = lazy_re(r"\b(sync\w*|synchroni[sz]\w*|barriers?|races?|fences?|deadlocks?|hangs?)\b", re.IGNORECASE)


def _barrier_counts(tree) -> dict[str, Counter]:
    """Per function name, how many times it synchronises through each barrier: directly, or by calling a
    function of the same file that calls that barrier."""
    direct: dict[str, Counter] = {}
    calls: dict[str, list[str]] = {}
    for call in cpp.nodes_of_type(tree, "call_expression"):
        func = cpp.enclosing_function(call)
        name = cpp.function_name(func) if func is not None else ""
        if not name:
            continue
        callee = cpp.callee_name(call)
        calls.setdefault(name, []).append(callee)
        if SYNC_CALLEE.search(callee):
            direct.setdefault(name, Counter())[callee] += 1
    counts: dict[str, Counter] = {}
    for name, callees in calls.items():
        counter = Counter(direct.get(name, Counter()))
        for callee in callees:
            if callee != name and callee in direct and not SYNC_CALLEE.search(callee):
                counter.update(direct[callee])  # a helper that waits is the wait
        counts[name] = counter
    return counts


def _waits(counter: Counter, callee: str) -> int:
    """How often a function waits at least as strongly as `callee`: the call itself or a wider-scoped or
    counting form of it (`__threadfence_system` for `__threadfence`, `__syncthreads_or` for `__syncthreads`);
    a `_block` form is narrower (`__threadfence_block` orders the block only)."""
    return sum(n for other, n in counter.items()
               if other == callee or other.startswith(f"{callee}_") and not other.endswith("_block"))


def _left_alone_or_commented(review: ReviewInput, f, base_func, head_funcs, barrier_line: int, callee: str) -> bool:
    """The function around the barrier is otherwise unchanged (a kernel rewrite that waits differently is a
    design a reader cannot check from here), or the PR left the barrier in as a comment: switched off.
    Changed code lines are triage's (comments and blank lines out), braces-only lines not counted."""
    code = review.code.get(f.path)
    removed, added = (code.removed, code.added) if code else (f.removed, f.added)

    def counted(lines, first: int, last: int, skip: int = 0) -> int:
        return sum(1 for n, text in lines if first <= n <= last and n != skip and text.strip().strip("{};"))

    edits = counted(removed, base_func.start_point[0] + 1, base_func.end_point[0] + 1, skip=barrier_line)
    for func in head_funcs:
        first, last = func.start_point[0] + 1, func.end_point[0] + 1
        edits += counted(added, first, last)
        if any(first <= n <= last and text.strip().startswith(("//", "/*", "*"))  # the call itself, commented out
               and re.search(rf"\b{re.escape(callee)}\s*[<(]", text) for n, text in f.added):
            return True
    return edits <= SMALL_EDIT


def _head_line(f, base_line: int, callee: str) -> int:
    """Where a removed base line sits in the head file: the added line of its hunk that still names the
    callee (the call commented out), else the same offset into the hunk's head side."""
    for base_start, base_length, head_start, head_length in f.hunks:
        if base_start <= base_line < base_start + max(base_length, 1):
            naming = [n for n, text in f.added if head_start <= n < head_start + head_length and callee in text]
            return naming[0] if naming else head_start + min(base_line - base_start, max(head_length - 1, 0))
    return base_line


@detector("removed-guard")
def removed_barrier(review: ReviewInput) -> Iterable[Finding]:
    if SYNC_SUBJECT.search(f"{review.pr.title}\n{review.pr.body or ''}"):
        return  # the PR is about synchronisation: the removal is its subject, argued there
    for f in review.changed("cpp", include_tests=False):
        if f.is_new or not f.removed:
            continue
        removed = {n for n, _ in f.removed}
        base_text, head_text = review.base_text(f), review.source.text(f.path)
        if base_text is None or head_text is None:
            continue
        try:
            base_tree, head_tree = cpp.parse(base_text), cpp.parse(head_text)
        except Unparsable:
            continue
        base_counts, head_counts = _barrier_counts(base_tree), _barrier_counts(head_tree)
        head_functions: dict[str, list] = {}
        for func in cpp.nodes_of_type(head_tree, "function_definition"):
            head_functions.setdefault(cpp.function_name(func), []).append(func)
        reported: set[tuple[str, str]] = set()
        for call in cpp.nodes_of_type(base_tree, "call_expression"):
            line, callee = cpp.line_of(call), cpp.callee_name(call)
            if line not in removed or not SYNC_CALLEE.search(callee) or WARP_EXCHANGE.search(callee):
                continue
            func = cpp.enclosing_function(call)
            name = cpp.function_name(func) if func is not None else ""
            if not name or name not in head_counts or (name, callee) in reported:
                continue  # the function is gone or renamed: not a barrier dropped from a kernel that stays
            if _waits(head_counts[name], callee) >= base_counts[name][callee]:
                continue  # still called as often (or a stronger form): moved within the function, or re-spelled
            if not _left_alone_or_commented(review, f, func, head_functions.get(name, []), line, callee):
                continue  # the kernel was rewritten around it: how it orders its memory now is its design
            keepers = sorted(other for other, counter in head_counts.items() if other != name and counter[callee])
            if not keepers:
                continue  # no function of the file keeps it: the file changed its scheme, not one kernel
            reported.add((name, callee))
            head_line = _head_line(f, line, callee)
            listed = ", ".join(f"`{k}`" for k in keepers[:4]) + (f" and {len(keepers) - 4} more" if len(keepers) > 4 else "")
            yield Finding(
                rule="removed-guard", path=f.path, line=head_line, severity="medium",
                problem=(f"`{name}` no longer calls `{callee}` (base line {line}: `{one_line(cpp.text_of(call), 100)}`), while "
                         f"{listed} in this file still call it; nothing in the PR's title or description is about "
                         "synchronisation."),
                impact=("Without the barrier, threads or ranks that finish first move on while others still read "
                        "or write the shared buffer: a race whose result is wrong output (NaN, stale values) only "
                        "under load or on another arch, and never a failure in a unit test."),
                action=(f"Author must restore `{callee}` in `{name}`, or state in the PR why this kernel alone no "
                        "longer needs it (what orders its reads and writes now)."),
                tag="inferred",
                evidence=[Evidence(f.path, line, one_line(cpp.text_of(call), 100), side="base"),
                          Evidence(f.path, head_line, f"`{name}` without `{callee}`")],
            )
