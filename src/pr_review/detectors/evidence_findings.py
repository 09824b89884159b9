"""Findings read off the evidence stage: unresolved first-party names, deleted guards, reversed
invariants and tests that cannot fail. The collectors did the tracing; these decide what a maintainer
should be told at which line."""
from __future__ import annotations

import re
from typing import Iterable

from ..evidence._util import short
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

CITATION = lazy_re(r"\b(spec|specification|ISA|asm|assembly|datasheet|disassembl\w*|unit[- ]?test|op_tests|"
                      r"test(?:ed|s)? (?:with|on|by|in)|verified|validated|rocprof|trace)\b", re.IGNORECASE)


@detector("hallucinated-symbol")
def hallucinated_symbol(review: ReviewInput) -> Iterable[Finding]:
    data = review.evidence.get("symbols")
    for u in getattr(data, "unresolved", []) or []:
        if not u.name:
            continue  # a missing module may be generated at build time: evidence only
        attribute = u.kind == "attribute"
        yield Finding(
            rule="hallucinated-symbol", path=u.path, line=u.line, severity="medium",
            problem=(f"`{u.statement}` reads `{u.name}` from module `{u.module}`, but {u.module_path} on the head "
                     f"side defines no `{u.name}` and this PR adds none."),
            impact=("AttributeError when this line runs." if attribute else
                    f"ImportError (cannot import name '{u.name}') as soon as `{u.path}` is imported."),
            action=("Author must point to where the name is defined, or rebase onto the current main and adapt "
                    "if it was renamed or removed there."),
            trigger=(f"executing {u.path}:{u.line}" if attribute else f"importing {u.path}"),
            tag="verified",
            evidence=[Evidence(u.module_path, None, f"no definition of `{u.name}`")],
        )


def _cited(review: ReviewInput, fate, subjects: set[str]) -> bool:
    """The PR brings evidence for dropping the guard: a test it adds or edits exercises the guarded code
    (names the function, the buffer or a checked name), or the body cites a spec, asm or test for it."""
    names = {n for n in (fate.function.rsplit(".", 1)[-1], fate.target.split(".")[-1].split("[")[0]) if n and len(n) > 2}
    names |= {s for s in subjects if len(s) >= 6}
    for f in review.files:
        if f.path == fate.path or not review.is_test(f.path) or not f.added:
            continue
        text = "\n".join(t for _, t in f.added)
        if any(re.search(rf"\b{re.escape(n)}\b", text) for n in names):
            return True
    body = review.pr.body or ""
    return bool(CITATION.search(body)) and (any(n in body for n in names) or "zero" in body.lower())


def _trigger(review: ReviewInput, fate) -> str | None:
    """The concrete input that reaches the unguarded code, when the code shows it."""
    if fate.kind == "zeros" and fate.head_line:
        lines = review.source.lines(fate.path)
        for n in range(fate.head_line - 1, max(0, fate.head_line - 6), -1):
            m = re.match(r"\s*if\s+(\w+)\s+is\s+None\s*:", lines[n - 1]) if n - 1 < len(lines) else None
            if m:
                return f"any call of `{fate.function.rsplit('.', 1)[-1]}` that leaves `{m.group(1)}` as None " \
                       f"allocates `{fate.target}` uninitialised"
        if fate.function:
            return f"every call of `{fate.function.rsplit('.', 1)[-1]}` allocates `{fate.target}` uninitialised"
    return None


FALLS_THROUGH = "the same condition now falls through"


def _interesting(review: ReviewInput, fate) -> bool:
    """Which deleted guards deserve an annotation (the rest stay evidence lines)."""
    if review.is_test(fate.path):
        return False  # test rewrites move and reshape asserts; test_quality reads what the tests check now
    if fate.fate == "replaced":
        return True
    if fate.fate == "changed":
        return fate.weakened.startswith(FALLS_THROUGH)
    if fate.invariant and (fate.fate in ("justified", "rewritten") or fate.fate == "gone" and fate.kind == "zeros"):
        return True  # the old comment said it must stay: only a citation clears that (D4)
    # A deleted `.contiguous()` stays an evidence line: on 600 merged aiter/ATOM PRs every one read was a
    # layout redesign (strided support, preshuffled buffers, a helper), not a forgotten guard.
    return fate.fate == "gone" and fate.kind in ("assert", "if-raise", "check", "throw")


@detector("removed-guard", "invariant-reversal")
def removed_guards(review: ReviewInput) -> Iterable[Finding]:
    fates = review.evidence.get("guards") or []
    if re.match(r"\s*revert\b", review.pr.title or "", re.IGNORECASE):
        return  # a revert restores a state that was merged before; its deleted guards are that state
    seen: set[tuple[str, int | None]] = set()
    for fate in fates:
        if not _interesting(review, fate) or (fate.path, fate.head_line) in seen:
            continue
        seen.add((fate.path, fate.head_line))
        where = f"{fate.path}:{fate.base_line} on base"
        cited = _cited(review, fate, set(fate.subjects))
        if fate.invariant and not cited and fate.fate != "changed":
            what = (f"`{fate.target}` was zero-initialised (`{fate.text}`) and is now allocated uninitialised "
                    f"(`{fate.new_text}`)" if fate.fate == "replaced" else f"`{fate.text}` ({where}) is deleted")
            contradiction = f" and the new comment says “{fate.contradiction}”" if fate.contradiction else ""
            yield Finding(
                rule="invariant-reversal", path=fate.path, line=fate.head_line,
                problem=f"{what}, although the base comment said why it must stay: “{fate.invariant}”{contradiction}. "
                        "The PR cites no spec, asm or test for the new assumption.",
                impact="If the old reason still holds, every reader of the buffer sees garbage (or unchecked "
                       "input) — silent corruption, not a crash.",
                action="Author must cite the spec, asm reader or test that proves the new assumption, or keep "
                       "the invariant.",
                trigger=_trigger(review, fate),
                tag="verified",
                evidence=[Evidence(fate.path, fate.base_line, fate.text, side="base")],
            )
            continue
        if fate.fate in ("justified", "rewritten"):
            continue  # explained or rewritten, and no invariant comment said it must stay
        if cited and fate.fate == "gone":
            continue  # a test in the PR exercises the inputs the check used to reject
        if fate.fate == "changed":
            problem = (f"`{fate.text}` ({where}) no longer raises: {fate.where} keeps the condition but "
                       f"falls through (`{fate.new_text}`).")
            impact = "The case the check rejected now continues silently with whatever state it has."
            action = "Reviewer should ask whether falling through is intended, or ask the author to keep the error."
        elif fate.fate == "replaced":
            problem = (f"`{fate.target}` was zero-initialised (`{fate.text}`, {where}) and is now allocated "
                       f"uninitialised: `{fate.new_text}`.")
            impact = "Any element the kernel does not write before it is read is garbage instead of zero."
            action = (f"Reviewer should ask the author to show that every element of `{fate.target}` is written "
                      "before it is read, or keep the zero-initialisation.")
        else:
            problem = f"`{fate.text}` ({where}) is deleted and nothing on the head side checks it any more."
            impact = ("Inputs the check used to reject now reach the code after it: a wrong shape, dtype or "
                      "layout gives a wrong result or an out-of-bounds access instead of an error.")
            action = "Reviewer should ask why the check is no longer needed, or ask the author to restore it."
        yield Finding(
            rule="removed-guard", path=fate.path, line=fate.head_line, problem=problem, impact=impact, action=action,
            tag="verified", evidence=[Evidence(fate.path, fate.base_line, fate.text, side="base")],
        )


@detector("test-cannot-fail")
def test_cannot_fail(review: ReviewInput) -> Iterable[Finding]:
    data = review.evidence.get("test_quality")
    for item in getattr(data, "cannot_fail", []) or []:
        yield Finding(
            rule="test-cannot-fail", path=item.path, line=item.line,
            problem=f"Test `{item.function}` cannot fail on a wrong result: {short(item.reason, 160)}.",
            impact="It passes whatever the kernel computes, so a regression ships with green CI.",
            action="Author must assert the result against an independent reference with a justified tolerance.",
            tag="verified",
        )
