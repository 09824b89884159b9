"""The functions around changed lines, as plain data: what derivation asks of the def a change is in.

Triage holds each changed Python file side's tree; `defs_around` reads it once for the changed
lines and answers, per line, the defs that enclose it — each by its name, its decorators and the
ways the module hands it over by name (`gen_fake=fn`, `fake_impl=fn`, `register_fake("op")(fn)`,
`op.register_fake(fn)`), so a condition in rules/families.yml can say "a changed line inside a fake"
without a regex over the lines.
"""
from __future__ import annotations

import ast
from bisect import bisect_left
from typing import Iterable

from .index import index_of
from .python import FUNCTION_TYPES, STATEMENT_BODIES, decorator_name, dotted_name
from ..model import record


@record(frozen=True)
class Def:
    name: str
    decorators: tuple[str, ...]  # dotted names: `torch.library.register_fake`, `mha_fwd.register_fake`
    named_by: tuple[str, ...]  # `gen_fake=` (a keyword whose value names it), `torch.library.register_fake(` (a call given it)


def defs_around(tree: ast.AST, lines: Iterable[int]) -> dict[int, tuple[Def, ...]]:
    """Each of `lines` that lies in a def (its `def` line to its last line; decorators are not its
    body) → the defs around it, outermost first. Only statements spanning a wanted line are entered."""
    wanted = sorted(set(lines))
    if not wanted:
        return {}

    def spans(node: ast.AST) -> bool:
        i = bisect_left(wanted, node.lineno)  # type: ignore[attr-defined]
        return i < len(wanted) and wanted[i] <= (node.end_lineno or node.lineno)  # type: ignore[attr-defined]

    found: list[tuple[ast.AST, ...]] = []  # per def spanning a wanted line: it and the defs around it, outermost first
    stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(tree, ())]
    while stack:
        node, around = stack.pop()
        for name in STATEMENT_BODIES:
            items = getattr(node, name, None)
            if type(items) is not list:
                continue
            for child in items:
                if isinstance(child, ast.match_case):  # (no line numbers of its own)
                    stack.append((child, around))
                elif not isinstance(child, (ast.stmt, ast.excepthandler)) or not spans(child):
                    continue
                elif isinstance(child, FUNCTION_TYPES):
                    found.append((*around, child))
                    stack.append((child, (*around, child)))
                else:
                    stack.append((child, around))
    if not found:
        return {}
    named_by = _named_by(tree, {d.name for chain in found for d in chain})
    described: dict[ast.AST, Def] = {}
    out: dict[int, tuple[Def, ...]] = {}
    for chain in sorted(found, key=len):  # outer defs first: an inner def's chain overwrites its lines
        func = chain[-1]
        defs = tuple(described.setdefault(d, Def(d.name, tuple(filter(None, map(decorator_name, d.decorator_list))),
                                                 tuple(named_by.get(d.name, ()))))
                     for d in chain)
        lo, hi = bisect_left(wanted, func.lineno), bisect_left(wanted, (func.end_lineno or func.lineno) + 1)
        for n in wanted[lo:hi]:
            out[n] = defs
    return out


def _named_by(tree: ast.AST, names: set[str]) -> dict[str, list[str]]:
    """How the module hands each of `names` over by name: `kw=` for a keyword argument, `callee(` for a
    positional argument (the callee of `f(...)(fn)` is `f`)."""
    out: dict[str, list[str]] = {}

    def named(node: ast.AST) -> str | None:
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return name if name in names else None

    index = index_of(tree)
    for kw in index.of_type(ast.keyword):
        if kw.arg and (name := named(kw.value)):
            out.setdefault(name, []).append(f"{kw.arg}=")
    for call in index.of_type(ast.Call):
        for arg in call.args:
            if name := named(arg):
                func = call.func.func if isinstance(call.func, ast.Call) else call.func
                callee = dotted_name(func)
                if callee:
                    out.setdefault(name, []).append(f"{callee}(")
    return {name: list(dict.fromkeys(how)) for name, how in out.items()}
