"""Copies and variants: sibling-variant-unfixed (A1), twin-divergence and
backbone-verbatim-duplication (D5).

All three compare code with its near-copies: a fix's old line still living in a sibling function
of the same file, a new file that copies an existing one and differs from it in the places where
copies go wrong, and one block pasted into two backbone files with only the names changed.
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Iterable, Iterator

from ..git.diff import ChangedFile
from ..lang import cpp
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput

# A line worth following to a sibling: long enough to be a formula, not a loop header or a brace.
MIN_LINE = 24
TRIVIAL_LINE = re.compile(r"^(return|else|elif|try|except|finally|pass|break|continue|import|from|#|//|\}|\{|@)")
FORMULA = re.compile(r"[-+*/%\[]|<<|>>")


@dataclass(frozen=True)
class Span:
    first: int
    last: int
    name: str


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _spans(review: ReviewInput, path: str, language: str, side: str) -> list[Span]:
    """Function spans of one side of a file, innermost last; [] when it cannot be parsed."""
    if language == "python":
        tree = review.source.python(path, side)  # type: ignore[arg-type]
        if tree is None:
            return []
        return sorted((Span(n.lineno, n.end_lineno or n.lineno, n.name) for n in ast.walk(tree)
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), key=lambda s: (s.first, -s.last))
    text = review.source.text(path, side)  # type: ignore[arg-type]
    if text is None:
        return []
    return [Span(a, b, name.rsplit("::", 1)[-1]) for a, b, name in cpp.function_spans(cpp.parse_cached(text))]


def _innermost(spans: list[Span], line: int) -> Span | None:
    found = None
    for span in spans:
        if span.first <= line <= span.last and (found is None or span.first >= found.first):
            found = span
    return found


def _stem_shared(a: str, b: str) -> bool:
    """Whether two function names share a long common stem (`_fwd_kernel_decode` / `_fwd_kernel_prefill_opt`)."""
    a, b = a.strip("_").lower(), b.strip("_").lower()
    if a == b or not a or not b:
        return False
    common = 0
    for x, y in zip(a, b):
        if x != y:
            break
        common += 1
    shorter = min(len(a), len(b))
    return common >= 8 and common >= 0.6 * shorter


# ------------------------------------------------------------------------------ A1

@detector("sibling-variant-unfixed")
def sibling_variant_unfixed(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("python", "cpp"):
        if f.is_new or not f.added:
            continue
        code = review.code.get(f.path)
        removed = [(n, t) for n, t in (code.removed if code else f.removed)
                   if len(t.strip()) >= MIN_LINE and not TRIVIAL_LINE.match(t.strip()) and FORMULA.search(t)]
        if not removed:
            continue
        base_spans = _spans(review, f.old_path or f.path, f.language, "base")
        head_spans = _spans(review, f.path, f.language, "head")
        head_lines = review.source.lines(f.path)
        if not base_spans or not head_spans:
            continue
        added_squashed = {_squash(t) for _, t in f.added}
        reported: set[int] = set()
        for base_line, text in removed:
            owner = _innermost(base_spans, base_line)
            if owner is None:
                continue
            old = _squash(text)
            fixed_in = next((s for s in head_spans if s.name == owner.name), None)
            if fixed_in is None or any(_squash(head_lines[i - 1]) == old for i in range(fixed_in.first, fixed_in.last + 1)):
                continue  # the function is gone or still has the line: not a fix of that line
            if old in added_squashed:
                continue  # moved, not changed
            for sibling in head_spans:
                if sibling.name == owner.name or not _stem_shared(sibling.name, owner.name):
                    continue
                hit = next((i for i in range(sibling.first, sibling.last + 1)
                            if i <= len(head_lines) and _squash(head_lines[i - 1]) == old), None)
                if hit is None or hit in reported or hit in f.added_lines:
                    continue
                reported.add(hit)
                yield Finding(
                    rule="sibling-variant-unfixed", path=f.path, line=hit,
                    problem=f"The PR changes `{text.strip()[:100]}` in `{owner.name}` (line {base_line} on base), "
                            f"but its variant `{sibling.name}` in the same file still has that exact line.",
                    impact="If the change fixes a bug, the bug stays live on whatever phase or shape routes to "
                           f"`{sibling.name}`; tests that cover only the fixed path stay green.",
                    action=f"Reviewer should ask the author to apply the same change to `{sibling.name}`, or to "
                           "state why that variant cannot hit the case.",
                    tag="inferred",
                    evidence=[Evidence(f.old_path or f.path, base_line, text.strip(), side="base")],
                )
