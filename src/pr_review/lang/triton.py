"""Triton (and Gluon) kernels read through Python's `ast`: which functions are kernels, what
their `tl.*` calls are, and where a value in a kernel comes from (a small, flow-insensitive
def-use map over the kernel body)."""
from __future__ import annotations

import ast
from typing import Callable, Iterator

from .index import index_of
from .python import children, dotted_name, walk
from ..model import field, record

TRITON_LANGUAGE = {"triton.language", "triton.experimental.gluon.language"}
JIT_DECORATORS = {"jit", "autotune", "heuristics"}


def language_aliases(tree: ast.Module) -> set[str]:
    """Local names bound to `triton.language` (normally `tl`) or Gluon's language (`gl`)."""
    out = {"tl"}
    index = index_of(tree)
    for node in index.of_type(ast.Import) + index.of_type(ast.ImportFrom):  # type: ignore[operator]
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in TRITON_LANGUAGE and alias.asname:
                    out.add(alias.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                if f"{node.module}.{alias.name}" in TRITON_LANGUAGE:
                    out.add(alias.asname or alias.name)
    return out


def is_kernel(func: ast.AST) -> bool:
    """A function decorated with `triton.jit` / `gluon.jit` / `jit` (possibly under autotune)."""
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for deco in func.decorator_list:
        name = dotted_name(deco.func if isinstance(deco, ast.Call) else deco)
        if name.rsplit(".", 1)[-1] == "jit":
            return True
    return False


def kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in index_of(tree).of_type((ast.FunctionDef, ast.AsyncFunctionDef)) if is_kernel(n)]  # type: ignore[arg-type]


def constexpr_params(func: ast.FunctionDef) -> set[str]:
    out = set()
    for arg in func.args.args + func.args.kwonlyargs:
        if arg.annotation is not None and dotted_name(arg.annotation).endswith("constexpr"):
            out.add(arg.arg)
    return out


def tl_call(node: ast.AST, aliases: set[str], *names: str) -> bool:
    """`node` is a call of `<alias>.<name>` for one of `names` (`tl.load`, `gl.program_id`, …)."""
    if not isinstance(node, ast.Call):
        return False
    name = dotted_name(node.func)
    head, _, tail = name.rpartition(".")
    return tail in names and head in aliases


def keyword(call: ast.Call, name: str) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    """The argument bound to parameter `name` at `position`, positional or keyword."""
    if len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return keyword(call, name)


@record
class Kernel:
    """One kernel with a def-use map: every name's assigned expressions, loop targets and the
    `for` statements that bind them."""

    func: ast.FunctionDef
    aliases: set[str]
    constexprs: set[str] = field(default_factory=set)
    defs: dict[str, list[ast.expr]] = field(default_factory=dict)
    loop_vars: dict[str, ast.For] = field(default_factory=dict)
    augmented_in_loop: dict[str, list[ast.expr]] = field(default_factory=dict)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)

    @classmethod
    def build(cls, func: ast.FunctionDef, aliases: set[str]) -> Kernel:
        k = cls(func, aliases, constexpr_params(func))
        index = index_of(func)  # kept on the function: every detector building this kernel shares one walk
        k.parents = index.parents
        for node in index.nodes:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    k._bind(target, node.value)
            elif isinstance(node, (ast.AnnAssign,)) and node.value is not None:
                k._bind(node.target, node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                k.defs.setdefault(node.target.id, []).append(
                    ast.BinOp(left=ast.Name(node.target.id, ast.Load()), op=node.op, right=node.value))
                if any(isinstance(a, (ast.For, ast.While)) for a in k.ancestors(node)):
                    k.augmented_in_loop.setdefault(node.target.id, []).append(node.value)
            elif isinstance(node, ast.For):
                for name in _names(node.target):
                    k.loop_vars[name] = node
            elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
                k.defs.setdefault(node.target.id, []).append(node.value)
        return k

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.defs.setdefault(target.id, []).append(value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for t, v in zip(target.elts, value.elts):
                    self._bind(t, v)
            else:
                for name in _names(target):
                    self.defs.setdefault(name, []).append(value)

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def reached(self, expr: ast.AST, opaque: Callable[[ast.AST], bool] | None = None) -> Iterator[ast.AST]:
        """Every node of `expr` and of the expressions a name in it was assigned from (transitively),
        each name followed once; an `opaque` node is yielded but not looked into."""
        seen: set[str] = set()
        todo: list[ast.AST] = [expr]
        while todo:
            node = todo.pop()
            yield node
            if opaque is not None and opaque(node):
                continue
            if isinstance(node, ast.Name) and node.id not in seen:
                seen.add(node.id)
                todo.extend(self.defs.get(node.id, ()))
            todo.extend(children(node))

    def is_load(self, node: ast.AST) -> bool:
        return tl_call(node, self.aliases, "load")

    def reaches(self, expr: ast.AST, pred: Callable[[ast.AST], bool], through_loads: bool = True,
                stop: Callable[[ast.AST], bool] | None = None) -> bool:
        """Whether `expr`, or any expression a name in it was assigned from (transitively),
        contains a node satisfying `pred`. `stop` prunes sub-expressions (e.g. `tl.where`);
        `through_loads=False` treats a loaded value as opaque."""
        def opaque(node: ast.AST) -> bool:
            return not through_loads and self.is_load(node)

        pruned = (lambda node: False) if stop is None else stop
        for node in self.reached(expr, lambda node: pruned(node) or opaque(node)):
            if not pruned(node) and pred(node):
                return True
        return False

    def calls(self, *names: str) -> Iterator[ast.Call]:
        for node in index_of(self.func).of_type(ast.Call):
            if tl_call(node, self.aliases, *names):
                yield node


def _names(target: ast.AST) -> list[str]:
    return [n.id for n in walk(target) if isinstance(n, ast.Name)]


def program_id_axes(kernel: Kernel) -> dict[int, int]:
    """axis → first line of `tl.program_id(axis)` with a literal axis; {-1: line} when an axis is
    not a literal (the kernel cannot be judged)."""
    out: dict[int, int] = {}
    for call in kernel.calls("program_id"):
        axis = argument(call, 0, "axis")
        if isinstance(axis, ast.Constant) and isinstance(axis.value, int):
            out.setdefault(axis.value, call.lineno)
        else:
            out.setdefault(-1, call.lineno)
    return out
