"""Python (and Triton, which is Python syntax) helpers over the standard `ast` and `tokenize`."""
from __future__ import annotations

import ast
import io
import tokenize
import weakref
from typing import Iterator


def dotted_name(node: ast.AST) -> str:
    """`os.environ.get` for the expression `os.environ.get`; '' when not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def parent_map(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}


def ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterator[ast.AST]:
    while node in parents:
        node = parents[node]
        yield node


FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPE_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def innermost_function(func: ast.AST, node: ast.AST) -> ast.AST:
    """The innermost function or lambda inside `func` (or `func` itself) that contains `node`."""
    stack = [(func, func)]
    while stack:
        current_node, owner = stack.pop()
        for child in ast.iter_child_nodes(current_node):
            if child is node:
                return owner
            stack.append((child, child if isinstance(child, (*FUNCTION_TYPES, ast.Lambda)) else owner))
    return func


def is_module_level(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """True when no function, class or lambda encloses `node` (module-level `if`/`try` count)."""
    return not any(isinstance(a, SCOPE_TYPES) for a in ancestors(node, parents))


def node_lines(node: ast.AST) -> range:
    start = getattr(node, "lineno", 0)
    return range(start, (getattr(node, "end_lineno", None) or start) + 1)


def comments(text: str) -> list[tuple[int, str]]:
    """(line, comment text without '#') for every comment token; [] when tokenizing fails."""
    out: list[tuple[int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string.lstrip("#").strip()))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return out


def string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "literal"` bindings, to resolve a knob name held in a constant."""
    out: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = stmt.value.value
    return out


_QUALIFIED: weakref.WeakKeyDictionary[ast.AST, dict[str, ast.FunctionDef | ast.AsyncFunctionDef]] = \
    weakref.WeakKeyDictionary()


def qualified_functions(tree: ast.AST) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every def by qualified name (`Class.method`, `outer.inner`), to pair a head def with its base twin.

    A name defined twice (e.g. under `if`/`else`) keeps the first definition. Cached per tree; treat the
    result as read-only.
    """
    cached = _QUALIFIED.get(tree)
    if cached is not None:
        return cached
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTION_TYPES):
                name = f"{prefix}{child.name}"
                out.setdefault(name, child)
                visit(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif not isinstance(child, ast.Lambda):
                visit(child, prefix)

    visit(tree, "")
    _QUALIFIED[tree] = out
    return out


def touches(node: ast.AST, lines: set[int]) -> bool:
    """True when any line of `node` (decorators included) is in `lines`."""
    start = min([getattr(node, "lineno", 0)] + [d.lineno for d in getattr(node, "decorator_list", [])])
    end = getattr(node, "end_lineno", None) or start
    return any(start <= n <= end for n in lines)


def decorator_name(node: ast.AST) -> str:
    """`torch.library.custom_op` for `@torch.library.custom_op("ns::op", ...)`; '' when not a dotted name."""
    return dotted_name(node.func if isinstance(node, ast.Call) else node)
