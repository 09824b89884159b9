"""guards: the fate of every guard the PR deletes — moved, changed (weakened?), handled, or gone.

A guard is an `assert`, an `if … raise`, a `raise`, a zero-initialisation (`torch.zeros`, `.zero_()`,
`.fill_(0)`, `::zeros`, a memset of 0), a `.contiguous()` call, or a C++ `TORCH_CHECK`/`AITER_CHECK`/`assert`/`throw`. Python is read
with `ast` on the base side (where the guard was) and the head side (where it may have gone); C++ with
tree-sitter (lang/cpp_guards.py). Only code lines count: a guard whose lines are deleted and re-added
identically was cancelled out by triage before this runs.

Fates:
  moved      the same guard (or the same asserted condition) is on the head side, maybe elsewhere
  changed    a guard of the same function checking the same names came back in another form
  replaced   a zero-initialised buffer is now allocated uninitialised (`torch.empty`) for the same target
  gone       (for an in-place zeroing) the buffer is still used in the function and nothing clears it
  handled    head handles the checked name another way (std::optional / `is not None` at every use)
  gone-with-function / gone-with-branch / gone-with-subject / gone-with-use / gone-with-file
             the guarded code itself went away, so nothing is left to guard
  gone       nothing on the head side checks it any more
"""
from __future__ import annotations

import ast
import re
from bisect import bisect_left
from functools import lru_cache
from typing import Iterator

from ..detectors.base import ReviewInput
from ..git.diff import ChangedFile
from ..lang import Unparsable, cpp_guards
from ..lang.index import index_of
from ..lang.python import children, dotted_name, parse_expression, walk
from ..lang.python import comments as py_comments
from ..lang.regex import lazy_re
from ..model import field, record
from . import Artifact, collector
from ._util import head_position, replacement_block, short

PREFILTER = lazy_re(r"\bassert\b|\braise\b|\bthrow\b|CHECK|zeros|zero_\(|fill_\(|[Mm]emset|contiguous\(|ASSERT|_check\(")
CONDITION_LINE = lazy_re(r"^\s*(?:el)?if\b|^\s*(?:else\s+)?if\s*\(")  # an `if … raise` edits only its test
INVARIANT_WORDS = lazy_re(
    r"\b(must|required|requires|require|needs? to|has to|have to|do not remove|don't remove|never remove|"
    r"otherwise|guarantees?|invariant)\b|read back as zero|must be zero|zero[- ]?init\w* (?:is )?(?:needed|required)",
    re.IGNORECASE)
# A comment above a zeroing that gives its purpose states the invariant as well as a `must` would: "zero output so
# padded rows stay deterministic". A bare description ("split-k atomic-accumulates into Out", "zero the buffer") does not.
ZERO_PURPOSE = lazy_re(r"\bzero\w*\b[^.;:]*?(?:\bso (?:that )?\w|\botherwise\b|\bbecause\b|\bto (?:keep|avoid|ensure|prevent|"
                       r"guarantee)\b|\bdeterministic|\bgarbage\b|\bNaNs?\b|\bstale\b)", re.IGNORECASE)
CONTRADICTION_WORDS = lazy_re(
    r"\b(not needed|no need|needn't|never read|not read|unnecessary|not required|no longer (?:needed|required)|"
    r"uninitiali[sz]ed|ignores? it|ignored|no zero[- ]?init\w*|left as garbage|don't care)\b", re.IGNORECASE)
ZERO_JUSTIFY = lazy_re(r"\b(memset\w*|zeroe?s? (?:it|this|the)|writes? (?:every|all|each)|every (?:\w+ )?element|"
                          r"fully (?:written|overwritten)|overwrit\w*|never read|not read|is safe|safe because)\b",
                          re.IGNORECASE)
OPTIONAL_HINT = lazy_re(r"has_value\(\)|!=\s*nullptr|==\s*nullptr|std::optional|c10::optional|Optional\[|"
                           r"\| None\b|\bis not None\b|\bis None\b|value_or\(")
PY_NOISE = {"self", "cls", "len", "int", "float", "str", "bool", "tuple", "list", "dict", "set", "isinstance",
            "type", "all", "any", "torch", "aiter", "np", "dtypes", "None", "True", "False", "shape", "dtype",
            "dim", "size", "numel", "is_contiguous", "device", "stride", "min", "max", "range", "math",
            "ValueError", "RuntimeError", "AssertionError", "TypeError", "NotImplementedError", "KeyError"}
EMPTY_CALLS = ("empty", "empty_like", "new_empty", "empty_strided")
CONDITION_KINDS = {"assert", "if-raise", "check", "throw", "raise"}


@record
class Guard:
    kind: str  # assert | if-raise | raise | check | throw | zeros | contiguous
    line: int
    end_line: int
    anchor: set[int]  # lines whose deletion deletes the guard
    key: str  # normalised, for exact matching
    text: str  # one-line display
    asserted: str = ""  # normalised condition that must hold ('' for zeros/contiguous/plain raise)
    subjects: set[str] = field(default_factory=set)
    function: str = ""
    target: str = ""
    stmt_line: int = 0  # first line of the enclosing statement (for the comment above it)
    exc: str = ""  # exception type of a raise
    message: str = ""  # literal text of the guard's message (assert msg, exception text, check arguments)
    inplace: bool = False  # a zeroing of an existing buffer (`.zero_()`, `.fill_(0)`, memset), not an allocation


@record
class GuardFate:
    path: str
    base_line: int
    kind: str
    text: str
    fate: str
    function: str = ""
    head_line: int | None = None  # where a finding about it belongs on the head side
    where: str = ""  # path:line on head of the moved/changed/replacing code
    new_text: str = ""
    weakened: str = ""
    evidence: list[str] = field(default_factory=list)
    invariant: str = ""  # the base-side comment that said the guard must stay
    contradiction: str = ""  # the head-side comment that says it is not needed
    target: str = ""
    language: str = "python"
    subjects: list[str] = field(default_factory=list)


# ---------------------------------------------------------------- Python guards

def _norm(node: ast.AST) -> str:
    return ast.unparse(node)


def _negate(test: ast.expr) -> str:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _norm(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        flip = {ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn,
                ast.NotIn: ast.In, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt}
        op = flip.get(type(test.ops[0]))
        if op is not None:
            return _norm(ast.Compare(left=test.left, ops=[op()], comparators=test.comparators))
    return f"not ({_norm(test)})"


def _names(node: ast.AST) -> set[str]:
    out: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return {n for n in out if n not in PY_NOISE}


def _raises(body: list[ast.stmt]) -> ast.Raise | None:
    for stmt in body:
        if isinstance(stmt, ast.Raise):
            return stmt
    return None


def _exc_name(raise_: ast.Raise) -> str:
    exc = raise_.exc
    if isinstance(exc, ast.Call):
        exc = exc.func
    return dotted_name(exc) if exc is not None else ""


def _intersects(lines: list[int], start: int, end: int) -> bool:
    i = bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end


def python_guards(tree: ast.Module, lines: set[int] | None = None, functions: set[str] | None = None,
                  within: tuple[ast.AST, str] | None = None) -> list[Guard]:
    """Guards of a module; with `lines`, only in statements touching those lines or inside `functions`.
    With `within` (a def node and its qualified name), every guard under that def, as the whole module's
    visit finds them there."""
    out: list[Guard] = []
    wanted = sorted(lines) if lines is not None else None
    interest = functions or set()
    covered: set[int] = set()  # raise statements already reported as part of their `if … raise`

    def visit(node: ast.AST, func: str, stmt: ast.stmt | None, inside: bool) -> None:
        for child in children(node):
            kind = type(child)
            if kind in _LEAVES:
                continue  # neither a guard nor holding one
            name = func
            keep = inside
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{func}.{child.name}" if func else child.name
                keep = keep or name in interest
                if not keep and any(i.startswith(name + ".") for i in interest):
                    visit(child, name, child, False)
                    continue
            if wanted is not None and not keep and hasattr(child, "lineno") \
                    and not _intersects(wanted, child.lineno, getattr(child, "end_lineno", None) or child.lineno):
                continue
            cur_stmt = child if isinstance(child, ast.stmt) else stmt
            if kind in _GUARD_TYPES and id(child) not in covered:
                before = len(out)
                _guard_of(child, func, cur_stmt, out)
                if isinstance(child, ast.If) and len(out) > before and out[-1].kind == "if-raise":
                    covered.update(id(s) for s in child.body if isinstance(s, ast.Raise))
            visit(child, name, cur_stmt, keep)

    if within is not None:
        visit(within[0], within[1], within[0], True)  # the def's own fields, as the module's visit reads them
    else:
        visit(tree, "", None, wanted is None)
    return out


_STATEMENT_LISTS = ("body", "orelse", "finalbody")


def _defs_named(body: list, qualname: str, prefix: str = "") -> Iterator[ast.AST]:
    """The defs and classes python_guards names `qualname`, in its visiting order: a def is a statement
    of a statement list (bodies, branches, handlers, match cases), so only those are descended, and only
    into the defs whose name starts `qualname`."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}.{stmt.name}" if prefix else stmt.name
            if name == qualname:
                yield stmt
            if qualname.startswith(name + "."):
                yield from _defs_named(stmt.body, qualname, name)
            continue
        for part in _STATEMENT_LISTS:
            inner = getattr(stmt, part, None)
            if isinstance(inner, list):
                yield from _defs_named(inner, qualname, prefix)
        for handler in getattr(stmt, "handlers", None) or ():
            yield from _defs_named(handler.body, qualname, prefix)
        for case in getattr(stmt, "cases", None) or ():
            yield from _defs_named(case.body, qualname, prefix)


# the only nodes _guard_of reads, and the nodes with nothing below them that could be one
_GUARD_TYPES = frozenset({ast.Assert, ast.If, ast.Raise, ast.Call})
_LEAVES = frozenset({ast.Name, ast.Constant}) | frozenset(
    kind for base in (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop) for kind in base.__subclasses__())


def _guard_of(node: ast.AST, func: str, stmt: ast.stmt | None, out: list[Guard]) -> None:
    start = getattr(node, "lineno", 0)
    end = getattr(node, "end_lineno", start) or start
    stmt_line = stmt.lineno if stmt is not None else start
    if isinstance(node, ast.Assert):
        cond = _norm(node.test)
        out.append(Guard("assert", start, end, set(range(start, end + 1)), "assert:" + cond, f"assert {cond}",
                         cond, _names(node.test), func, stmt_line=stmt_line, message=_message(node.msg)))
    elif isinstance(node, ast.If):
        raise_ = _raises(node.body)
        if raise_ is None or len(node.body) > 3:
            return
        cond = _norm(node.test)
        exc = _exc_name(raise_)
        test_end = node.test.end_lineno or node.lineno
        anchor = set(range(node.lineno, test_end + 1)) | set(range(raise_.lineno, (raise_.end_lineno or raise_.lineno) + 1))
        out.append(Guard("if-raise", node.lineno, raise_.end_lineno or raise_.lineno, anchor,
                         f"if-raise:{cond}|{exc}", f"if {cond}: raise {exc}", _negate(node.test),
                         _names(node.test), func, stmt_line=node.lineno, exc=exc, message=_message(raise_.exc)))
    elif isinstance(node, ast.Raise) and node.exc is not None:
        exc = _exc_name(node)
        if exc in ("NotImplementedError",) or not exc:
            return
        out.append(Guard("raise", start, end, set(range(start, end + 1)), "raise:" + _norm(node.exc),
                         short(f"raise {_norm(node.exc)}", 100), "", _names(node.exc) - {exc}, func,
                         stmt_line=stmt_line, exc=exc, message=_message(node.exc)))
    elif isinstance(node, ast.Call):
        callee = dotted_name(node.func)
        last = callee.rsplit(".", 1)[-1] if callee else (node.func.attr if isinstance(node.func, ast.Attribute) else "")
        target = _target(stmt)
        if last in ("zeros", "zeros_like", "new_zeros") or (last == "zero_" and isinstance(node.func, ast.Attribute)) \
                or (last == "fill_" and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0):
            inplace = last in ("zero_", "fill_") and isinstance(node.func, ast.Attribute)
            if inplace:
                target = target or _norm(node.func.value)
            out.append(Guard("zeros", start, end, set(range(start, end + 1)), "zeros:" + _norm(node),
                             short(_norm(stmt) if stmt is not None and stmt.lineno == start else _norm(node)),
                             "", _names(node), func, target, stmt_line, inplace=inplace))
        elif last == "contiguous" and isinstance(node.func, ast.Attribute) and not node.args \
                and not (isinstance(stmt, ast.Expr) and stmt.value is node):  # a discarded result guards nothing
            obj = _norm(node.func.value)
            out.append(Guard("contiguous", start, end, {start, end}, "contiguous:" + obj, short(f"{obj}.contiguous()"),
                             "", _names(node.func.value), func, target, stmt_line))
        elif callee in ("torch._check", "torch._assert", "torch._check_is_size") and node.args:
            cond = _norm(node.args[0])
            out.append(Guard("check", start, end, set(range(start, end + 1)), "check:" + cond, short(_norm(node)),
                             cond, _names(node.args[0]), func, stmt_line=stmt_line))


def _message(node: ast.AST | None) -> str:
    """The literal words of an assert message or exception argument (f-string holes dropped)."""
    if node is None:
        return ""
    parts = [n.value for n in walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return " ".join(p.strip() for p in parts if p.strip())


def _target(stmt: ast.stmt | None) -> str:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return _norm(stmt.targets[0])
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and stmt.target is not None:
        return _norm(stmt.target)
    return ""


# ---------------------------------------------------------------- C++ guards

def cpp_guard_list(text: str, lines: set[int] | None = None, functions: set[str] | None = None) -> list[Guard]:
    out = []
    for g in cpp_guards.guards(text, lines, functions):
        kind = g.kind
        asserted = g.condition
        if kind == "throw" and g.condition:
            asserted = f"!({g.condition})"
        out.append(Guard(kind, g.line, g.end_line, set(range(g.line, g.end_line + 1)), kind + ":" + g.key,
                         short(g.text), re.sub(r"\s+", "", asserted), g.subjects, g.function, g.target, g.line,
                         message=g.message, inplace=g.inplace))
    return out


# ---------------------------------------------------------------- the collector

def _neighbour_names(review: ReviewInput) -> list[str]:
    """The Python functions that lose a condition guard: `_checked_by_neighbour` looks up their callers in
    the head tree, a search the review plans into its one search of the tree's Python files."""
    return [g.function.rsplit(".", 1)[-1] for f, g in _deleted(review)
            if f.language == "python" and g.kind in NEIGHBOUR_KINDS and g.asserted and g.function]


@collector("guards", searches=_neighbour_names)
def guards(review: ReviewInput) -> Artifact:
    deleted = _deleted(review)
    fates: list[GuardFate] = []
    if deleted:
        interest: dict[str, set[str]] = {}
        for f, g in deleted:
            interest.setdefault(f.path, set()).add(g.function)
        heads = _head_guards(review, interest)
        fates = [_fate(review, f, g, heads, deleted[i:]) for i, (f, g) in enumerate(deleted)]
    return Artifact("guards", _lines(fates), fates)


def _deleted(review: ReviewInput) -> list[tuple[ChangedFile, Guard]]:
    """Every guard of a base side whose lines the PR deletes, with its file (once per review)."""
    return review.once("_guards_deleted", _deleted_guards)


def _deleted_guards(review: ReviewInput) -> list[tuple[ChangedFile, Guard]]:
    deleted: list[tuple[ChangedFile, Guard]] = []
    for f in review.files:
        if f.skipped or f.language not in ("python", "cpp"):
            continue
        removed = review.code.get(f.path).removed if f.path in review.code else f.removed
        if not removed or not any(PREFILTER.search(t) or CONDITION_LINE.match(t) for _, t in removed):
            continue
        removed_lines = {n for n, _ in removed}
        base_path = f.old_path or f.path
        base_text = review.source.text(base_path, "base")
        if base_text is None:
            continue
        found = _guards_of(review, base_path, "base", f.language, base_text, removed_lines)
        deleted += [(f, g) for g in found if g.anchor & removed_lines]
    return deleted


def _guards_of(review: ReviewInput, path: str, side: str, language: str, text: str,
               lines: set[int] | None = None, functions: set[str] | None = None) -> list[Guard]:
    if language == "python":
        tree = review.source.python(path, side)  # type: ignore[arg-type]
        return python_guards(tree, lines, functions) if tree is not None else []
    return cpp_guard_list(text, lines, functions)


def _head_guards(review: ReviewInput, interest: dict[str, set[str]]) -> dict[str, list[Guard]]:
    """Head-side guards on added lines of every changed file, plus every guard of the functions that lost one."""
    out: dict[str, list[Guard]] = {}
    for f in review.changed("python", "cpp"):
        if f.path not in interest and not any(PREFILTER.search(t) for _, t in f.added):
            continue
        text = review.source.text(f.path)
        if text is None:
            continue
        functions = interest.get(f.path, set())
        tree = review.source.python(f.path) if "" in functions and f.language == "python" else None
        if tree is not None:
            # a module-level guard: its scope is the module's own statements (a fate reads only head guards
            # on added lines or in the functions that lost one, so the defs' other guards are not read)
            out[f.path] = python_guards(tree, f.added_lines | _module_statement_lines(tree), functions - {""})
        elif "" in functions:  # the whole file is its scope
            out[f.path] = _guards_of(review, f.path, "head", f.language, text)
        else:
            out[f.path] = _guards_of(review, f.path, "head", f.language, text, f.added_lines, functions)
    return out


def _module_statement_lines(tree: ast.Module) -> set[int]:
    """The lines of a module's statements other than its defs and classes."""
    out: set[int] = set()
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return out


def _fate(review: ReviewInput, f: ChangedFile, g: Guard, heads: dict[str, list[Guard]],
          pending: list[tuple[ChangedFile, Guard]]) -> GuardFate:
    """What became of deleted guard `g`; `pending` are it and the deleted guards whose fates are read after
    it (the last step looks for all their texts in one search of the tree, the first time one needs it)."""
    base_path = f.old_path or f.path
    fate = GuardFate(path=f.path, base_line=g.line, kind=g.kind, text=g.text, fate="gone", function=g.function,
                     target=g.target, language=f.language, subjects=sorted(g.subjects))
    if f.status != "deleted":
        fate.head_line = head_position(f, g.line)
    fate.invariant = _comment_above(review, base_path, "base", f.language, g.stmt_line, g.end_line) \
        or (_comment_above(review, base_path, "base", f.language, g.stmt_line, g.end_line, pattern=ZERO_PURPOSE)
            if g.kind == "zeros" else "")
    same_file = heads.get(f.path, [])
    added = {p: _added_set(review, p) for p in heads}

    # 1. moved: the same guard, or the same asserted condition, anywhere on the head side of the PR.
    for path, hs in heads.items():
        for h in hs:
            same = h.key == g.key or (g.asserted and h.asserted and _squash(h.asserted) == _squash(g.asserted))
            if same and (h.line in added[path] or (path == f.path and h.function == g.function)):
                fate.fate, fate.where, fate.new_text = "moved", f"{path}:{h.line}", h.text
                fate.head_line = h.line if path == f.path else fate.head_line
                return fate
    if f.status == "deleted":
        fate.fate = "gone-with-file"
        return fate

    head_tree_names = _function_names(review, f)
    func_exists = (not g.function) or g.function in head_tree_names
    body = _function_text(review, f, g.function) if func_exists else ""

    if g.kind == "zeros":
        return _zeros_fate(review, f, g, fate, same_file, added[f.path], body)
    if g.kind == "contiguous":
        block = set(replacement_block(f, g.line))
        spot = set(re.findall(r"\b(\w+)\s*\(", _block_text(review, f, block)))
        for path, hs in heads.items():
            h = next((h for h in hs if h.kind == "contiguous" and h.line in added[path]
                      and h.function.rsplit(".", 1)[-1] in spot), None)
            if h is not None:  # the call that replaced it makes the tensor contiguous inside a helper
                fate.fate, fate.where, fate.new_text = "moved", f"{path}:{h.line}", h.text
                return fate
        return _contiguous_fate(g, fate, same_file, added[f.path], body, f.added, block)

    # 2. changed: a condition guard of the same function, on an added line, checking overlapping names,
    #    or any condition guard written where the deleted one stood (the replacement block).
    candidates = [h for h in same_file if h.kind in CONDITION_KINDS and h.function == g.function
                  and _touches(h, added[f.path])]
    block = set(replacement_block(f, g.line))
    if g.kind == "raise":
        best = next((h for h in candidates if h.kind == "raise" and h.exc == g.exc), None)
    else:
        scored = sorted(((len(h.subjects & g.subjects), h) for h in candidates if h.kind != "raise"),
                        key=lambda t: -t[0])
        best = scored[0][1] if scored and scored[0][0] > 0 else None
    if best is None:
        best = next((h for h in candidates if _touches(h, block) and h.kind != "raise"), None)
    if best is not None:
        fate.fate, fate.where, fate.new_text, fate.head_line = "changed", f"{f.path}:{best.line}", best.text, best.line
        fate.weakened = _weakened(g, best)
        return fate
    helper = _helper_guard(g, body, heads, added, _block_text(review, f, block)) if body else None
    if helper is not None:
        path, h = helper
        fate.fate, fate.where, fate.new_text = "changed", f"{path}:{h.line}", h.text
        fate.weakened = _weakened(g, h)
        return fate
    reworded = _same_message(review, g)
    if reworded:
        fate.fate, fate.where, fate.new_text = "moved", reworded[0], reworded[1]
        return fate
    neighbour = _checked_by_neighbour(review, f, g) if f.language == "python" and func_exists else None
    if neighbour is not None:
        fate.fate, fate.where, fate.new_text, fate.evidence = "moved", neighbour[0], neighbour[1], [neighbour[2]]
        return fate

    # 3a. a NotImplementedError guard exists to be deleted once the case is implemented; a "not supported"
    #     rejection whose subject the PR's new code in the same function now handles was implemented too.
    if g.exc == "NotImplementedError" or _placeholder_assert(g):
        fate.fate = "implemented"
        return fate
    kept = _still_raises(review, f, g)
    if kept:
        fate.fate, fate.where, fate.new_text = "moved", kept[0], kept[1]
        return fate
    warned = _downgraded_to_warning(review, f, g)
    if warned:
        fate.fate, fate.where, fate.new_text = "warned", warned[0], warned[1]
        return fate
    # each reading returns the line that shows the guard's end ("" when it does not apply), in this order
    head_start = _function_span(review, f, g.function, "head")[1] if body else 0
    for ending, shown in (("gone-with-branch", lambda: _branch_deleted(review, f, g)),
                          ("implemented", lambda: _implemented(f, g, body, head_start) if body else ""),
                          ("gone-debug-switch", lambda: _debug_switch(review, f, g)),
                          ("implemented", lambda: _now_strided(f, g)),
                          ("implemented", lambda: _clamped_to_limit(review, f, g)),
                          ("implemented", lambda: _title_adds_support(review, g)),
                          ("lifted", lambda: _relation_now_branched(review, g))):
        evidence = shown()
        if evidence:
            fate.fate, fate.evidence = ending, [evidence]
            return fate

    # 3. handled on head: a None-check whose subject head treats as optional everywhere it is used.
    optional = _optional_subject(g)
    if optional:
        hits = _optional_evidence(review, optional)
        if hits:
            fate.fate, fate.evidence = "handled", hits
            return fate

    # 4. the guarded code went away with the guard.
    if not func_exists:
        fate.fate = "gone-with-function"
        return fate
    removed = {n for n, _ in f.removed}
    params = _parameters(review, f, g.function)
    dropped = {s for s in g.subjects & params if body and not _uses(s, body)} | _params_dropped(review, f, g, params)
    if dropped or (g.subjects and body and not any(_uses(s, body) for s in g.subjects)
                   and not _only_for_the_guard(review, f, g, removed, params)):
        fate.fate = "gone-with-subject"
        if dropped:
            fate.evidence = [f"parameter{'s' if len(dropped) > 1 else ''} {', '.join(sorted(dropped))} removed"]
        return fate
    vanished = _vanished_predicate(review, g)
    if vanished:
        fate.fate, fate.evidence = "gone-with-subject", [f"`{vanished}` no longer exists in the head tree"]
        return fate
    lifted = _lifted(review, f, g)
    if lifted:
        fate.fate, fate.evidence = "lifted", [lifted]
        return fate

    # 4b. the `if` that raised is still there, but its branch no longer raises (aiter-style silent return).
    if g.kind == "if-raise" and f.language == "python":
        kept = _if_without_raise(review, f, g)
        if kept and UNSUPPORTED.search(g.message) and _branch_does_new_work(review, f, g, kept[0]):
            fate.fate, fate.where, fate.evidence = "implemented", f"{f.path}:{kept[0]}", [
                f"{f.path}:{kept[0]}: the branch that said the case is not supported now runs code the PR adds"]
            return fate
        if kept:
            fate.fate, fate.where, fate.new_text = "changed", f"{f.path}:{kept[0]}", kept[1]
            fate.head_line = kept[0]
            fate.weakened = "the same condition now falls through (no raise)"
            return fate

    # 4c. the guard went in a rewrite of its code, or the PR says in a comment why it is not needed.
    rewrite = _rewritten(review, f, g)
    if rewrite:
        fate.fate, fate.evidence = "rewritten", [rewrite]
        return fate
    justified = _justification(review, f, g, block)
    if justified:
        fate.fate, fate.evidence = "justified", [justified]
        return fate

    # 5. still checked somewhere else in the head tree (a pre-existing copy, e.g. in the callee).
    probe = _still_checked_probe(g)
    if probe:
        spec = ("*.py",) if f.language == "python" else ("*.cu", "*.cuh", "*.h", "*.hpp", "*.cpp", "*.cc", "*.hip")
        review.source.prefetch_fixed([_still_checked_probe(h) for e, h in pending if e.language == f.language],
                                     "head", spec)
        hits = [h for h in review.source.grep(probe, "head", spec, fixed=True) if h[0] != f.path][:3]
        if hits:
            fate.fate, fate.where = "moved", f"{hits[0][0]}:{hits[0][1]}"
            fate.new_text = short(hits[0][2])
            return fate
    fate.contradiction = _comment_above(review, f.path, "head", f.language, fate.head_line or 0, fate.head_line or 0,
                                        pattern=CONTRADICTION_WORDS)
    return fate


def _still_checked_probe(g: Guard) -> str:
    """The text a deleted guard still has somewhere else in the head tree when it is still checked there
    (its statement's start, or its condition); '' for a condition too short to tell a copy by."""
    if not g.asserted or len(g.asserted) < 12:
        return ""
    probe = g.text if g.kind in ("assert", "check") else g.asserted
    return probe.split(",")[0][:80]


UNREAD_BY_DESIGN = lazy_re(r"\buninitiali[sz]ed\b[^.\n]*\b(never|not) read\b|\b(never|not) read\b[^.\n]*\buninitiali[sz]ed\b",
                              re.IGNORECASE)


def _function_says_unread(review: ReviewInput, f: ChangedFile, function: str, added: set[int]) -> str:
    """A line the PR adds anywhere in the same function (its docstring's layout table included) says the
    bytes are left uninitialised because nothing reads them (`pad (uninitialised -- never read by the asm
    reader)`): the PR states the assumption the zero-initialisation covered, in the function it changed."""
    text, start = _function_span(review, f, function, "head")
    for n, line in enumerate(text.splitlines(), start):
        if n in added and UNREAD_BY_DESIGN.search(line):
            return short(line.strip(), 140)
    return ""


def _whole_names(node: ast.AST) -> set[str]:
    """Every name and dotted attribute chain in `node`, whole (`cfg.split_k`, not also `cfg`)."""
    inner = {id(n.value) for n in walk(node) if isinstance(n, ast.Attribute)}
    return {d for n in walk(node) if isinstance(n, (ast.Name, ast.Attribute)) and id(n) not in inner
            and (d := dotted_name(n))}


def _zeroed_for_accumulation(review: ReviewInput, f: ChangedFile, g: Guard, line: int) -> str:
    """The base zeroed the buffer only under a condition on some count (`if cfg.split_k > 1: tmp.zero_()`:
    the splits accumulated into one buffer), and the new allocation has that count as a dimension
    (`torch.empty((cfg.split_k, experts, …))`): each split now writes its own slice, and the buffer the
    zeroing served is gone, redesigned rather than left uninitialised."""
    if f.language != "python" or not g.function:
        return ""
    base = _guard_def(review, f, g, "base")
    head = _function_index(review, f.path, "head").get(g.function)
    if base is None or head is None:
        return ""
    alloc = next((n.value for n in walk(head) if isinstance(n, (ast.Assign, ast.AnnAssign))
                  and n.lineno == line and isinstance(n.value, ast.Call)), None)
    if alloc is None or not alloc.args:
        return ""
    dims = _whole_names(alloc.args[0])
    for node in walk(base):
        if isinstance(node, ast.If) and any(s.lineno <= g.line <= (s.end_lineno or s.lineno) for s in node.body):
            counts = _whole_names(node.test)
            hit = sorted(c for c in counts & dims if c and c.rsplit(".", 1)[-1] not in PY_NOISE)
            if hit:
                return f"zeroed only when `{ast.unparse(node.test)}`; the new buffer has `{hit[0]}` as a dimension"
    return ""


def _zeros_fate(review: ReviewInput, f: ChangedFile, g: Guard, fate: GuardFate, same_file: list[Guard],
                added: set[int], body: str) -> GuardFate:
    target = g.target
    tree = review.source.python(f.path) if f.language == "python" else None
    if target:
        for h in same_file:
            if h.kind == "zeros" and h.target == target and h.function == g.function:
                fate.fate, fate.where, fate.new_text, fate.head_line = "changed", f"{f.path}:{h.line}", h.text, h.line
                return fate
        repl = _empty_assignment(review, f, tree, target, g.function,
                                 before=fate.head_line if g.inplace else None)
        if repl is not None:
            line, text = repl
            fate.fate, fate.where, fate.new_text = "replaced", f"{f.path}:{line}", text
            if not g.inplace or line in added:  # an allocation the PR left alone: the change is where the zeroing was
                fate.head_line = line
            fate.contradiction = _comment_above(review, f.path, "head", f.language, line, line,
                                                pattern=CONTRADICTION_WORDS)
            why = _comment_above(review, f.path, "head", f.language, line, line, pattern=ZERO_JUSTIFY) \
                or _block_comment(review, f, set(replacement_block(f, g.line)) | set(range(line - 3, line)), ZERO_JUSTIFY) \
                or _function_says_unread(review, f, g.function, added)
            if why and not fate.invariant:
                fate.fate, fate.evidence = "justified", [f"{f.path}:{line}: # {why}"]
                return fate
            split = _zeroed_for_accumulation(review, f, g, line)
            if split and not fate.invariant:
                fate.fate, fate.evidence = "rewritten", [split]
            return fate
        if body and not re.search(rf"(?<![\w.]){re.escape(target.split('.')[-1])}\b", body):
            fate.fate = "gone-with-use"
            return fate
        # an allocation of the target in another form is a change; an in-place zeroing of a buffer the function
        # still uses is simply gone: the buffer now reaches its readers with whatever it held
        fate.fate = ("gone" if g.inplace else "changed") if body else "gone-with-function"
        return fate
    if g.function and not body:
        fate.fate = "gone-with-function"
    else:
        fate.fate = "gone-inline"  # an inline zero tensor argument: its replacement cannot be named
    return fate


def _contiguous_fate(g: Guard, fate: GuardFate, same_file: list[Guard], added: set[int], body: str,
                     added_lines: list[tuple[int, str]], block: set[int]) -> GuardFate:
    obj = g.text.rsplit(".contiguous()", 1)[0]
    root = re.split(r"[.\[(]", obj, maxsplit=1)[0]
    for h in same_file:
        if h.kind != "contiguous" or h.function != g.function:
            continue
        h_obj = h.text.rsplit(".contiguous()", 1)[0]
        h_root = re.split(r"[.\[(]", h_obj, maxsplit=1)[0]
        if h_obj == obj or (h.line in added and (h_root == root or (g.target and h.target == g.target)
                                                 or h.line in block)):
            fate.fate, fate.where, fate.new_text, fate.head_line = "moved", f"{fate.path}:{h.line}", h.text, h.line
            return fate
    if not body:
        fate.fate = "gone-with-function"
    elif not _uses(root, body):
        fate.fate = "gone-with-use"
    elif re.search(rf"\b{re.escape(root)}\b[\w.\[\]]*\.is_contiguous\(|is_contiguous\({re.escape(root)}\b", body):
        fate.fate = "handled"
        fate.evidence = [f"{root}.is_contiguous() is checked in {g.function or 'the module'} on head"]
    else:
        stride = next((f"{fate.path}:{n}: {short(t.strip(), 100)}" for n, t in added_lines
                       if re.search(rf"\b{re.escape(root)}\.stride\(", t)), "")
        if stride:
            fate.fate, fate.evidence = "lifted", [stride]  # the kernel now takes the strides
    return fate


def _empty_assignment(review: ReviewInput, f: ChangedFile, tree: ast.Module | None, target: str,
                      function: str, before: int | None = None) -> tuple[int, str] | None:
    """The head line assigning `target` an uninitialised allocation in the same function, if any; with `before`
    (where an in-place zeroing stood), the last such assignment above that line, which the zeroing cleared."""
    if tree is not None:
        scope = _function_index(review, f.path, "head").get(function) if function else tree
        if scope is None:
            return None
        found: list[tuple[int, str]] = []
        for node in walk(scope):
            if not isinstance(node, (ast.Assign, ast.AnnAssign)):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not any(_norm(t) == target for t in targets) or node.value is None:
                continue
            calls = [c for c in walk(node.value) if isinstance(c, ast.Call)]
            if any(dotted_name(c.func).rsplit(".", 1)[-1] in EMPTY_CALLS
                   or (isinstance(c.func, ast.Attribute) and c.func.attr in EMPTY_CALLS) for c in calls):
                if before is None:
                    return node.lineno, short(_norm(node))
                found.append((node.lineno, short(_norm(node))))
        above = [hit for hit in found if hit[0] <= before]
        return max(above) if above else None  # allocated below it: another buffer under the same name
    pattern = re.compile(rf"\b{re.escape(target)}\s*=.*\b(?:empty|empty_like)\s*\(")
    for n, line in f.added:
        if pattern.search(line):
            return n, short(line)
    return None


_INDEX: dict[tuple[str, str], dict[str, ast.AST]] = {}


def _function_index(review: ReviewInput, path: str, side: str) -> dict[str, ast.AST]:
    """Qualified name -> def/class node of one Python file, built once per review (statements only)."""
    key = (review.source.rev(side), path)  # type: ignore[arg-type]
    if key not in _INDEX:
        if len(_INDEX) > 256:
            _INDEX.clear()
        out: dict[str, ast.AST] = {}
        tree = review.source.python(path, side)  # type: ignore[arg-type]

        def visit(body: list, prefix: str) -> None:
            for stmt in body:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    name = f"{prefix}.{stmt.name}" if prefix else stmt.name
                    out.setdefault(name, stmt)
                    visit(stmt.body, name)
                    continue
                for part in ("body", "orelse", "finalbody"):
                    inner = getattr(stmt, part, None)
                    if isinstance(inner, list):
                        visit(inner, prefix)
                for handler in getattr(stmt, "handlers", None) or []:
                    visit(handler.body, prefix)

        if tree is not None:
            visit(tree.body, "")
        _INDEX[key] = out
    return _INDEX[key]


def _function_names(review: ReviewInput, f: ChangedFile) -> set[str]:
    if f.language == "python":
        return set(_function_index(review, f.path, "head"))
    return _cpp_function_names(review, f.path)


def _cpp_function_names(review: ReviewInput, path: str) -> set[str]:
    return _cpp_names(review.source.text(path) or "")


@lru_cache(maxsize=32)
def _cpp_names(text: str) -> set[str]:
    return set(re.findall(r"\b([A-Za-z_][\w:]*)\s*\([^;{}]*\)\s*(?:const\s*)?(?:->[^{;]*)?\{", text))


def _function_text(review: ReviewInput, f: ChangedFile, function: str, side: str = "head") -> str:
    return _function_span(review, f, function, side)[0]


def _function_span(review: ReviewInput, f: ChangedFile, function: str, side: str = "head") -> tuple[str, int]:
    """(source of `function`, its first line) on one side; the whole file for module-level guards."""
    path = f.path if side == "head" else (f.old_path or f.path)
    text = review.source.text(path, side) or ""  # type: ignore[arg-type]
    if not function:
        return text, 1
    if f.language == "python":
        node = _function_index(review, path, side).get(function)
        if node is None:
            return "", 0
        return "\n".join(text.splitlines()[node.lineno - 1:node.end_lineno]), node.lineno
    # C++: from the function's name at a definition (followed by a body) to the end of its brace block.
    simple = function.rsplit("::", 1)[-1]
    for match in re.finditer(rf"\b{re.escape(simple)}\s*\(", text):
        close = _matching(text, match.end() - 1, "(", ")")
        if close < 0:
            continue
        after = text[close + 1:close + 200].lstrip()
        if not after.startswith("{") and not re.match(r"(const\s*)?(noexcept\s*)?(->[^{;]*)?\{", after):
            continue
        start = text.find("{", close)
        end = _matching(text, start, "{", "}")
        if end < 0:
            end = len(text) - 1
        return text[match.start():end + 1], text.count("\n", 0, match.start()) + 1
    return "", 0


def _matching(text: str, start: int, open_: str, close: str) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _uses(name: str, text: str) -> bool:
    """`name` is read in `text` (a keyword argument `name=…` or an assignment to it is not a read)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\b(?!\s*=(?!=))", text) is not None


def _only_for_the_guard(review: ReviewInput, f: ChangedFile, g: Guard, removed: set[int], params: set[str]) -> bool:
    """The guard's names were locals computed just to be checked: on base every line using them is deleted,
    and apart from the guard itself only their own definitions used them. (When other deleted code used them
    too, the feature they belonged to went away, not just the check.)"""
    text, start = _function_span(review, f, g.function, "base")
    if not text or g.subjects & params:
        return False
    for i, line in enumerate(text.splitlines(), start):
        if i in g.anchor:
            continue
        used = [s for s in g.subjects if _uses(s, line)]
        if not used:
            continue
        if i not in removed:
            return False  # still used by code that stays
        defines = any(re.match(rf"\s*(?:const\s+)?(?:[\w:<>]+\s+)?{re.escape(s)}\s*=[^=]", line) for s in used)
        if not defines:
            return False  # other deleted code used it: the feature went, not only the check
    return True


CPP_CONST_CMP = lazy_re(r"^\s*!?\(*\s*[A-Za-z_][\w.\->\[\]]*\s*(==|!=|<=|>=|<|>)\s*[-+*/%()<>\s\dxXa-fA-FLlUu.]+\)*\s*$|"
                           r"^\s*!?\(*\s*[-+*/%()<>\s\dxXa-fA-FLlUu.]+(==|!=|<=|>=|<|>)\s*[A-Za-z_][\w.\->\[\]]*\s*\)*\s*$")


def _constant(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(_constant(e) for e in node.elts)
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    return False


def _restricts_to_constants(g: Guard) -> bool:
    """`x == 1`, `dtype in ("fp4", "fp8")`, `n < (1 << 32)`: a capability limit, not a consistency check."""
    if not g.asserted or not g.subjects:
        return False
    try:
        node = parse_expression(g.asserted)
    except Unparsable:
        parts = re.split(r"&&|\|\|", g.asserted)
        return all(CPP_CONST_CMP.match(p) for p in parts)
    parts = node.values if isinstance(node, ast.BoolOp) else [node]
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            part = part.operand
        if not isinstance(part, ast.Compare):
            return False
        sides = [part.left, *part.comparators]
        if not any(_constant(x) for x in sides) or all(_constant(x) for x in sides):
            return False
        if any(not _constant(x) and any(isinstance(c, ast.Call) for c in walk(x)) for x in sides):
            return False
    return True


def _lifted(review: ReviewInput, f: ChangedFile, g: Guard) -> str:
    """A constant restriction whose subject the PR's added lines of the same function now handle."""
    if not _restricts_to_constants(g):
        return ""
    text, start = _function_span(review, f, g.function, "head")
    if not text:
        return ""
    added = f.added_lines
    for i, line in enumerate(text.splitlines(), start):
        if i in added and any(_uses(s, line) for s in g.subjects) and not PREFILTER.search(line):
            return f"{f.path}:{i}: {short(line.strip(), 100)}"
    return ""


UNSUPPORTED = lazy_re(r"not (?:yet |currently )?(?:supported|implemented|available)|unsupported|only supports?\b|"
                         r"(?:does|do|is)(?: not|n't)(?: yet| currently)? (?:support|handle)|cannot handle|can't handle",
                         re.IGNORECASE)


def _implemented(f: ChangedFile, g: Guard, body: str, start: int) -> str:
    """The deleted check rejected a case as unsupported (its message says so), and a line the PR adds to the
    same function now works with what it checked: the PR implements the case instead of rejecting it."""
    if g.kind not in ("if-raise", "raise", "assert") or not UNSUPPORTED.search(g.message) or not g.subjects:
        return ""
    added = f.added_lines
    for n, line in enumerate(body.splitlines(), start):
        code = line.split("#", 1)[0]
        if n in added and any(_uses(s, code) for s in g.subjects) and not PREFILTER.search(code) \
                and not CONDITION_LINE.match(code):
            return f"{f.path}:{n}: {short(line.strip(), 100)}"
    return ""


PLACEHOLDER = lazy_re(r"\b(?:TODO|FIXME|XXX)\b|not (?:yet )?implemented|unimplemented|to be (?:filled|implemented)|"
                         r"needs? to be (?:filled|implemented|added)", re.IGNORECASE)


def _placeholder_assert(g: Guard) -> bool:
    """`assert False, "TODO: new requests' input_ids need to be filled in"`: a stop on unfinished work, like
    `raise NotImplementedError`, not a check on input; the PR that deletes it writes what it stood for."""
    return g.kind == "assert" and g.asserted.strip() in ("False", "0") and bool(PLACEHOLDER.search(g.message))


def _branch_deleted(review: ReviewInput, f: ChangedFile, g: Guard) -> str:
    """Python: the guard sat in a branch of an `if` the PR deletes whole, its test line and every statement
    of the branch, and the function no longer tests that condition (`if transpose_scale:` with the option it
    served): the check went with the only code it guarded, and nothing it protected is left to reach."""
    if f.language != "python" or not g.function:
        return ""
    base = _guard_def(review, f, g, "base")
    if base is None:
        return ""
    removed = {n for n, _ in f.removed}
    deleted_ifs = [node for node in _ifs(review, f.old_path or f.path, "base", g.function, base) if node.lineno in removed]
    if not deleted_ifs:
        return ""
    head = _function_index(review, f.path, "head").get(g.function)
    kept_tests = {ast.unparse(n.test) for n in _ifs(review, f.path, "head", g.function, head)} if head is not None else set()
    for node in deleted_ifs:
        if ast.unparse(node.test) in kept_tests:
            continue  # a branch the head still takes on the same test was rewritten, not deleted
        for branch in (node.body, node.orelse):
            if not branch or not branch[0].lineno <= g.line <= (branch[-1].end_lineno or branch[-1].lineno):
                continue
            if all(stmt.lineno in removed for top in branch for stmt in walk(top) if isinstance(stmt, ast.stmt)):
                return f"the branch `if {short(ast.unparse(node.test), 60)}:` it sat in was deleted with it"
    return ""


def _branch_does_new_work(review: ReviewInput, f: ChangedFile, g: Guard, line: int) -> bool:
    """The head `if` at `line` (the deleted raise's condition) has statements the PR adds in its branch that
    do work: not a bare `return`/`pass`/log line, but the case being handled."""
    head = _function_index(review, f.path, "head").get(g.function) if g.function else review.source.python(f.path)
    if head is None:
        return False
    node = next((n for n in walk(head) if isinstance(n, ast.If) and n.lineno == line), None)
    if node is None:
        return False
    added = f.added_lines
    for stmt in walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and stmt.lineno in added:
            return True
        if isinstance(stmt, ast.Call) and stmt.lineno in added and not (
                isinstance(stmt.func, ast.Attribute) and stmt.func.attr in LOG_CALLS | {"info", "debug"}):
            return True
    return False


def _still_raises(review: ReviewInput, f: ChangedFile, g: Guard) -> tuple[str, str] | None:
    """The same function still tests the same condition and still raises the same exception at the end of
    a longer branch (the PR built a better message first: `if pool <= 0: …; raise RuntimeError(msg)`), which
    the guard reader skips as too long to be a plain check."""
    if f.language != "python" or g.kind != "if-raise" or not g.function:
        return None
    head = _guard_def(review, f, g, "head")
    if head is None:
        return None
    for node in _ifs_failing_on(head, g):
        raise_ = next((r for r in node.body if isinstance(r, ast.Raise) and r.exc is not None
                       and _exc_name(r) == g.exc), None)
        if raise_ is not None:
            return f"{f.path}:{raise_.lineno}", short(f"if {_norm(node.test)}: … raise {g.exc}", 100)
    return None


def _ifs_failing_on(head: ast.AST, g: Guard) -> Iterator[ast.If]:
    """The `if`s of the head function whose test is the deleted guard's failing condition."""
    want = re.sub(r"\s+", "", g.asserted)
    return (node for node in walk(head) if isinstance(node, ast.If) and re.sub(r"\s+", "", _negate(node.test)) == want)


def _guard_def(review: ReviewInput, f: ChangedFile, g: Guard, side: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def of the guard's own function on one side (None for module level, a class, or no such def)."""
    node = _function_index(review, f.old_path or f.path if side == "base" else f.path, side).get(g.function)
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


_IFS: dict[tuple[str, str, str], list[ast.If]] = {}


def _ifs(review: ReviewInput, path: str, side: str, qualname: str, node: ast.AST) -> list[ast.If]:
    """The `if`s of one function (`node`, the def of `qualname` in `path` on `side`), in walk order, read
    once per review instead of once per deleted guard."""
    key = (review.source.rev(side), path, qualname)  # type: ignore[arg-type]
    if key not in _IFS:
        if len(_IFS) > 1024:
            _IFS.clear()
        _IFS[key] = [n for n in walk(node) if isinstance(n, ast.If)]
    return _IFS[key]


LOG_CALLS = {"warning", "warn", "warning_once", "warn_once", "error", "critical", "exception"}


def _downgraded_to_warning(review: ReviewInput, f: ChangedFile, g: Guard) -> tuple[str, str] | None:
    """The same function now tests the exact failing condition and logs a warning instead of stopping
    (`assert bs == expected` → `if bs != expected: logger.warning(…)`): a deliberate downgrade the code
    states, not a check that vanished. The finding that "nothing checks it any more" would be wrong."""
    if f.language != "python" or g.kind not in ("assert", "if-raise") or not g.asserted or not g.function:
        return None
    head = _guard_def(review, f, g, "head")
    if head is None:
        return None
    for node in _ifs_failing_on(head, g):
        for call in (c for stmt in node.body for c in walk(stmt) if isinstance(c, ast.Call)):
            if isinstance(call.func, ast.Attribute) and call.func.attr in LOG_CALLS \
                    or dotted_name(call.func) in ("warnings.warn", "warn"):
                return f"{f.path}:{node.lineno}", short(f"if {_norm(node.test)}: {_norm(call.func)}(…)", 100)
    return None


ENV_READ = lazy_re(r"\bos\.(?:getenv|environ\.get|environ\[)|\benviron\.get\(|\bgetenv\(")


def _debug_switch(review: ReviewInput, f: ChangedFile, g: Guard) -> str:
    """The deleted check ran only under a switch the base read from the environment (`validate = os.getenv(
    "ATOM_VALIDATE_SLOT_MAPPING", "0") == "1"`; `if validate and …: raise`): an opt-in debug validation, off
    in every run that did not ask for it, so deleting it changes nothing a user runs by default."""
    if f.language != "python" or g.kind != "if-raise" or not g.function:
        return ""
    base = _guard_def(review, f, g, "base")
    if base is None:
        return ""
    node = next((n for n in _ifs(review, f.old_path or f.path, "base", g.function, base) if n.lineno == g.line), None)
    if node is None:
        return ""
    test = node.test
    conjuncts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    switches = {c.id for c in conjuncts if isinstance(c, ast.Name)}
    if not switches:
        return ""
    for stmt in walk(base):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in switches for t in stmt.targets) \
                and ENV_READ.search(ast.unparse(stmt.value)):
            return f"checked only when `{ast.unparse(stmt.targets[0])}` is set: `{short(ast.unparse(stmt), 100)}`"
    return ""


STRIDE_OF = lazy_re(r"(\w+)\.stride\(")


def _now_strided(f: ChangedFile, g: Guard) -> str:
    """The deleted check required a layout (`k.stride(1) == 1 && k.stride(0) == head_dim`), and a line the PR
    adds passes that tensor's strides on (`k.stride(0), k.stride(1)` into the launch): the kernel now reads
    any stride, so the layout no longer needs checking."""
    if g.kind not in CONDITION_KINDS:
        return ""
    tensors = set(STRIDE_OF.findall(g.asserted))
    if not tensors:
        return ""
    for n, line in f.added:
        if PREFILTER.search(line) or CONDITION_LINE.match(line):
            continue
        hit = next((t for t in tensors if re.search(rf"(?<![\w.]){re.escape(t)}\.stride\(", line)), None)
        if hit:
            return f"{f.path}:{n}: {short(line.strip(), 100)} (the strides of `{hit}` are now passed on)"
    return ""


LIMIT = lazy_re(r"(?<![\w.])(\w+)(>=|<=|>|<)(\w+)(?![\w(])")


def _clamped_to_limit(review: ReviewInput, f: ChangedFile, g: Guard) -> str:
    """The deleted check rejected a value past a limit (`if (m > kMaxBlocks) throw`), and a line the PR adds
    to the same file clamps that value to the same limit (`dim3 grid(std::min(m, kMaxBlocks))`): the code now
    handles larger values (a grid-stride loop over the rest) instead of refusing them."""
    if g.kind not in CONDITION_KINDS:
        return ""
    m = LIMIT.search(g.asserted.replace(" ", ""))
    if not m:
        return ""
    a, b = m.group(1), m.group(3)
    # one added line that clamps with min/max and names both sides (`grid(std::min(m, kMaxBlocks))`,
    # `NUM_KV_SPLITS = max(1, min(256 // batch_size, min_kv_seq_len))`)
    clamp = re.compile(r"\b(?:std::)?(?:min|max)\s*\(")
    names = [re.compile(rf"(?<![\w.]){re.escape(x)}\b") for x in (a, b)]
    for n, line in f.added:
        code = line.split("#", 1)[0] if f.language == "python" else line.split("//", 1)[0]
        if clamp.search(code) and all(p.search(code) for p in names):
            return f"{f.path}:{n}: {short(line.strip(), 100)} (clamped to the limit the check enforced)"
    return ""


SUPPORT_TITLE = lazy_re(r"\b(support|supports|supported|enable|enables|implement|implements|add|adds|allow|allows|"
                           r"lift|lifts|unlock|unlocks|relax|relaxes|rm|remove|removes|drop|drops)\b", re.IGNORECASE)
MESSAGE_NOISE = {"support", "supported", "unsupported", "currently", "only", "with", "when", "this", "that", "must",
                 "kernel", "path", "mode", "case", "input", "inputs", "tensor", "tensors", "yet", "does", "not", "for"}


def _title_adds_support(review: ReviewInput, g: Guard) -> str:
    """The deleted check rejected a case as unsupported, and the PR's title says it adds support for that
    case or lifts that restriction ("causal masking is not supported yet" deleted by "support causal mask for
    asm mxfp8 mha"; "does not support prefix caching" by "rm mtp no prefix cache assert"): the change is the
    PR's stated purpose, often made in data or code the check's function does not show."""
    title = review.pr.title or ""
    m = UNSUPPORTED.search(g.message)
    if not m or not SUPPORT_TITLE.search(title):
        return ""
    # the words naming the case, not identifiers (`fmha_fwd_mxfp8_asm:` names the op, not what it rejects)
    case = [w.lower().strip(".,;:()") for w in g.message.split()
            if re.fullmatch(r"[A-Za-z][A-Za-z-]{3,}[.,;:)]?", w)]  # words, not identifiers, archs or dtypes
    stems = {w[:5] for w in case if w not in MESSAGE_NOISE}
    said = {w.lower()[:5] for w in re.findall(r"[A-Za-z][A-Za-z0-9]{3,}", title)}
    hit = sorted(stems & said)
    return f"the title says the PR adds what the check rejected ({', '.join(hit)}): {short(title, 100)}" if hit else ""


def _related(node: ast.expr, names: set[str]) -> tuple[str, frozenset[str]] | None:
    """`q_out.dtype` → ("q_out", {"dtype"}): the guard subject a comparison side is about, with the attributes it
    reads; an added side names the subject or a kernel parameter carrying its stem (`q_out_ptr.dtype.element_ty`)."""
    attrs = frozenset(n.attr for n in walk(node) if isinstance(n, ast.Attribute))
    found = {n.id for n in walk(node) if isinstance(n, ast.Name)}
    hits = [s for s in names for n in found if n == s or n.startswith(s + "_")]
    if not hits or not attrs:
        return None
    return max(hits, key=len), attrs


def _compared_relations(node: ast.expr, names: set[str]) -> set[tuple[frozenset[str], frozenset[str]]]:
    """The (pair of subjects, shared attributes) each `==`/`!=` in `node` compares."""
    out = set()
    for cmp in (n for n in walk(node) if isinstance(n, ast.Compare)):
        if not all(isinstance(op, (ast.Eq, ast.NotEq)) for op in cmp.ops):
            continue
        sides = [_related(x, names) for x in (cmp.left, *cmp.comparators)]
        for a, b in zip(sides, sides[1:]):
            if a and b and a[0] != b[0] and a[1] & b[1]:
                out.add((frozenset((a[0], b[0])), a[1] & b[1]))
    return out


def _relation_now_branched(review: ReviewInput, g: Guard) -> str:
    """The deleted check required two tensors to agree (`assert q_out.dtype == q_nope.dtype`, a kernel that staged
    q_out in q_nope's buffer), and code the PR adds now tests that same relation to choose what to do (aiter
    6b237bdbfa: `Q_OUT_MATCHES = q_out_ptr.dtype.element_ty == q_nope_ptr.dtype.element_ty` and a cast path in
    the kernel it launches): the requirement is lifted by the PR's own code, not dropped."""
    if g.kind not in ("assert", "if-raise") or not g.asserted or len(g.subjects) < 2:
        return ""
    try:
        wanted = _compared_relations(parse_expression(g.asserted), g.subjects)
    except Unparsable:
        return ""
    if not wanted:
        return ""
    for f in review.changed("python", include_tests=False):
        for cmp in _added_comparisons(review, f):
            for pair, attrs in _compared_relations(cmp, g.subjects):
                if any(pair == p and attrs & a for p, a in wanted):
                    return f"{f.path}:{cmp.lineno}: the PR's code now tests `{short(ast.unparse(cmp), 90)}` itself"
    return ""


_ADDED_COMPARISONS: dict[tuple[str, str, str], list[ast.Compare]] = {}


def _added_comparisons(review: ReviewInput, f: ChangedFile) -> list[ast.Compare]:
    """The comparisons on lines the PR adds to a head Python file, outside asserts (an added assert is the
    check kept, not a requirement lifted), once per review."""
    key = (review.source.rev("base"), review.source.rev("head"), f.path)
    if key not in _ADDED_COMPARISONS:
        if len(_ADDED_COMPARISONS) > 256:
            _ADDED_COMPARISONS.clear()
        found: list[ast.Compare] = []
        added = f.added_lines
        tree = review.source.python(f.path) if added and any("==" in t or "!=" in t for _, t in f.added) else None
        if tree is not None:
            index = index_of(tree)
            found = [cmp for cmp in index.of_type(ast.Compare) if cmp.lineno in added
                     and not any(isinstance(a, ast.Assert) for a in index.ancestors(cmp))]
        _ADDED_COMPARISONS[key] = found
    return _ADDED_COMPARISONS[key]


MAX_NEIGHBOUR_FILES = 40
NEIGHBOUR_KINDS = ("assert", "if-raise", "check")  # the guards a caller or a delegate can hold instead


def _checked_by_neighbour(review: ReviewInput, f: ChangedFile, g: Guard) -> tuple[str, str, str] | None:
    """The deleted check now holds where the function is called from or where it hands its inputs on: a guard
    in a caller (a wrapper, the public op) on the arguments it passes, or in the function it delegates to on
    the parameters it receives. Read on the whole head tree, not only the PR's files, with the call's
    arguments bound to the callee's parameters so `assert a.dim() == 2; f(a)` covers f's `x.dim() == 2`."""
    if g.kind not in NEIGHBOUR_KINDS or not g.asserted or not g.function:
        return None
    head = _guard_def(review, f, g, "head")
    if head is None:
        return None
    wanted = {_squash(c) for c in _parts(g.asserted, "and")}
    # delegates: functions this one calls, with their parameters bound to the arguments it passes
    for call in (n for n in walk(head) if isinstance(n, ast.Call)):
        target = _definition(review, f.path, dotted_name(call.func))
        if target is None:
            continue
        path, qualname, func = target
        binding = _bind(call, func)
        checks = _function_guards(review, path, qualname)
        if checks and wanted <= _conjuncts(checks, binding):
            h = next(h for h in checks if _conjuncts([h], binding) & wanted)
            return f"{path}:{h.line}", h.text, f"checked in `{func.name}`, which `{head.name}` calls"
    # callers: every call of this function in the head tree, with its parameters bound to the caller's values
    name = head.name
    paths = [p for p, _, _ in review.source.grep(rf"\b{re.escape(name)}\s*\(", "head", ("*.py",), files_only=True)]
    for path in paths[:MAX_NEIGHBOUR_FILES]:
        tree = review.source.python(path)
        if tree is None:
            continue
        # a def's nodes all sit on its lines (decorators to end): one that holds no call of `name` is not read
        call_lines = sorted(c.lineno for c in index_of(tree).calls_to(name))
        if not call_lines:
            continue
        for qualname, caller in _function_index(review, path, "head").items():
            if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)) or caller is head:
                continue
            first = min([caller.lineno, *(d.lineno for d in caller.decorator_list)])
            if not _intersects(call_lines, first, caller.end_lineno or caller.lineno):
                continue
            calls = [n for n in walk(caller) if isinstance(n, ast.Call)
                     and dotted_name(n.func).rsplit(".", 1)[-1] == name]
            if not calls:
                continue
            checks = _function_guards(review, path, qualname)
            if not checks:
                continue
            found = _conjuncts(checks, {})
            for call in calls:
                expected = {_squash(_rewrite(c, _bind(call, head))) for c in _parts(g.asserted, "and")}
                if expected <= found:
                    h = next(h for h in checks if _conjuncts([h], {}) & expected)
                    return f"{path}:{h.line}", h.text, f"checked in `{caller.name}`, which calls `{name}`"
    return None


_FUNCTION_GUARDS: dict[tuple[str, str, str], list[Guard]] = {}


def _function_guards(review: ReviewInput, path: str, qualname: str) -> list[Guard]:
    """Condition guards directly in one function of a head-side Python file (each function read once per
    review): the module's guards of that qualified name, read from its defs alone."""
    key = (review.source.rev("head"), path, qualname)
    if key not in _FUNCTION_GUARDS:
        if len(_FUNCTION_GUARDS) > 1024:
            _FUNCTION_GUARDS.clear()
        tree = review.source.python(path)
        found: list[Guard] = []
        if tree is not None and qualname:
            for node in _defs_named(tree.body, qualname):
                found += python_guards(tree, within=(node, qualname))
        elif tree is not None:
            found = python_guards(tree)
        _FUNCTION_GUARDS[key] = [h for h in found if h.function == qualname and h.asserted
                                 and h.kind in ("assert", "if-raise", "check")]
    return _FUNCTION_GUARDS[key]


def _conjuncts(checks: list[Guard], binding: dict[str, ast.expr]) -> set[str]:
    return {_squash(_rewrite(c, binding)) for h in checks for c in _parts(h.asserted, "and")}


def _definition(review: ReviewInput, path: str, callee: str) -> tuple[str, str, ast.FunctionDef] | None:
    """The head-side def a call names: a function of the same module, or one imported with `from m import f`."""
    if not callee or "." in callee:
        return None
    local = _function_index(review, path, "head").get(callee)
    if isinstance(local, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return path, callee, local  # type: ignore[return-value]
    tree = review.source.python(path)
    for node in (tree.body if tree is not None else []):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) != callee:
                    continue
                module = ("/".join(path.split("/")[:-node.level]) + "/" if node.level else "") + \
                    (node.module or "").replace(".", "/")
                for candidate in (f"{module}.py", f"{module}/__init__.py"):
                    found = _function_index(review, candidate, "head").get(alias.name) \
                        if review.source.exists(candidate) else None
                    if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        return candidate, alias.name, found  # type: ignore[return-value]
    return None


def _bind(call: ast.Call, func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """Parameter name → the argument expression `call` passes for it."""
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    if params and params[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        params = params[1:]
    out: dict[str, ast.expr] = {}
    for param, arg in zip(params, call.args):
        if isinstance(arg, ast.Starred):
            break
        out[param] = arg
    out.update({k.arg: k.value for k in call.keywords if k.arg})
    return out


def _rewrite(condition: str, binding: dict[str, ast.expr]) -> str:
    """`condition` with each bound name replaced by the expression bound to it."""
    if not binding:
        return condition
    try:
        tree = parse_expression(condition)
    except Unparsable:
        return condition

    class Substitute(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return binding.get(node.id, node)

    return _norm(Substitute().visit(tree))


def _helper_guard(g: Guard, body: str, heads: dict[str, list[Guard]], added: dict[str, set[int]],
                  block_text: str) -> tuple[str, Guard] | None:
    """The deleted check now lives in a helper: a guard on an added line of a function that this function
    calls — checking the same names, or called from exactly where the deleted guard stood."""
    called = set(re.findall(r"\b(\w+)\s*\(", body))
    at_spot = set(re.findall(r"\b(\w+)\s*\(", block_text))
    for path, hs in heads.items():
        for h in hs:
            name = h.function.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
            if not name or h.kind not in CONDITION_KINDS or h.line not in added[path]:
                continue
            if (name in called and h.subjects & g.subjects) or name in at_spot:
                return path, h
    return None


JUSTIFY_WORDS = lazy_re(r"\b(safe|supported|support|handled|handles|no longer|not needed|unnecessary|now|"
                           r"instead|because|guaranteed|always)\b", re.IGNORECASE)


def _if_without_raise(review: ReviewInput, f: ChangedFile, g: Guard) -> tuple[int, str] | None:
    """Head `if` of the same function with the deleted guard's exact condition and no raise in its branch."""
    scope = _function_index(review, f.path, "head").get(g.function) if g.function else review.source.python(f.path)
    if scope is None:
        return None
    condition = g.key.split(":", 1)[1].rsplit("|", 1)[0]
    for node in walk(scope):
        if isinstance(node, ast.If) and _norm(node.test) == condition \
                and not any(isinstance(stmt, ast.Raise) for stmt in node.body):  # some path through it no longer raises
            return node.lineno, short(f"if {condition}: " + "; ".join(_norm(b).splitlines()[0] for b in node.body[:2]))
    return None


def _rewritten(review: ReviewInput, f: ChangedFile, g: Guard) -> str:
    """The guard's function was largely rewritten (≥ 15 lines, ≥ 60 % of them deleted): the check went with
    the old implementation, and the new one is the thing to review, not a missing line."""
    for base_start, base_len, _, head_len in f.hunks:
        if base_start <= g.line < base_start + base_len:
            removed = sum(1 for n, _ in f.removed if base_start <= n < base_start + base_len)
            if base_len >= 20 and removed >= 0.6 * base_len:
                return f"the {base_len}-line block around it was replaced ({removed} lines deleted, {head_len} written)"
    base_text = review.source.text(f.old_path or f.path, "base") or ""
    total_file = base_text.count("\n") + 1
    if total_file >= 40 and len(f.removed) >= 0.5 * total_file:
        return f"{len(f.removed)} of the {total_file} lines of {f.old_path or f.path} were replaced"
    text, start = _function_span(review, f, g.function, "base")
    if not text or not g.function:
        return ""
    total = text.count("\n") + 1
    removed = sum(1 for n, _ in f.removed if start <= n < start + total)
    if total >= 15 and removed >= 0.6 * total:
        return f"{removed} of the {total} lines of {g.function} were replaced"
    return ""


def _block_comment(review: ReviewInput, f: ChangedFile, lines_: set[int], pattern: re.Pattern[str]) -> str:
    """The comments the PR adds on `lines_`, when they match `pattern`."""
    added = f.added_lines
    text = review.source.lines(f.path)
    marker = "#" if f.language == "python" else "//"
    found = [text[n - 1].split(marker, 1)[1].strip() for n in sorted(lines_)
             if n in added and 0 < n <= len(text) and marker in text[n - 1]]
    joined = " ".join(found)
    return short(joined, 200) if joined and pattern.search(joined) else ""


def _justification(review: ReviewInput, f: ChangedFile, g: Guard, block: set[int]) -> str:
    """A comment the PR adds where the guard stood that names what it checked and says why it can go."""
    if not block:
        return ""
    lines = review.source.lines(f.path)
    first, last = min(block), max(block)
    marker = "#" if f.language == "python" else "//"
    comments = [lines[n - 1].split(marker, 1)[1].strip() for n in range(max(1, first - 1), last + 1)
                if n - 1 < len(lines) and marker in lines[n - 1] and n in block]
    text = " ".join(comments)
    if text and JUSTIFY_WORDS.search(text) and any(re.search(rf"\b{re.escape(s)}\b", text) for s in g.subjects):
        return f"{f.path}:{first}: # {short(text, 140)}"
    return ""


COMMON_CALLS = {"len", "isinstance", "all", "any", "int", "float", "str", "bool", "tuple", "list", "dict", "set", "max",
                "min", "sum", "abs", "hasattr", "getattr", "callable", "type", "range", "sizeof", "static_cast",
                "size", "dim", "numel", "stride", "is_contiguous", "defined", "has_value", "value", "item",
                "data_ptr", "scalar_type", "dtype", "device", "is_cuda", "shape", "get", "exists", "isfile"}


def _vanished_predicate(review: ReviewInput, g: Guard) -> str:
    """A function the check called is gone from the whole head tree: the premise of the check went away."""
    names = [n for n in dict.fromkeys(re.findall(r"(?<![.\w])(\w{6,})\s*\(", g.asserted)) if n not in COMMON_CALLS]
    files = review.source.grep_words(names, "head", ())  # one search of the tree for all of them
    return next((name for name in names if not files[name]), "")


def _touches(h: Guard, lines: set[int]) -> bool:
    return any(n in lines for n in range(h.line, h.end_line + 1))


def _block_text(review: ReviewInput, f: ChangedFile, block: set[int]) -> str:
    return "\n".join(t for n, t in f.added if n in block)


def _params_dropped(review: ReviewInput, f: ChangedFile, g: Guard, params: set[str]) -> set[str]:
    """Python: checked parameters the head function no longer has and whose code no longer names them
    (a docstring recalling "the prior `write_indices` buffer" is prose, not a use)."""
    if f.language != "python" or not g.function:
        return set()
    head = _guard_def(review, f, g, "head")
    if head is None:
        return set()
    named = {n.id for n in walk(head) if isinstance(n, ast.Name)} | \
        {a.arg for a in walk(head.args) if isinstance(a, ast.arg)}
    return {s for s in g.subjects & params if s not in named}


def _parameters(review: ReviewInput, f: ChangedFile, function: str) -> set[str]:
    """Parameter names of the guard's function on the base side."""
    if not function:
        return set()
    if f.language == "python":
        node = _function_index(review, f.old_path or f.path, "base").get(function)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return set()
        args = node.args
        return {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} | \
            ({args.vararg.arg} if args.vararg else set()) | ({args.kwarg.arg} if args.kwarg else set())
    text, _ = _function_span(review, f, function, "base")
    signature = text.split("{", 1)[0]
    return set(re.findall(r"([A-Za-z_]\w*)\s*(?:=[^,)]*)?\s*[,)]", signature))


def _same_message(review: ReviewInput, g: Guard) -> tuple[str, str] | None:
    """The guard's message words reappear on an added line of the PR: the check moved and was reworded."""
    words = re.findall(r"[A-Za-z_][\w-]*", g.message)
    if len(words) < 4:
        return None
    pattern = re.compile(r"[^A-Za-z_\-]+".join(re.escape(w) for w in words[:4]))
    for f in review.files:
        for n, t in f.added:
            if pattern.search(t):
                return f"{f.path}:{n}", short(t.strip())
    return None


def _added_set(review: ReviewInput, path: str) -> set[int]:
    for f in review.files:
        if f.path == path:
            return f.added_lines
    return set()


def _squash(text: str) -> str:
    return re.sub(r"\s+|[()]", "", text)


def _parts(text: str, op: str) -> list[str]:
    """Top-level operands of `and`/`&&` (op='and') or `or`/`||` (op='or'), normalised."""
    try:
        node = parse_expression(text)
    except Unparsable:
        sep = "&&" if op == "and" else "||"
        parts, depth, cur = [], 0, ""
        i = 0
        while i < len(text):
            if text[i] in "([{":
                depth += 1
            elif text[i] in ")]}":
                depth -= 1
            if depth == 0 and text.startswith(sep, i):
                parts.append(cur)
                cur, i = "", i + 2
                continue
            cur += text[i]
            i += 1
        return [p.strip() for p in parts + [cur] if p.strip()]
    kind = ast.And if op == "and" else ast.Or
    values = node.values if isinstance(node, ast.BoolOp) and isinstance(node.op, kind) else [node]
    return [_norm(v) for v in values]


def _raise_condition(g: Guard) -> str:
    if g.kind == "if-raise":
        return g.key.split(":", 1)[1].rsplit("|", 1)[0]
    if g.kind == "throw":
        return g.key[len("throw:throw"):].split("|", 1)[0]
    return ""


def _weakened(old: Guard, new: Guard) -> str:
    """Why the new check rejects fewer inputs than the old one, when that is visible in the text."""
    if old.kind in ("assert", "check") and new.kind in ("assert", "check"):
        a, b = old.asserted, new.asserted
        if not a or not b:
            return ""
        conj_a, conj_b = _parts(a, "and"), _parts(b, "and")
        keys_b = {_squash(c) for c in conj_b}
        if keys_b < {_squash(c) for c in conj_a}:
            dropped = [c for c in conj_a if _squash(c) not in keys_b]
            return "drops " + " and ".join(f"`{short(d, 60)}`" for d in dropped)
        if len(_parts(b, "or")) > 1 and len(_parts(a, "or")) == 1 and _squash(a) in {_squash(x) for x in _parts(b, "or")}:
            return "adds an alternative (`or`) to the old condition"
        if "==" in a and "==" not in b and re.search(r"\bin\b|<=|>=", b):
            return "equality relaxed to a range or membership test"
        return ""
    a, b = _raise_condition(old), _raise_condition(new)
    if a and b:
        dis_a, dis_b = _parts(a, "or"), _parts(b, "or")
        keys_b = {_squash(d) for d in dis_b}
        if keys_b < {_squash(d) for d in dis_a}:
            dropped = [d for d in dis_a if _squash(d) not in keys_b]
            return "no longer raises when " + " or ".join(f"`{short(d, 60)}`" for d in dropped)
        if len(_parts(b, "and")) > 1 and len(_parts(a, "and")) == 1 and _squash(a) in {_squash(x) for x in _parts(b, "and")}:
            return "raises only when an extra condition also holds"
    return ""


OPTIONAL_TESTS = tuple(lazy_re(p) for p in (r"^(\w+) is not None$", r"^(\w+) is None$", r"^not \(?(\w+) is None\)?$",
                                            r"^(\w+)\.has_value\(\)$", r"^(\w+)!=nullptr$", r"^(\w+)$"))
NOT_NONE = lazy_re(r"\b(\w+) is not None\b")


def _optional_subject(g: Guard) -> str:
    for pattern in OPTIONAL_TESTS:
        m = pattern.match(g.asserted.strip())
        if m:
            return m.group(1)
    m = NOT_NONE.search(g.asserted)
    return m.group(1) if m else ""


def _optional_evidence(review: ReviewInput, name: str) -> list[str]:
    """Head lines in the PR's changed files that treat `name` as optional (aiter#5143's three lines)."""
    paths = tuple(f.path for f in review.changed("python", "cpp"))
    if not paths:
        return []
    hits = review.source.grep(rf"\b{re.escape(name)}\b", "head", paths)
    useful = [h for h in hits if OPTIONAL_HINT.search(h[2])]
    return [f"{p}:{n}: {short(t.strip(), 100)}" for p, n, t in useful[:3]]


def _comment_above(review: ReviewInput, path: str, side: str, language: str, start: int, end: int,
                   pattern: re.Pattern[str] = INVARIANT_WORDS) -> str:
    """The comment block directly above `start` (and trailing comments up to `end`), if it matches."""
    if not start:
        return ""
    text = review.source.text(path, side)  # type: ignore[arg-type]
    if text is None:
        return ""
    lines = text.splitlines()
    marker = "#" if language == "python" else "//"
    block: list[str] = []
    n = start - 1
    while n >= 1 and len(block) < 8:
        stripped = lines[n - 1].strip()
        if stripped.startswith(marker) or (language != "python" and stripped.startswith(("/*", "*"))):
            block.insert(0, stripped.lstrip("#/* ").rstrip("*/ "))
            n -= 1
            continue
        break
    if language == "python":
        block += [c for line, c in py_comments("\n".join(lines[start - 1:end])) if c]
    else:
        block += [ln.split("//", 1)[1].strip() for ln in lines[start - 1:end] if "//" in ln]
    joined = " ".join(block)
    return short(joined, 200) if joined and pattern.search(joined) else ""


def _lines(fates: list[GuardFate]) -> list[str]:
    if not fates:
        return ["The PR deletes no assert, raise, check, zero-initialisation or .contiguous() call."]
    counts: dict[str, int] = {}
    for fate in fates:
        counts[fate.fate] = counts.get(fate.fate, 0) + 1
    order = ["gone", "replaced", "changed", "lifted", "handled", "moved"]
    parts = [f"{counts[k]} {k}" for k in order if k in counts]
    rest = sum(v for k, v in counts.items() if k not in order)
    if rest:
        parts.append(f"{rest} went away with the code they guarded")
    summary = ", ".join(parts)
    out = [f"GUARDS DELETED: {len(fates)} — {summary}."]
    for fate in sorted(fates, key=lambda x: (order.index(x.fate) if x.fate in order else 9, x.path, x.base_line)):
        loc = f"{fate.path}:{fate.base_line} (base)"
        if fate.fate == "moved":
            out.append(f"moved: {loc} `{fate.text}` → {fate.where}")
        elif fate.fate == "changed":
            weak = f" — weakened: {fate.weakened}" if fate.weakened else ""
            out.append(f"changed: {loc}{weak}")
            out.append(f"  - {fate.text}")
            out.append(f"  + {fate.new_text or '(assigned from another expression on head)'}"
                       + (f"  [{fate.where}]" if fate.where else ""))
        elif fate.fate == "replaced":
            out.append(f"replaced: {loc} `{fate.text}` → uninitialised at {fate.where}: `{fate.new_text}`")
            if fate.invariant:
                out.append(f"  base comment: {fate.invariant}")
            if fate.contradiction:
                out.append(f"  head comment: {fate.contradiction}")
        elif fate.fate == "lifted":
            out.append(f"lifted: {loc} `{fate.text}` — the PR now handles other values; it uses them at:")
            out.extend(f"  {e}" for e in fate.evidence)
        elif fate.fate == "handled":
            out.append(f"handled: {loc} `{fate.text}` — head handles it another way:")
            out.extend(f"  {e}" for e in fate.evidence)
        elif fate.fate == "gone":
            out.append(f"gone: {loc} `{fate.text}` — nothing on head checks it"
                       + (f"; near head line {fate.head_line}" if fate.head_line else ""))
            if fate.invariant:
                out.append(f"  base comment: {fate.invariant}")
        else:
            reason = {"gone-with-function": "its function was removed",
                      "gone-with-branch": "the branch it guarded was deleted",
                      "gone-with-subject": "the names it checked are no longer used there",
                      "gone-with-use": "the value it guarded is no longer used there",
                      "gone-with-file": "its file was deleted",
                      "gone-inline": "an inline zero tensor argument was removed",
                      "implemented": "the PR implements the case it rejected",
                      "gone-debug-switch": "it ran only under an opt-in debug switch read from the environment",
                      "warned": "the same condition now logs a warning instead of stopping",
                      "rewritten": "its code was rewritten",
                      "justified": "the PR explains in a comment why it can go"}.get(fate.fate, fate.fate)
            if fate.evidence:
                reason += f" ({fate.evidence[0]})"
            out.append(f"went away: {loc} `{fate.text}` — {reason}")
    return out
