"""Copies and variants: sibling-variant-unfixed (A1), twin-divergence and
backbone-verbatim-duplication (D5).

All three compare code with its near-copies: a fix's old line still living in a sibling function
of the same file, a new file that copies an existing one and differs from it in the places where
copies go wrong, and one block pasted into two backbone files with only the names changed.
"""
from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from bisect import bisect_left, bisect_right
from difflib import SequenceMatcher
from functools import cached_property, lru_cache
from typing import Callable, Iterable, Iterator

from ..git.diff import ChangedFile
from ..lang import cpp
from ..lang.index import index_of
from ..lang.matching import LineMatcher
from ..lang.regex import lazy_re, may_match
from ..model import Evidence, Finding, record
from . import detector
from .atomics import symbol_family
from .base import ReviewInput

# A line worth following to a sibling: long enough to be a formula, not a loop header or a brace.
MIN_LINE = 24
# A fix edits a few lines of a function, each into a similar new line; more than this is a rewrite.
MAX_FIX_LINES = 8
FIX_SIMILARITY = 0.6
TRIVIAL_LINE = lazy_re(r"^(return|else|elif|try|except|finally|pass|break|continue|import|from|#|//|\}|\{|@)")
# Address arithmetic or a bounds comparison between two operands (`->` is a member access, not a minus).
FORMULA = lazy_re(r"[\w\])]\s*([*+%]|-(?!>)|//?|<<|>>|[<>]=?)\s*[\w(]")


@record(frozen=True)
class Span:
    first: int
    last: int
    name: str
    body: int = 0  # first line of the body (after the signature); the first line when unknown


def _squash(text: str) -> str:
    r"""`text` without whitespace: `re.sub(r"\s+", "", text)` (str.split drops the same characters), at a
    fraction of its cost; twin-divergence squashes every line of every candidate file."""
    return "".join(text.split())


def _spans(review: ReviewInput, path: str, language: str, side: str) -> list[Span]:
    """Function spans of one side of a file, innermost last; [] when it cannot be parsed."""
    if language == "python":
        tree = review.source.python(path, side)  # type: ignore[arg-type]
        if tree is None:
            return []
        index = index_of(tree)
        return sorted((Span(n.lineno, n.end_lineno or n.lineno, n.name, n.body[0].lineno)
                       for n in index.of_type(ast.FunctionDef) + index.of_type(ast.AsyncFunctionDef)),
                      key=lambda s: (s.first, -s.last))
    text = review.source.text(path, side)  # type: ignore[arg-type]
    if text is None:
        return []
    return _cpp_spans(text)


@lru_cache(maxsize=16)
def _cpp_spans(text: str) -> list[Span]:
    """C++ function spans, from the shared per-tree node lists (the tree is walked once per review)."""
    spans = []
    for node in cpp.nodes_of_type(cpp.parse(text), "function_definition"):
        body = node.child_by_field_name("body")
        spans.append(Span(cpp.line_of(node), node.end_point[0] + 1, cpp.function_name(node) or "?",
                          cpp.line_of(body) + 1 if body is not None else 0))
    return sorted(spans, key=lambda s: (s.first, -s.last))


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

# A PR that says it tunes or speeds up a path and says nothing of a fix: a change confined to one variant is the
# scope of the optimisation, not a fix left out of a sibling (aiter 3501107936 "GEMM tuning", b8a33797ea "perf(...):
# defer ... in no-mask kernel", d50194cae2 "Opt silu_and_mul", bb8eabea4e "... to pipeline non-dot loads").
PERF_TITLE = lazy_re(r"\bperf|optimi[sz]|\bopt\b|speed ?up|\btun(e|ed|ing)\b|pipelin|faster|latency", re.I)
FIX_TITLE = lazy_re(r"\bfix|\bbug|correct|wrong|overflow|crash|\bnan\b|accuracy|hang|race|oob|illegal", re.I)


@detector("sibling-variant-unfixed")
def sibling_variant_unfixed(review: ReviewInput) -> Iterable[Finding]:
    title = review.pr.title or ""
    if PERF_TITLE.search(title) and not FIX_TITLE.search(title):
        return
    for f in review.changed("python", "cpp", include_tests=False):
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
        added = sorted((n, _squash(t)) for n, t in (code.added if code else f.added))
        added_at = [n for n, _ in added]
        added_squashed = {t for _, t in added}
        base_lines = review.source.lines(f.old_path or f.path, "base")
        removed_per_function: dict[str, int] = {}
        for base_line, _ in removed:
            owner = _innermost(base_spans, base_line)
            if owner is not None:
                removed_per_function[owner.name] = removed_per_function.get(owner.name, 0) + 1
        names = {s.name for s in head_spans}
        if not any(_stem_shared(a, b) for a in removed_per_function for b in names):
            continue  # no changed function has a variant in this file: nothing to compare (cheap exit)
        head_squashed = [_squash(t) for t in head_lines]
        # Per changed function, the lines its fix rewrote: (base line, text, owner, the function on head).
        fixes: dict[str, list[tuple[int, str, Span, Span]]] = {}
        for base_line, text in removed:
            owner = _innermost(base_spans, base_line)
            if owner is None or base_line < (owner.body or owner.first) or removed_per_function[owner.name] > MAX_FIX_LINES:
                continue  # a signature line, or a function rewritten rather than fixed
            old = _squash(text)
            fixed_in = next((s for s in head_spans if s.name == owner.name), None)
            if fixed_in is None or old in head_squashed[fixed_in.first - 1:fixed_in.last]:
                continue  # the function is gone or still has the line: not a fix of that line
            if old in added_squashed:
                continue  # moved, not changed
            # the new form: the most similar added statement (a formatter may have split it over lines);
            # one whose bounds on the ratio (lengths, then `quick_ratio`) are below the threshold cannot be it
            within = added[bisect_left(added_at, fixed_in.first):bisect_right(added_at, fixed_in.last)]
            ratio, n = _most_alike(old, ((n, _statement(head_lines, n)) for n, t in within
                                         if _length_ratio(old, t) >= FIX_SIMILARITY / 2), FIX_SIMILARITY)
            if ratio < FIX_SIMILARITY:
                continue  # deleted rather than rewritten into a corrected form
            new = _statement(head_lines, n)
            if _core(text) in new.replace("(", "").replace(")", ""):
                continue  # the formula survives whole in the new form: a restyle (`if c: return False` -> `return not c`)
            if _core(text) in _inlined(new, added, fixed_in).replace("(", "").replace(")", ""):
                continue  # a subexpression hoisted into a new local (`x.element_size()` -> `element_size`)
            if len(WIDENING.findall(old)) > len(WIDENING.findall(new)):
                continue  # the change drops a widening or cast: the sibling keeps the safer form
            if _renamed_local(old, new, _bound(base_lines, owner) | _params(base_lines, owner),
                              _bound(head_lines, fixed_in) | _params(head_lines, fixed_in)):
                continue  # a local or parameter renamed or replaced in this function (an interface change:
                # `chunk_indices` -> `sequence_ids`, `chunk_ids`); the sibling's own binding is consistent
            fixes.setdefault(owner.name, []).append((base_line, text, owner, fixed_in))
        reported: set[int] = set()
        carried_by: dict[str, set[str]] = {}
        for name, rewritten in fixes.items():
            whole = {_squash(t) for _, t, _, _ in rewritten}
            for base_line, text, owner, _ in rewritten:
                old = _squash(text)
                for sibling in head_spans:
                    if sibling.name == owner.name or not _stem_shared(sibling.name, owner.name):
                        continue
                    on_base = next((s for s in base_spans if s.name == sibling.name), None)
                    if on_base is None:
                        continue  # the sibling is new in this PR
                    edited = any(n in f.added_lines for n in range(sibling.body or sibling.first, sibling.last + 1))
                    if sibling.name not in carried_by:
                        carried_by[sibling.name] = {_squash(base_lines[i - 1])
                                                    for i in range(on_base.first, min(on_base.last, len(base_lines)) + 1)}
                    if not whole <= carried_by[sibling.name]:
                        continue  # the sibling did not carry all the code the fix rewrote: its own version of it
                    hit = next((i for i in range(sibling.body or sibling.first, sibling.last + 1)
                                if i <= len(head_lines) and head_squashed[i - 1] == old), None)
                    if hit is None or hit in reported or hit in f.added_lines:
                        continue
                    if edited and not _partly_applied(hit, f.added_lines, head_squashed, head_squashed[fixed_in_span(fixes, name)]):
                        continue  # the PR edited the sibling too and left this line: a deliberate difference, unless
                        # a neighbouring line got the very rewrite the fixed function got (a fix applied in part)
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


def _length_ratio(a: str, b: str) -> float:
    """`SequenceMatcher(None, a, b).real_quick_ratio()`, the bound on their ratio their lengths set, without
    building the matcher (which indexes `b`): asked of every added line of a fixed function per removed line."""
    return 2 * min(len(a), len(b)) / (len(a) + len(b)) if a or b else 1.0


def fixed_in_span(fixes: dict[str, list[tuple[int, str, Span, Span]]], name: str) -> slice:
    span = fixes[name][0][3]
    return slice(span.first - 1, span.last)


def _partly_applied(hit: int, added: set[int], squashed: list[str], fixed_lines: list[str]) -> bool:
    """A line within three of `hit` that the PR added to the sibling, identical to a line of the fixed function:
    the author copied the fix into the sibling and missed this line (aiter 9141aa9301: g_residual and g_out
    rebased by k_offset in both kernels, g_x in one)."""
    mine = set(fixed_lines)
    return any(n in added and squashed[n - 1] in mine and len(squashed[n - 1]) >= MIN_LINE // 2
               for n in range(hit - 3, hit + 4) if 0 < n <= len(squashed) and n != hit)


# A widening or cast in a line (`.to(...)`, `static_cast<...>`, a 64-bit type): dropping one is no fix to copy.
WIDENING = lazy_re(r"\.(to|cast)\(|_cast<|\bu?int64(_t)?\b|\bsize_t\b|\blong\b|\bi64\b|Int64")
IDENT = lazy_re(r"[A-Za-z_]\w*")
# `x = ...`, `x: T = ...`, `const int x = ...`: the name a statement binds (not `a.b =`, `a[i] =`, `==`).
BINDING = lazy_re(r"^\s*(?:[A-Za-z_][\w:<>,*&\s]*\s+)?([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


STATEMENT_KEYWORD = lazy_re(r"^(if|elif|while|return|assert)\b")


def _core(line: str) -> str:
    """A line's formula: without its statement keyword, brackets, blanks and trailing `:`/`,`."""
    text = STATEMENT_KEYWORD.sub("", line.strip())
    return _squash(text).replace("(", "").replace(")", "").rstrip(":,;")


def _statement(lines: list[str], line: int, opening: str = "([{") -> str:
    """The squashed text from `line` to where its brackets close (at most 12 lines; `opening` says which
    brackets hold a statement together: not C++ braces, which open a block)."""
    closing = "".join({"(": ")", "[": "]", "{": "}"}[c] for c in opening)
    text, depth = "", 0
    for i in range(line, min(line + 12, len(lines) + 1)):
        part = _squash(lines[i - 1])
        text += part
        depth += sum(part.count(c) for c in opening) - sum(part.count(c) for c in closing)
        if depth <= 0:
            break
    return text


def _bound(lines: list[str], span: Span) -> set[str]:
    """Names a function body binds by assignment (its locals, not its parameters)."""
    out = set()
    for i in range(span.body or span.first, min(span.last, len(lines)) + 1):
        m = BINDING.match(lines[i - 1])
        if m:
            out.add(m.group(1))
    return out


def _inlined(new: str, added: list[tuple[int, str]], span: Span) -> str:
    """The squashed new form with each local the PR binds on an added line of the function (`name = expr`)
    replaced by its expression."""
    own = re.match(r"^([A-Za-z_]\w*)=(?!=)", new)
    for n, t in added:
        if span.first <= n <= span.last:
            m = re.match(r"^([A-Za-z_]\w*)=(?!=)(.+?);?$", t)
            if m and m.group(1) in IDENT.findall(new) and not (own and own.group(1) == m.group(1)):
                new = re.sub(rf"(?<![\w.]){re.escape(m.group(1))}(?!\w)", lambda _: m.group(2), new)
    return new


def _params(lines: list[str], span: Span) -> set[str]:
    """Names in a function's signature lines (its parameters, with their annotations)."""
    return {n for i in range(span.first, min((span.body or span.first + 1) - 1, len(lines)) + 1)
            for n in IDENT.findall(lines[i - 1])}


def _renamed_local(old: str, new: str, base_bound: set[str], head_bound: set[str]) -> bool:
    """The line differs from its new form only in names the function bound itself and no longer binds:
    a renamed or replaced local (`IDX_LAYOUT` → `X_GATHER_IDX_LAYOUT`, `output_shape` → `tmp_shape`)."""
    gone = set(IDENT.findall(old)) - set(IDENT.findall(new))
    return bool(gone) and all(n in base_bound and n not in head_bound for n in gone)


# ------------------------------------------------------------------------------ twin-divergence

# What copies get wrong (aiter#4113: the forward copy kept int32 offsets, the backward used int64):
# a 64-bit widening, a mask, a bounds `other=`, a barrier. A twin that has fewer of one of these in a
# block it rewrote from the source is the asymmetry to name.
SAFETY_MARKERS = {
    "a 64-bit widening": lazy_re(r"\bu?int64(_t)?\b|\blong\b|\bsize_t\b|\bi64\b"),
    "a mask": lazy_re(r"\bmask\s*="),
    "an `other=` fill": lazy_re(r"\bother\s*="),
    "a barrier": lazy_re(r"__syncthreads|\bbarrier\s*\(|s_barrier|debug_barrier"),
    "a bounds check": lazy_re(r"\bif\s*\(?[^:]*<\s*\w+|\bassert\b|TORCH_CHECK|AITER_CHECK"),
}
ANY_SAFETY_MARKER = lazy_re("|".join(f"(?:{marker.pattern})" for marker in SAFETY_MARKERS.values()))
# A check of the element type is no bounds check: a copy made for another dtype must change it (aiter
# 6ca94eba15: the int8 copy of an a8w4 wrapper drops `assert x.dtype.itemsize > 1`, false for int8).
TYPE_CHECK = lazy_re(r"dtype|itemsize|element_size|scalar_type|is_fp8|float8|\bfp4|int8")
MIN_TWIN_LINES = 20
TWIN_SHARE = 0.6
MAX_CANDIDATES = 150


def _substantive(lines: list[str]) -> list[str]:
    return [s for s in (_squash(t) for t in lines) if len(s) >= 12 and not TRIVIAL_LINE.match(s)]


ERE_SPECIAL = lazy_re(r"([.\[\]()*+?{}|^$\\])")
GLOB_SPECIAL = lazy_re(r"[*?\[\\]")


def _glob_literal(text: str) -> str:
    """`text` matched as itself in a `:(glob)` pathspec (a backslash makes a wildcard literal)."""
    return GLOB_SPECIAL.sub(r"\\\g<0>", text)


def _probes(lines: list[str]) -> list[str]:
    """Two distinctive lines of a file (at a third and two thirds of its long lines): a copy holding most
    of the file's lines holds at least one of them."""
    long = [t.strip() for t in lines if len(t.strip()) >= 30 and not TRIVIAL_LINE.match(t.strip())]
    return list(dict.fromkeys(long[len(long) * k // 3] for k in (1, 2))) if len(long) >= 3 else long


def _parent(path: str) -> str:
    directory = path.rsplit("/", 1)[0] if "/" in path else ""
    return directory.rsplit("/", 1)[0] if "/" in directory else directory


def _candidates(review: ReviewInput, new: list[tuple[ChangedFile, list[str]]]) -> set[str]:
    """Base files (in the new files' parent directories) holding a probe line of one of them: one
    `git grep -l` for the whole PR rather than reading every file of each directory."""
    probes = [p for _, lines in new for p in _probes(lines)]
    if not probes:
        return set()
    parents = {_parent(f.path) for f, _ in new}
    # a copy has its file's suffix (`_copy_source` reads no other): a directory's other files are not read
    suffixes = {f.path.rsplit(".", 1)[-1] for f, _ in new}
    places = sorted(f":(glob){_glob_literal(parent) + '/' if parent else ''}**/*.{_glob_literal(suffix)}"
                    for parent in ({""} if "" in parents else parents) for suffix in suffixes)
    pattern = "|".join(ERE_SPECIAL.sub(r"\\\1", p) for p in dict.fromkeys(probes))
    return {p for p, _, _ in review.source.grep(pattern, "base", tuple(places), files_only=True)}


def _copy_source(review: ReviewInput, f: ChangedFile, lines: list[str], found: set[str]) -> tuple[str, float] | None:
    """The existing file (same extension, same or parent directory) holding most of the new file's
    substantive lines, with the share it holds."""
    mine = _substantive(lines)
    if len(mine) < MIN_TWIN_LINES:
        return None
    suffix = f.path.rsplit(".", 1)[-1]
    parent = _parent(f.path)
    candidates = sorted(p for p in found if p.endswith("." + suffix) and p != f.path
                        and (not parent or p.startswith(parent + "/")))[:MAX_CANDIDATES]
    best: tuple[str, float] | None = None
    for path in candidates:
        theirs = set(_substantive(review.source.lines(path, "base")))
        if not theirs:
            continue
        share = sum(1 for s in mine if s in theirs) / len(mine)
        if share >= TWIN_SHARE and (best is None or share > best[1]):
            best = (path, share)
    return best


COMMENT = {"python": lazy_re(r"#.*$"), "cpp": lazy_re(r"//.*$")}
MAX_LOST_BLOCK = 3  # a copy that drops more than a few lines dropped a feature, not a safeguard
PAIR_SIMILARITY = 0.6


def _may_hold_marker() -> Callable[[str], bool]:
    """False for a line no safety marker can match: every match holds one of a few strings (`int64`,
    `mask`, `if`, …), and most lines of a large rewritten block hold none. Testing for them costs a
    fraction of searching the five patterns (aiter 00cbe979f2 copies 145 lines of a 9,025-line file:
    its asymmetry check, 0.135 -> 0.068 s)."""
    return may_match(ANY_SAFETY_MARKER)


def _asymmetries(source: list[str], copy: list[str], language: str = "python") -> Iterator[tuple[int, str, int, str]]:
    """(copy line, what the copy lacks, source line, source text): a source line holding a safety marker
    whose counterpart in the copy (the most similar line of the block the copy rewrote) lacks it, or a
    short run of marked lines the copy dropped from code it otherwise kept. Comments do not count, and a
    source line the copy holds verbatim anywhere moved rather than got lost."""
    strip = COMMENT.get(language, COMMENT["python"])
    src = [strip.sub("", t) for t in _code_only(source, language)]
    mine = [strip.sub("", t) for t in _code_only(copy, language)]
    squashed = [_squash(t) for t in mine]
    kept = set(squashed)
    may_hold_marker = _may_hold_marker()
    matcher = LineMatcher([_squash(t) for t in source], [_squash(t) for t in copy])
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "delete" and a2 - a1 <= MAX_LOST_BLOCK:
            w = MAX_LOST_BLOCK  # the same stretch on both sides: the source's, and the copy's without the run
            theirs = src[max(a1 - w, 0):a2 + w]
            # the copy's neighbourhood, each line with the rest of its statement (a mask on a continuation line)
            ours = [_statement(mine, k + 1, "([") for k in range(max(b1 - w, 0), min(b1 + w, len(mine)))]
            fewer: dict[str, bool] = {}  # per marker, whether the copy's stretch holds fewer than the source's
            for i in range(a1, a2):
                for what, marker in SAFETY_MARKERS.items():
                    if what == "a bounds check" and TYPE_CHECK.search(src[i]):
                        continue
                    if marker.search(src[i]):
                        if what not in fewer:
                            fewer[what] = sum(len(marker.findall(t)) for t in ours) < \
                                sum(len(marker.findall(t)) for t in theirs)
                        if fewer[what]:
                            yield max(b1, 1), what, i + 1, source[i].strip()
        elif op == "replace":
            for i in range(a1, a2):
                if not may_hold_marker(src[i]) or _squash(src[i]) in kept:
                    continue
                alike: tuple[float, int] | None = None  # the copy's line most like this one, asked once
                for what, marker in SAFETY_MARKERS.items():
                    have = len(marker.findall(src[i]))
                    if not have or (what == "a bounds check" and TYPE_CHECK.search(src[i])):
                        continue
                    if alike is None:
                        alike = _most_alike(_squash(src[i]), ((k, squashed[k]) for k in range(b1, b2)), PAIR_SIMILARITY)
                    ratio, j = alike
                    if ratio >= PAIR_SIMILARITY and not marker.search(mine[j]) \
                            and not marker.search(_around(mine, j)):  # none left in the statement (a reflowed call)
                        yield j + 1, what, i + 1, source[i].strip()


def _most_alike(text: str, others: Iterable[tuple[int, str]], threshold: float) -> tuple[float, int]:
    """`max((SequenceMatcher(None, text, other).ratio(), k) for k, other in others)` (default (0.0, -1))
    wherever it is `threshold` or more, which is all a caller reads: a pair whose cheap upper bounds (the
    lengths, `quick_ratio`) are below that, or below the best ratio so far, cannot be the maximum and is
    not matched in full."""
    best, at = 0.0, -1
    for k, other in others:
        floor = max(best, threshold)
        if _length_ratio(text, other) < floor:
            continue
        m = SequenceMatcher(None, text, other)
        if m.quick_ratio() < floor:
            continue
        r = m.ratio()
        if (r, k) > (best, at):
            best, at = r, k
    return best, at


STRING = lazy_re(r"(?P<q>\"\"\"|'''|\"|')(?:\\.|(?!(?P=q)).)*(?P=q)")


def _code_only(lines: list[str], language: str) -> list[str]:
    """Python lines with string literals emptied and the inside of multi-line strings blanked: code that a
    generator emits as text (C++ in a Python template) is no marker."""
    if language != "python":
        return lines
    out, inside = [], None
    for line in lines:
        if inside:
            end = line.find(inside)
            if end < 0:
                out.append("")
                continue
            line, inside = line[end + 3:], None
        line = STRING.sub("\"\"", line)
        opened = re.search(r"(\"\"\"|''')", line)
        if opened:
            line, inside = line[:opened.start()], opened.group(1)
        out.append(line)
    return out


def _around(lines: list[str], j: int) -> str:
    """The squashed statement holding line j (0-based): from the nearest earlier line whose brackets are
    still open at j, to where they close."""
    start, open_, most = j, 0, 0
    for k in range(j - 1, max(j - 12, -1), -1):
        open_ += sum(lines[k].count(c) for c in "([{") - sum(lines[k].count(c) for c in ")]}")
        if open_ > most:  # line k opens a bracket still open at j
            start, most = k, open_
    return _statement(lines, start + 1)


@detector("twin-divergence")
def twin_divergence(review: ReviewInput) -> Iterable[Finding]:
    new = [(f, review.source.lines(f.path)) for f in review.changed("python", "cpp", include_tests=False) if f.is_new]
    new = [(f, lines) for f, lines in new if len(_substantive(lines)) >= MIN_TWIN_LINES]
    if not new:
        return
    candidates = _candidates(review, new)
    for f, lines in new:
        found = _copy_source(review, f, lines, candidates)
        if found is None:
            continue
        source_path, share = found
        source_lines = review.source.lines(source_path, "base")
        asymmetries = list(_asymmetries(source_lines, lines, f.language))
        if f.language == "cpp" and asymmetries:
            # headers count: a barrier or check the copy keeps in its own header is not lost
            headers = "\n".join(review.source.text(p) or "" for p in symbol_family(review, f.path)[1:])
            asymmetries = [a for a in asymmetries if not SAFETY_MARKERS[a[1]].search(headers)]
        if not asymmetries:
            continue  # a faithful copy: the finding is the asymmetry, not the copy
        line, what, src_line, src_text = asymmetries[0]
        more = "; ".join(f"line {a} lacks {w} (source line {s})" for a, w, s, _ in asymmetries[1:4])
        yield Finding(
            rule="twin-divergence", path=f.path, line=line,
            problem=f"`{f.path}` is a copy of `{source_path}` ({share:.0%} of its substantive lines are there), "
                    f"and this block, rewritten from the source, lacks {what} the source has at line {src_line} "
                    f"(`{src_text[:90]}`)" + (f"; also {more}" if more else "") + ".",
            impact="One twin keeps an assumption the other dropped (int32 versus int64 offsets, a missing mask "
                   "or barrier) and computes wrong results only on its own path.",
            action="Reviewer should compare the twins block by block and ask the author to justify each "
                   "asymmetry, or to factor the shared code so it cannot drift.",
            tag="inferred",
            evidence=[Evidence(source_path, src_line, src_text[:120], side="base")],
        )


# ------------------------------------------------------------------------------ D5

MIN_BLOCK = 8
PY_KEYWORDS = frozenset(keyword.kwlist)


def _shape(line: str) -> str:
    """A line with identifiers masked: the token shape two renamed copies share."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return re.sub(r"[A-Za-z_]\w*", "ID", _squash(line))
    out = []
    for tok in tokens:
        if tok.type == tokenize.NAME and tok.string not in PY_KEYWORDS:
            out.append("ID")
        elif tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT, tokenize.INDENT,
                          tokenize.DEDENT):
            continue
        else:
            out.append(tok.string)
    return " ".join(out)


def _restyled(removed: list[tuple[int, str]]):
    """A predicate: the added line names nothing a removed line of the same file did not (up to two names
    dropped, `Optional[torch.Tensor]` -> `torch.Tensor | None`): restyled or moved, not new code."""
    names = [frozenset(IDENT.findall(t)) - PY_KEYWORDS for _, t in removed]
    posting: dict[str, list[int]] = {}
    for i, ids in enumerate(names):
        for name in ids:
            posting.setdefault(name, []).append(i)

    def check(text: str) -> bool:
        ids = frozenset(IDENT.findall(text)) - PY_KEYWORDS
        if not ids or any(n not in posting for n in ids):
            return False
        rarest = min(ids, key=lambda n: len(posting[n]))
        return any(ids <= names[i] and len(names[i]) - len(ids) <= 2 for i in posting[rarest])
    return check


def _added_runs(f: ChangedFile, code: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Runs of consecutive added code lines (blank and comment lines do not break a run)."""
    runs: list[list[tuple[int, str]]] = []
    last = None
    for n, t in code:
        if last is not None and all(i in f.added_lines for i in range(last + 1, n)):
            runs[-1].append((n, t))
        else:
            runs.append([(n, t)])
        last = n
    return [r for r in runs if len(r) >= MIN_BLOCK]


def _common_block(a: list[tuple[int, str]], b: list[tuple[int, str]]) -> tuple[int, int, int] | None:
    """(start in a, start in b, length) of the longest run of lines with the same token shape."""
    sa, sb = [_shape(t) for _, t in a], [_shape(t) for _, t in b]
    match = SequenceMatcher(None, sa, sb, autojunk=False).find_longest_match(0, len(sa), 0, len(sb))
    if match.size < MIN_BLOCK:
        return None
    block = sa[match.a:match.a + match.size]
    if sum(1 for s in block if len(s.split()) >= 6) < MIN_BLOCK // 2:
        return None  # mostly short lines (`ID = ID`, calls with one argument): boilerplate, not a formula
    return match.a, match.b, match.size


@detector("backbone-verbatim-duplication")
def backbone_verbatim_duplication(review: ReviewInput) -> Iterable[Finding]:
    core = {c.path for c in review.evidence.get("backbone") or [] if c.tier in (1, 2)}
    runs = {}
    for f in review.changed("python", "cpp", include_tests=False):
        if f.path in core:
            code = review.code.get(f.path)
            restyled = _restyled(code.removed if code else f.removed)
            found = [kept for run in _added_runs(f, code.added if code else f.added)
                     if len(kept := [(n, t) for n, t in run if not restyled(t)]) >= MIN_BLOCK]
            if found:
                runs[f.path] = (f, found)
    paths = sorted(runs)
    for i, first in enumerate(paths):
        for second in paths[i + 1:]:
            best = None
            for a in runs[first][1]:
                for b in runs[second][1]:
                    common = _common_block(a, b)
                    if common and (best is None or common[2] > best[4]):
                        best = (a, b, common[0], common[1], common[2])
            if best is None:
                continue
            a, b, start_a, start_b, size = best
            line_a, line_b = a[start_a][0], b[start_b][0]
            renamed = sum(1 for k in range(size) if _squash(a[start_a + k][1]) != _squash(b[start_b + k][1]))
            yield Finding(
                rule="backbone-verbatim-duplication", path=second, line=line_b,
                problem=f"{size} added lines here have the same token shape as {first}:{line_a}–"
                        f"{a[start_a + size - 1][0]}" + (f", with only names changed on {renamed} of them"
                                                          if renamed else ", verbatim")
                        + "; both files are Tier 1/2 backbone.",
                impact="Each file has its own invariants: a formula right for one may compute wrong offsets in "
                       "the other, and the two copies will drift apart.",
                action="Author must confirm the block was checked against each file's own variables, or factor "
                       "it into one shared helper.",
                tag="verified", evidence=[Evidence(first, line_a, a[start_a][1].strip())],
            )


# ------------------------------------------------------------------------------ twin functions

# Mirrored functions of one file (or of a PR's pair of twin files): fwd/bwd, prefill/decode, _v1/_v2,
# per-arch copies. Their bodies are near-identical on base; the PR edits one and leaves an asymmetry
# the base pair did not have. What goes wrong between twins is read from the parse tree, per line:
# a 64-bit widening (`tl.int64`, `int64_t`, `size_t`, `long`), a `mask=`/`other=` on a load or store,
# a barrier call, and (from the tokens) the order of the strides in an address.
TWIN_BODY = 0.75  # base similarity of the two bodies' lines
MIN_TWIN_BODY = 8  # substantive lines in each body
MAX_TWIN_BODY = 600
WIDE_ATTRS = frozenset({"int64", "uint64", "i64", "long"})
WIDE_CPP_TOKEN = lazy_re(r"\b(u?int64_t|size_t|ssize_t|ptrdiff_t|long)\b")
BARRIER_CALL = lazy_re(r"barrier|^__syncthreads$|^__syncwarp$|^block_sync_lds$")
STRIDE = lazy_re(r"\b\w*stride\w*\b", re.I)
WIDENING_KIND, MASK_KIND, OTHER_KIND, BARRIER_KIND, STRIDE_KIND = (
    "a 64-bit widening", "a mask", "an `other=` fill", "a barrier", "the same stride order")
TWIN_FILE_SWAPS = (("fwd", "bwd"), ("forward", "backward"), ("prefill", "decode"), ("gfx942", "gfx950"),
                   ("v1", "v2"), ("v2", "v3"))
# each swapped word as a path part holds it: not inside a longer lower-case word or number
SWAP_WORDS = {word: lazy_re(rf"(?<![a-z0-9]){word}(?![a-z0-9])") for pair in TWIN_FILE_SWAPS for word in pair}


class _Side:
    """One side of one file: its function spans, its lines with comments removed and whitespace squashed
    (for Python one entry per statement, at its first line, the others empty: twins are paired statement
    by statement) and its markers per line. A pair is compared in its two functions only, so a line is
    squashed when `body` first reads its function (squashing a 6,500-line file whole costs 20 ms), and a
    Python side's markers are counted when first read (most candidate pairs are not twins on base)."""

    def __init__(self, spans: list[Span], raw: list[str], comment: re.Pattern[str],
                 starts: Callable[[], dict[int, int]] | None, marks: Callable[[], dict[int, dict[str, int]]]) -> None:
        self.spans = spans
        self.lines: list[str] = [None] * len(raw)  # type: ignore[list-item]  # made by `body`
        self._raw, self._comment, self._starts, self._marks = raw, comment, starts, marks
        self._members: dict[int, list[int]] | None = None  # per statement start, its lines

    @cached_property
    def marks(self) -> dict[int, dict[str, int]]:
        return self._marks()

    def body(self, span: Span) -> list[int]:
        """The substantive line numbers of a function body, their lines made."""
        numbers = range(span.body or span.first, min(span.last, len(self.lines)) + 1)
        for n in numbers:
            if self.lines[n - 1] is None:
                self.lines[n - 1] = self._line(n)
        return [n for n in numbers if len(self.lines[n - 1]) >= 4]

    def _line(self, n: int) -> str:
        if self._starts is None:
            return self._squashed(n)
        starts = self._starts()
        if starts.get(n, n) != n:
            return ""
        if self._members is None:
            self._members = {}
            for line, start in sorted(starts.items()):
                if line <= len(self._raw):
                    self._members.setdefault(start, []).append(line)
        return "".join(map(self._squashed, self._members.get(n, ())))

    def _squashed(self, n: int) -> str:
        return _squash(self._comment.sub("", self._raw[n - 1]))


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _py_statements(tree: ast.Module) -> dict[int, int]:
    """line -> first line of the innermost statement (or compound statement header) holding it."""
    starts: dict[int, int] = {}
    for node in index_of(tree).of_type(ast.stmt):
        body = getattr(node, "body", None)
        last = (body[0].lineno - 1) if isinstance(body, list) and body and hasattr(body[0], "lineno") \
            else (node.end_lineno or node.lineno)
        for line in range(node.lineno, last + 1):
            if line not in starts or starts[line] < node.lineno:
                starts[line] = node.lineno
    return starts


def _py_marks(tree: ast.Module, starts: dict[int, int]) -> dict[int, dict[str, int]]:
    """Markers per statement (at its first line: a reflowed call keeps its marks together)."""
    index = index_of(tree)
    marks: dict[int, dict[str, int]] = {}

    def add(line: int, kind: str) -> None:
        line = starts.get(line, line)
        marks.setdefault(line, {}).setdefault(kind, 0)
        marks[line][kind] += 1
    for node in index.of_type(ast.Attribute):
        if node.attr in WIDE_ATTRS:
            add(node.lineno, WIDENING_KIND)
    helpers = set()  # functions of the module that call a barrier: calling one is the barrier
    for call in index.of_type(ast.Call):
        if BARRIER_CALL.search(_call_name(call)):
            helpers.update(a.name for a in index.ancestors(call) if isinstance(a, ast.FunctionDef))
    for call in index.of_type(ast.Call):
        if BARRIER_CALL.search(_call_name(call)) or _call_name(call) in helpers:
            add(call.lineno, BARRIER_KIND)
        for kw in call.keywords:
            if kw.arg in ("mask", "other") and not (isinstance(kw.value, ast.Constant) and kw.value.value is None):
                add(getattr(kw, "lineno", call.lineno), MASK_KIND if kw.arg == "mask" else OTHER_KIND)
    return marks


def _cpp_marks(tree, lines: list[str], helpers: frozenset[str] = frozenset()) -> dict[int, dict[str, int]]:
    """Barrier calls from the tree's call list; 64-bit types from the tokens of each line with the tree's
    comments cut out (type nodes are not in the shared node lists, and walking each tree again costs more)."""
    marks: dict[int, dict[str, int]] = {}

    def add(line: int, kind: str, n: int = 1) -> None:
        marks.setdefault(line, {}).setdefault(kind, 0)
        marks[line][kind] += n
    code = list(lines)
    for node in cpp.nodes_of_type(tree, "comment"):
        (r1, c1), (r2, c2) = node.start_point, node.end_point
        for r in range(r1, min(r2, len(code) - 1) + 1):
            start = c1 if r == r1 else 0
            end = c2 if r == r2 else len(code[r])
            code[r] = code[r][:start] + " " * max(end - start, 0) + code[r][end:]
    for i, text in enumerate(code, 1):
        wide = len(WIDE_CPP_TOKEN.findall(text))
        if wide:
            add(i, WIDENING_KIND, wide)
    for call in cpp.nodes_of_type(tree, "call_expression"):
        name = cpp.callee_name(call)
        if BARRIER_CALL.search(name) or name in helpers:
            add(cpp.line_of(call), BARRIER_KIND)
    return marks


def _cpp_barrier_helpers(texts: list[str]) -> frozenset[str]:
    """Functions of a file and its headers whose body calls a barrier: calling one is the barrier
    (headers count: `sync_lds()` defined in the `.cuh` is as good as `__syncthreads()` inline)."""
    out = set()
    for text in texts:
        for call in cpp.nodes_of_type(cpp.parse(text), "call_expression"):
            if BARRIER_CALL.search(cpp.callee_name(call)):
                func = cpp.enclosing_function(call)
                if func is not None and cpp.function_name(func):
                    out.add(cpp.function_name(func).rsplit("::", 1)[-1])
    return frozenset(out)


def _twin_side(review: ReviewInput, path: str, language: str, side: str) -> _Side | None:
    starts: Callable[[], dict[int, int]] | None = None
    if language == "python":
        tree = review.source.python(path, side)  # type: ignore[arg-type]
        if tree is None:
            return None
        statements: list[dict[int, int]] = []

        def starts() -> dict[int, int]:
            if not statements:
                statements.append(_py_statements(tree))
            return statements[0]

        def marks() -> dict[int, dict[str, int]]:
            return _py_marks(tree, starts())
    else:
        text = review.source.text(path, side)  # type: ignore[arg-type]
        if text is None:
            return None
        family = [review.source.text(p, side) or "" for p in symbol_family(review, path)[1:]]  # type: ignore[arg-type]
        counted = _cpp_marks(cpp.parse(text), text.split("\n"), _cpp_barrier_helpers([text] + family))

        def marks() -> dict[int, dict[str, int]]:
            return counted
    return _Side(_spans(review, path, language, side), review.source.lines(path, side),  # type: ignore[arg-type]
                 COMMENT.get(language, COMMENT["python"]), starts, marks)


@lru_cache(maxsize=16384)
def _name_tokens(name: str) -> tuple[list[str], frozenset[str]]:
    tokens = [t for t in re.split(r"_+", name.strip("_").lower()) if t]
    return tokens, frozenset(tokens)


def _twin_names(a: str, b: str) -> bool:
    """Names that differ in one place by one token for another, or by one or two tokens more
    (`_attn_fwd`/`_attn_bwd`, `paged_attention_prefill`/`paged_attention_decode`, `kernel`/`kernel_v2`,
    `rmsnorm_gfx942`/`rmsnorm_gfx950`), sharing the rest."""
    if a == b:
        return True  # the same function in a twin file
    (ta, sa), (tb, sb) = _name_tokens(a), _name_tokens(b)
    # One differing run of at most two tokens on one side and one on the other: the lengths differ by two
    # at most, and each side has no more tokens the other lacks than its run holds. Most pairs of a
    # file's functions fail this (every touched function is tried against every function), unmatched.
    only_a, only_b = len(sa - sb), len(sb - sa)
    if abs(len(ta) - len(tb)) > 2 or max(only_a, only_b) > 2 or min(only_a, only_b) > 1:
        return False
    return _one_run_apart(a, b)


@lru_cache(maxsize=8192)
def _one_run_apart(a: str, b: str) -> bool:
    ta, tb = _name_tokens(a)[0], _name_tokens(b)[0]
    ops = [op for op in SequenceMatcher(None, ta, tb, autojunk=False).get_opcodes() if op[0] != "equal"]
    if len(ops) != 1 or len(ta) + len(tb) - (ops[0][2] - ops[0][1]) - (ops[0][4] - ops[0][3]) < 2:
        return False  # more than one difference, or nothing shared
    _, a1, a2, b1, b2 = ops[0]
    return max(a2 - a1, b2 - b1) <= 2 and min(a2 - a1, b2 - b1) <= 1


def _maybe_twins(lines: list[str], touched: list[Span], spans: list[Span]) -> bool:
    """Whether a touched function has a twin-named function whose head body is roughly alike (a bag-of-lines
    bound, before any base side is parsed)."""
    bodies: dict[Span, list[str]] = {}

    def body(s: Span) -> list[str]:
        if s not in bodies:
            bodies[s] = [t.strip() for t in lines[(s.body or s.first) - 1:s.last] if len(t.strip()) >= 4]
        return bodies[s]
    for a in touched:
        for b in spans:
            if a.name == b.name or not _twin_names(a.name, b.name) or a.last - a.first > MAX_TWIN_BODY:
                continue
            la, lb = len(body(a)), len(body(b))
            if min(la, lb) < MIN_TWIN_BODY or min(la, lb) < 0.6 * max(la, lb):
                continue
            if SequenceMatcher(None, body(a), body(b), autojunk=False).quick_ratio() >= TWIN_BODY - 0.15:
                return True
    return False


def _stride_order(a: str, b: str) -> bool:
    """Two lines alike but for the order of their stride names (`x*stride_m + y*stride_n` against
    `x*stride_n + y*stride_m`)."""
    sa, sb = STRIDE.findall(a), STRIDE.findall(b)
    return len(sa) >= 2 and sa != sb and sorted(sa) == sorted(sb) and STRIDE.sub("S", a) == STRIDE.sub("S", b)


MAX_PAIRINGS = 2500


def _best(text: str, others: list[str], within: range) -> int:
    """The index in `within` of the statement most like `text` (at least PAIR_SIMILARITY alike), or -1."""
    ratio, at = _most_alike(text, ((k, others[k]) for k in within), PAIR_SIMILARITY)
    return at if ratio >= PAIR_SIMILARITY else -1


def _pair_asymmetries(fs: _Side, fb: list[int], gs: _Side, gb: list[int]) -> list[tuple[str, int, int | None, bool]]:
    """(kind, F line, G line or None, whether F is the twin that has it) for every marker one twin's line has
    more of than its counterpart: the most similar line of a rewritten block, or nothing for a short run
    only one twin has (when the other's neighbourhood lacks it too)."""
    out: list[tuple[str, int, int | None, bool]] = []
    a, b = [fs.lines[i - 1] for i in fb], [gs.lines[i - 1] for i in gb]
    matcher = LineMatcher(a, b)

    def count(side: _Side, lines: list[int], kind: str) -> int:
        return sum(side.marks.get(i, {}).get(kind, 0) for i in lines)
    for op, a1, a2, b1, b2 in matcher.get_opcodes():
        if op == "equal":
            continue
        if op == "replace":
            if (a2 - a1) * (b2 - b1) > MAX_PAIRINGS:
                continue  # a block rewritten wholesale: no line-for-line counterpart to compare
            # only statements that carry a marker (on either side) or two strides can differ in one
            marked_a = [i for i in range(a1, a2) if fs.marks.get(fb[i]) or len(STRIDE.findall(a[i])) >= 2]
            marked_b = [k for k in range(b1, b2) if gs.marks.get(gb[k])]
            pairs = {(i, _best(a[i], b, range(b1, b2))) for i in marked_a}
            pairs |= {(_best(b[k], a, range(a1, a2)), k) for k in marked_b}
            for i, j in sorted(p for p in pairs if p[0] >= 0 and p[1] >= 0):
                fm, gm = fs.marks.get(fb[i], {}), gs.marks.get(gb[j], {})
                for kind in set(fm) | set(gm):
                    if fm.get(kind, 0) != gm.get(kind, 0):
                        out.append((kind, fb[i], gb[j], fm.get(kind, 0) > gm.get(kind, 0)))
                if _stride_order(a[i], b[j]):
                    out.append((STRIDE_KIND, fb[i], gb[j], True))
            continue
        # lines only one twin has
        for lines_of, own, other, o1, o2, p1, f_has in ((fb, fs, gs, a1, a2, b1, True), (gb, gs, fs, b1, b2, a1, False)):
            if o2 - o1 == 0 or o2 - o1 > MAX_LOST_BLOCK:
                continue
            w = MAX_LOST_BLOCK
            mine = lines_of[max(o1 - w, 0):o2 + w]
            theirs_list = gb if f_has else fb
            theirs = theirs_list[max(p1 - w, 0):p1 + w]
            for i in range(o1, o2):
                for kind in own.marks.get(lines_of[i], {}):
                    if count(other, theirs, kind) < count(own, mine, kind):
                        if f_has:
                            out.append((kind, lines_of[i], None, True))
                        else:  # the line F lacks: anchored at F's line before the gap
                            out.append((kind, -fb[max(p1 - 1, 0)] if fb else 0, lines_of[i], False))
    return out


def _twin_files(review: ReviewInput, f: ChangedFile, changed: dict[str, ChangedFile]) -> list[str]:
    """Files mirroring `f`: another file of the PR whose path differs in one component by twin names, or an
    existing file whose path swaps fwd/bwd, prefill/decode, per-arch or version tokens."""
    parts = f.path.split("/")
    out = []
    for other in changed:
        o = other.split("/")
        if other == f.path or len(o) != len(parts) or other.rsplit(".", 1)[-1] != f.path.rsplit(".", 1)[-1]:
            continue
        diff = [k for k in range(len(parts)) if parts[k] != o[k]]
        if len(diff) == 1 and _twin_names(parts[diff[0]].rsplit(".", 1)[0], o[diff[0]].rsplit(".", 1)[0]):
            out.append(other)
    for x, y in TWIN_FILE_SWAPS:
        for old, new in ((x, y), (y, x)):
            swapped = SWAP_WORDS[old].sub(new, f.path)
            if swapped != f.path and swapped not in out and swapped not in changed \
                    and review.source.exists(swapped) and review.source.exists(swapped, "base"):
                out.append(swapped)
    return out


def _any_within(lines: list[int], first: int, last: int) -> bool:
    """Whether a line of the sorted `lines` lies in first..last (a look-up, not a scan per function)."""
    at = bisect_left(lines, first)
    return at < len(lines) and lines[at] <= last


@detector("twin-divergence")
def twin_function_divergence(review: ReviewInput) -> Iterable[Finding]:
    files = {f.path: f for f in review.changed("python", "cpp", include_tests=False)
             if not f.is_new and (f.added or f.removed) and not f.skipped}
    sides: dict[tuple[str, str], _Side | None] = {}

    def side_of(path: str, old: str, language: str, side: str) -> _Side | None:
        key = (path if side == "head" else old, side)
        if key not in sides:
            sides[key] = _twin_side(review, key[0], language, side)
        return sides[key]
    reported: set[tuple[str, int]] = set()
    for f in files.values():
        spans = _spans(review, f.path, f.language, "head")
        if not spans:
            continue
        added = f.added_lines
        # where a hunk deleted lines, its head position stands for them
        at = added | {max(h[2], 1) for h in f.hunks if h[1]} | {h[2] + 1 for h in f.hunks if h[1]}
        at_sorted = sorted(at)
        touched = [s for s in spans if _any_within(at_sorted, s.first, s.last)]
        twin_paths = _twin_files(review, f, files)
        if not twin_paths and not _maybe_twins(review.source.lines(f.path), touched, spans):
            continue  # no changed function has a twin-named, similar function: nothing to compare (cheap exit)
        head = side_of(f.path, f.old_path or f.path, f.language, "head")
        if head is None or not head.spans:
            continue
        base = side_of(f.path, f.old_path or f.path, f.language, "base")
        if base is None:
            continue
        removed = sorted({n for n, _ in f.removed})
        cut = {s.name for s in base.spans if _any_within(removed, s.body, s.last)}  # lines only deleted
        added_sorted = sorted(added)
        changed_fns = [s for s in head.spans if s.last - s.first <= MAX_TWIN_BODY
                       and (s.name in cut or _any_within(added_sorted, s.body, s.last))]
        if not changed_fns:
            continue
        homes = [(f.path, f.old_path or f.path, head, base, added)]
        for other in twin_paths:
            g = files.get(other)
            oh = side_of(other, (g.old_path or other) if g else other, f.language, "head")
            ob = side_of(other, (g.old_path or other) if g else other, f.language, "base")
            if oh is not None and ob is not None:
                homes.append((other, (g.old_path or other) if g else other, oh, ob, g.added_lines if g else set()))
        base_by_name = {s.name: s for s in base.spans}
        for fn in changed_fns:
            fn_base = base_by_name.get(fn.name)
            if fn_base is None:
                continue
            fb_base, fb_head = base.body(fn_base), head.body(fn)
            if not MIN_TWIN_BODY <= len(fb_base) <= MAX_TWIN_BODY:
                continue
            base_text = [base.lines[i - 1] for i in fb_base]
            for g_path, g_old, gh, gbs, g_added in homes:
                g_base_by_name = {s.name: s for s in gbs.spans}
                for twin in gh.spans:
                    if (g_path == f.path and twin.name == fn.name) or not _twin_names(fn.name, twin.name):
                        continue
                    if g_path != f.path and twin.name != fn.name and any(s.name == fn.name for s in gh.spans):
                        continue  # the twin file has this very function: that is its twin
                    tw_base = g_base_by_name.get(twin.name)
                    if tw_base is None or twin.last - twin.first > MAX_TWIN_BODY:
                        continue
                    gb_base = gbs.body(tw_base)
                    if len(gb_base) < MIN_TWIN_BODY or min(len(gb_base), len(fb_base)) < 0.6 * max(len(gb_base), len(fb_base)):
                        continue
                    matcher = LineMatcher(base_text, [gbs.lines[i - 1] for i in gb_base])
                    if matcher.real_quick_ratio() < TWIN_BODY or matcher.quick_ratio() < TWIN_BODY or matcher.ratio() < TWIN_BODY:
                        continue  # not twins on base
                    gb_head = gh.body(twin)
                    before = _pair_asymmetries(base, fb_base, gbs, gb_base)
                    after = _pair_asymmetries(head, fb_head, gh, gb_head)
                    had: dict[tuple[str, bool], int] = {}
                    for kind, _, _, f_has in before:
                        had[(kind, f_has)] = had.get((kind, f_has), 0) + 1
                    now: dict[tuple[str, bool], int] = {}
                    for kind, _, _, f_has in after:
                        now[(kind, f_has)] = now.get((kind, f_has), 0) + 1
                    new = [a for a in after if now[(a[0], a[3])] > had.get((a[0], a[3]), 0)]
                    # the PR edited F's side of each asymmetry and not the twin's (a negative F line: F has no
                    # line there, the anchor is the line before the gap)
                    was = set(base_text)  # F's statements on base: one the PR only re-indented or re-wrapped is no change
                    found = [x for x in new if ((x[1] in added and head.lines[x[1] - 1] not in was) or (x[1] < 0 and not x[3]))
                             and (x[2] is None or x[2] not in g_added)]
                    if not found:
                        continue
                    at_line = abs(found[0][1])
                    if (f.path, at_line) in reported:
                        continue
                    reported.add((f.path, at_line))
                    where = f"`{twin.name}`" + ("" if g_path == f.path else f" in `{g_path}`")
                    every = "; ".join(_describe(x) for x in found[:6])
                    twin_line = found[0][2] or twin.first
                    yield Finding(
                        rule="twin-divergence", path=f.path, line=at_line,
                        problem=f"`{fn.name}` and {where} were near-identical twins on base "
                                f"({matcher.ratio():.0%} of their lines alike); the PR changed `{fn.name}` and left "
                                f"asymmetries the base pair did not have: {every}.",
                        impact="One twin keeps an assumption the other dropped (int32 versus int64 offsets, a mask, "
                               "a barrier, the stride order) and computes wrong results only on its own path.",
                        action=f"Reviewer should ask the author to make the same change in {where}, or to state why "
                               "that twin must differ.",
                        tag="inferred",
                        evidence=[Evidence(g_path, twin_line, (review.source.lines(g_path)[twin_line - 1].strip()[:120]
                                                               if twin_line <= len(review.source.lines(g_path)) else twin.name))],
                    )


def _describe(a: tuple[str, int, int | None, bool]) -> str:
    kind, f_line, g_line, f_has = a
    twin = f"twin line {g_line}" if g_line else "the twin"
    if kind == STRIDE_KIND:
        return f"line {f_line} orders its strides unlike {twin}"
    if f_line < 0:
        return f"after line {-f_line} nothing stands for {twin}, which has {kind}"
    return f"line {f_line} {'has' if f_has else 'lacks'} {kind}" + (f" ({twin} {'lacks' if f_has else 'has'} it)")
