"""FlyDSL host and kernel rules (aiter D10, D10b) decided from Python's `ast`.

D10: a cache-miss branch compiles with `flyc.compile(...)` and stores the result but does not
call it on that path, so the first launch of every new (shape, dtype, arch) does nothing.
D10b: `arith.bitcast` handed a DSL value (a Numeric such as `fx.Int32(...)`, an expression over
one, or a `const_expr`) instead of an `arith.unwrap(...)`-ed raw value.
"""
from __future__ import annotations

import ast
import re
from typing import Iterable, Iterator

from ..lang.index import index_of
from ..lang.python import call_tail, dotted_name, quoted, touches, walk
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re


def _flydsl_files(review: ReviewInput, needle: str, added_token: str = "") -> Iterator[tuple[object, ast.Module]]:
    """Changed FlyDSL files whose text contains `needle` (`.compile(` / `bitcast(`) and, when
    given, whose added lines contain `added_token`."""
    for f in review.changed("python", include_tests=False):
        if not f.added or (added_token and not any(added_token in t for _, t in f.added)):
            continue
        text = review.source.text(f.path) or ""
        if needle not in text or ("flydsl" not in text and "flyc" not in text):
            continue
        tree = review.source.python(f.path)
        if tree is not None:
            yield f, tree


# ---------------------------------------------------------------------------------------------
# D10

def _compiler_aliases(tree: ast.Module) -> set[str]:
    out = {"flyc"}
    for node in index_of(tree).of_type((ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "flydsl.compiler":
                    out.add(alias.asname or alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module == "flydsl":
            for alias in node.names:
                if alias.name == "compiler":
                    out.add(alias.asname or "compiler")
    return out


def _is_compile(node: ast.Call, aliases: set[str]) -> bool:
    if call_tail(node) != "compile":
        return False
    head, _, tail = dotted_name(node.func).rpartition(".")
    return tail == "compile" and head in aliases


def _calls(stmts: list[ast.stmt], names: set[str]) -> bool:
    for stmt in stmts:
        for n in walk(stmt):
            if isinstance(n, ast.Call) and _norm(ast.unparse(n.func)) in names:
                return True
    return False


def _returns_value(stmts: list[ast.stmt], names: set[str]) -> bool:
    for stmt in stmts:
        for n in walk(stmt):
            if isinstance(n, ast.Return) and n.value is not None and _norm(ast.unparse(n.value)) in names:
                return True
    return False


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text)


# A comment in the repository saying that `flyc.compile(...)` also runs the kernel on the first
# call (newer FlyDSL releases do: "compiles **and** executes", "issues the first launch itself").
LAUNCHING_COMPILE = r"compile[^\n]{0,60}(and|also|itself)[^\n]{0,20}(execut|launch|runs)|(execut|launch)[^\n]{0,30}once[^\n]{0,30}compile|compile\(\)[^\n]{0,20}executes"


def _compile_launches(review: ReviewInput, cache: dict[str, str | None]) -> str | None:
    """Where the head tree documents that `flyc.compile` launches the kernel (path:line), or None.
    Then a miss path that compiles and stores is the intended shape; calling it again would
    launch twice."""
    if "v" not in cache:
        hits = review.source.grep(LAUNCHING_COMPILE, "head", ("*.py",))
        cache["v"] = f"{hits[0][0]}:{hits[0][1]}" if hits else None
    return cache["v"]


@detector("flydsl-compile-not-called")
def flydsl_compile_not_called(review: ReviewInput) -> Iterable[Finding]:
    semantics: dict[str, str | None] = {}
    for f, tree in _flydsl_files(review, ".compile("):
        aliases = _compiler_aliases(tree)
        parents = index_of(tree).parents
        added = f.added_lines  # type: ignore[attr-defined]
        for node in index_of(tree).of_type(ast.Call):
            if not _is_compile(node, aliases):
                continue
            stmt = _statement(node, parents)
            func = _enclosing(node, parents)
            if func is None or not isinstance(stmt, ast.Assign) or stmt.value is not node:
                continue  # returned or passed straight on (the caller runs it), or an AOT warm-up
            after = _following(stmt, parents, func)
            stored = _stored_names(stmt, after)
            if not _cache_checked(func, stored):
                continue  # not a cache-miss path
            path_stmts = _until_exit(after)
            if not (touches(stmt, added) or any(touches(s, added) for s in path_stmts)):
                continue
            if _calls(path_stmts, stored) or _returns_value(path_stmts, stored):
                continue
            called_elsewhere = _calls(func.body, stored | _aliases(func, stored))  # e.g. on the cache-hit path
            documented = _compile_launches(review, semantics) if called_elsewhere else None
            if documented:
                continue  # this repository's FlyDSL launches on compile (documented at `documented`)
            path = f.path  # type: ignore[attr-defined]
            shown = min(stored, key=len)
            yield Finding(
                rule="flydsl-compile-not-called", path=path, line=stmt.lineno, end_line=stmt.end_lineno,
                problem=(f"`{func.name}` compiles on its cache-miss path (`{quoted(stmt, 70)}`, {path}:{stmt.lineno}) "
                         f"and stores the result in `{shown}`, but never calls `{shown}(...)` before leaving."),
                impact=(("Per the aiter review catalog, `flyc.compile` builds the CompiledFunction and does not "
                         "launch it: the first call for every new (shape, dtype, arch) then runs no kernel and the "
                         "caller reads the uninitialised output buffer, with no error.")
                        + ("" if called_elsewhere else " Nothing else in the function calls it either, so cache hits "
                           "launch nothing as well.")),
                action=f"Author must call `{shown}(*args)` on the same path right after compiling "
                       "(or return it to a caller that does), or cite the FlyDSL version whose compile also launches.",
                trigger=(f"the first call of `{func.name}` for any new shape/dtype key: the cache misses, compiles "
                         "and returns without launching"),
                tag="inferred",
                evidence=[Evidence(path, stmt.lineno, quoted(stmt, 120))],
            )


def _statement(node: ast.AST, parents: dict) -> ast.stmt:
    while node in parents and not isinstance(node, ast.stmt):
        node = parents[node]
    return node  # type: ignore[return-value]


def _following(stmt: ast.stmt, parents: dict, func: ast.AST) -> list[ast.stmt]:
    """The statements that run after `stmt` on its path, in order, up to the end of `func`:
    the rest of its block, then the rest of each enclosing block (an `if`/`try`/`with`/loop)."""
    out: list[ast.stmt] = []
    child: ast.AST = stmt
    while child in parents and child is not func:
        parent = parents[child]
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and child in block:
                if not (isinstance(parent, ast.Try) and field == "body"):
                    out.extend(block[block.index(child) + 1:])
                else:
                    out.extend(block[block.index(child) + 1:])
                    out.extend(parent.orelse)
                    out.extend(parent.finalbody)
                break
        if isinstance(parent, ast.ExceptHandler):
            child = parents.get(parent, parent)
            if child is parent:
                break
            continue
        child = parent
    return out


def _until_exit(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out = []
    for s in stmts:
        out.append(s)
        if isinstance(s, (ast.Return, ast.Raise)):
            break
    return out


def _stored_names(stmt: ast.Assign, after: list[ast.stmt]) -> set[str]:
    """Where the compiled function is kept: `cf = ...`, `exe._cf = ...`, `cache[key] = ...`, plus
    names it is copied to afterwards (`exe._cf = cf`)."""
    names = {_norm(ast.unparse(t)) for t in stmt.targets}
    for s in after:
        for n in walk(s):
            if isinstance(n, ast.Assign) and _norm(ast.unparse(n.value)) in names:
                names.update(_norm(ast.unparse(t)) for t in n.targets)
    return names


def _root(text: str) -> str:
    return re.split(r"[.\[(]", text, 1)[0]


def _aliases(func: ast.AST, stored: set[str]) -> set[str]:
    """Local names read from the cache the compiled function is stored in
    (`compiled = cache.get(key)`, `cf = getattr(exe, "_cf", None)`)."""
    roots = {_root(s) for s in stored}
    out = set()
    for n in walk(func):
        if isinstance(n, ast.Assign) and {x.id for x in walk(n.value) if isinstance(x, ast.Name)} & roots:
            out.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return out


def _cache_checked(func: ast.AST, stored: set[str]) -> bool:
    """The function looks the compiled function up before compiling: an `if` on the stored name
    (or on a name read from the same cache), a `getattr(...)`, a `.get(...)` or an `in` test."""
    roots = {_root(s) for s in stored} | _aliases(func, stored)
    for n in walk(func):
        if isinstance(n, (ast.If, ast.IfExp)):
            test = ast.unparse(n.test)
            names = {x.id for x in walk(n.test) if isinstance(x, ast.Name)}
            if names & roots or re.search(r"getattr|\.get\(|\bin\b|hasattr", test):
                return True
    return False


# ---------------------------------------------------------------------------------------------
# D10b

NUMERIC = lazy_re(r"^(fx\.|flydsl\.expr\.)?(U?Int(8|16|32|64)|Float(16|32|64)|BFloat16|Boolean|Index)$")
UNWRAP = lazy_re(r"(^|\.)(unwrap|_to_raw|_raw|to_raw|raw)$")
TYPE_ARG = lazy_re(r"^(T\.|ir\.)|_ty(pe)?$|Type\.get|^(i|f|bf)\d+$|^vec\w*$")


def _arith_aliases(tree: ast.Module) -> set[str]:
    out = set()
    for node in index_of(tree).of_type((ast.ImportFrom, ast.Import)):
        if isinstance(node, ast.ImportFrom) and node.module in ("flydsl.expr", "flydsl"):
            for alias in node.names:
                if alias.name == "arith":
                    out.add(alias.asname or "arith")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "flydsl.expr.arith" and alias.asname:
                    out.add(alias.asname)
    return out


def _dsl_value(expr: ast.AST, defs: dict[str, list[ast.expr]], depth: int = 0) -> str | None:
    """Why `expr` is a DSL value (not a raw ir.Value): a Numeric constructor, `const_expr`, or
    arithmetic over one — through local assignments. None when unknown or unwrapped."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Call):
        name = dotted_name(expr.func)
        if UNWRAP.search(name) or (isinstance(expr.func, ast.Attribute) and expr.func.attr == "ir_value"):
            return None
        if NUMERIC.match(name):
            return f"`{quoted(expr, 40)}` is a FlyDSL Numeric"
        if name.endswith("const_expr"):
            return f"`{quoted(expr, 40)}` is a const_expr"
        return None
    if isinstance(expr, (ast.BinOp, ast.UnaryOp)):
        for operand in ([expr.left, expr.right] if isinstance(expr, ast.BinOp) else [expr.operand]):
            why = _dsl_value(operand, defs, depth + 1)
            if why:
                return f"arithmetic on a DSL value ({why})"
        return None
    if isinstance(expr, ast.Name):
        values = defs.get(expr.id, [])
        reasons = [_dsl_value(v, defs, depth + 1) for v in values]
        if values and all(reasons):
            return f"`{expr.id}` holds a DSL value ({reasons[0]})"
    return None


@detector("flydsl-bitcast-unwrap")
def flydsl_bitcast_unwrap(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in _flydsl_files(review, "bitcast(", "bitcast"):
        aliases = _arith_aliases(tree)
        if not aliases:
            continue
        parents = index_of(tree).parents
        added = f.added_lines  # type: ignore[attr-defined]
        base = review.base_python(f)  # type: ignore[attr-defined]
        base_calls = {_norm(ast.unparse(n)) for n in index_of(base).of_type(ast.Call)} if base else set()
        defs_by_func: dict[int, dict[str, list[ast.expr]]] = {}
        for node in index_of(tree).of_type(ast.Call):
            if dotted_name(node.func) not in {f"{a}.bitcast" for a in aliases}:
                continue
            if not touches(node, added) or _norm(ast.unparse(node)) in base_calls or len(node.args) < 2:
                continue
            operand = _value_operand(node)
            if operand is None or isinstance(operand, ast.Constant):
                continue  # a plain Python literal is fine
            func = _enclosing(node, parents)
            scope = func if func is not None else tree
            defs = defs_by_func.setdefault(id(scope), _local_defs(scope))
            why = _dsl_value(operand, defs)
            if why is None:
                continue
            path = f.path  # type: ignore[attr-defined]
            yield Finding(
                rule="flydsl-bitcast-unwrap", path=path, line=node.lineno, end_line=node.end_lineno,
                problem=(f"`{quoted(node, 70)}` at {path}:{node.lineno} passes a DSL value to `arith.bitcast` without "
                         f"`arith.unwrap(...)`: {why}."),
                impact=("`arith.bitcast` is the raw MLIR builder and needs an `ir.Value`; a Numeric/DSL value is "
                        "rejected with a type error at JIT-compile time — the first time this shape/dtype branch is "
                        "traced, not at import or in tests that never reach it."),
                action=f"Author must wrap the operand: `arith.bitcast(..., arith.unwrap({quoted(operand, 40)}))`.",
                trigger=f"the first JIT trace that reaches {path}:{node.lineno}",
                tag="inferred",
                evidence=[Evidence(path, node.lineno, quoted(node, 120))],
            )


def _value_operand(call: ast.Call) -> ast.expr | None:
    """`arith.bitcast(T.i32, v)` (MLIR order) or `arith.bitcast(v, T.i32)`: the non-type argument."""
    first, second = call.args[0], call.args[1]
    first_type = bool(TYPE_ARG.search(dotted_name(first.func if isinstance(first, ast.Call) else first) or ""))
    second_type = bool(TYPE_ARG.search(dotted_name(second.func if isinstance(second, ast.Call) else second) or ""))
    if first_type and not second_type:
        return second
    if second_type and not first_type:
        return first
    return None


def _enclosing(node: ast.AST, parents: dict) -> ast.AST | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def _local_defs(scope: ast.AST) -> dict[str, list[ast.expr]]:
    defs: dict[str, list[ast.expr]] = {}
    for n in walk(scope):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    defs.setdefault(t.id, []).append(n.value)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            defs.setdefault(n.target.id, []).append(ast.BinOp(left=ast.Name(n.target.id), op=n.op, right=n.value))
    return defs
