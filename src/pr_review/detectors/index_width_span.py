"""int32-index-overflow (D9), the sizing class: 32-bit addressing chosen from a tensor's logical size.

A launcher compares `t.numel()` / `t.nelement()` (times `t.element_size()`) with an int32 bound and lets
the answer pick the addressing mode — a constexpr flag handed to a kernel, a dtype of offsets, one kernel
or another — while the kernel it launches forms offsets from `t`'s real strides. The logical size equals
the span those offsets reach only for a contiguous tensor: a strided view into a larger pool (a KV cache
sliced out of a unified allocation) is small by `numel()` and huge by its strides, so it gets 32-bit
offsets that wrap or pass the buffer's record count, silently (aiter #4382, fixed by #4673, which sizes
the span from the strides).

Fires when, in one function, on lines the PR added:
- a comparison has an int32 bound on one side (`2**31`, `2**31 - 1`, `torch.iinfo(torch.int32).max`, a
  module or local constant holding one) and, on the other, a size read from `t.numel()`/`t.nelement()`
  (through locals, `max(...)`, products with `element_size()`);
- the comparison gates a choice: the test of an `if`/conditional expression that does more than raise,
  or a call argument, directly or through the local flag it is stored in;
- the function hands `t`'s strides on (`t.stride(k)`), so the kernel addresses `t` by them;
- nothing in the function establishes `t`'s contiguity (`t.is_contiguous()`, `t = ….contiguous()`,
  `t` allocated there, or a module helper that makes it contiguous);
- and the kernels it launches with `t` (read through the module's imports) do not use `t`'s pointer only as a
  moved base (`p + row * stride` kept, handed to a helper or to a buffer op as its base): offsets from a moved
  base do not span the whole tensor, so its size bounds nothing either way.
A size computed from the strides never reads `numel()` and is not seen.
"""
from __future__ import annotations

import ast
from typing import Iterable, Iterator

from ..lang.index import index_of
from ..lang import one_line
from ..lang.python import call_tail, dotted_name, walk
from ..lang.regex import lazy_re
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from .contiguity import _assignments, _bound
from .index_width import (ADDRESS_ARGS, INT32_LIMITS, POINTER_CALLS, _const_int,
                          _strided_tensor, module_constants)

SIZE_CALLS = ("numel", "nelement")
SIZE_TEXT = lazy_re(r"\b(numel|nelement)\s*\(")
# Added lines worth parsing for: a size read or a comparison.
ADDED = lazy_re(r"\b(numel|nelement)\s*\(|[<>]")
# Calls whose result is a freshly allocated (so contiguous) tensor.
ALLOCATIONS = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "arange", "empty_like", "zeros_like",
               "ones_like", "full_like", "rand_like", "randn_like", "new_empty", "new_zeros", "new_ones", "new_full",
               "contiguous", "clone")
# Wrappers a size passes through unchanged in meaning.
PASS_THROUGH = ("max", "min", "int", "abs", "sum")


def _method(node: ast.AST, names: Iterable[str]) -> ast.AST | None:
    """`t` of `t.<name>()` for one of `names`."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names:
        return node.func.value
    return None


def _constants(tree: ast.Module, assigned: dict[str, list[ast.AST]]) -> dict[str, int]:
    consts = module_constants(tree)
    for name, values in assigned.items():  # a local bound once to a constant (not a tuple's element)
        if len(values) == 1:
            value = _const_int(values[0], consts)
            if value is not None:
                consts[name] = value
    return consts


def _sized_tensors(expr: ast.AST, assigned: dict[str, list[ast.AST]]) -> tuple[dict[str, ast.Call], bool]:
    """The tensors whose logical size `expr` reads (`t.numel()`, `t.nelement()`), through locals and
    pass-through wrappers, each with its first size call; and whether the size is counted in bytes."""
    found: dict[str, ast.Call] = {}
    in_bytes = False
    todo, seen = [expr], set()
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            if node.id not in seen:
                seen.add(node.id)
                todo.extend(assigned.get(node.id, ()))
            continue
        tensor = _method(node, SIZE_CALLS)
        if tensor is not None:
            found.setdefault(ast.unparse(tensor), node)
            continue
        if _method(node, ("element_size",)) is not None or (
                isinstance(node, ast.Attribute) and node.attr == "itemsize"):
            in_bytes = True
            continue
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in PASS_THROUGH:
                todo.extend(node.args)
            continue  # another call's result is its own measure (a span helper, a shape product)
        if isinstance(node, (ast.BinOp, ast.IfExp, ast.Tuple, ast.List, ast.UnaryOp)):
            todo.extend(ast.iter_child_nodes(node))
    return dict(sorted(found.items(), key=lambda kv: (kv[1].lineno, kv[1].col_offset))), in_bytes


def _lifted(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> tuple[ast.AST, ast.AST | None]:
    """Climb from a decision through `not`, `and`/`or`: (the outermost boolean node, its parent)."""
    parent = parents.get(node)
    while isinstance(parent, (ast.UnaryOp, ast.BoolOp)):
        node, parent = parent, parents.get(parent)
    return node, parent


def _only_raises(body: list[ast.stmt]) -> bool:
    return all(isinstance(s, (ast.Raise, ast.Assert, ast.Pass, ast.Expr)) for s in body) and \
        any(isinstance(s, ast.Raise) for s in body)


def _gate(decision: ast.AST, scope: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """The node where the decision picks something: an `if` or conditional expression it tests (an `if` that
    only raises is a guard, not a choice), a call it is handed to — directly, or through a local flag."""
    node, parent = _lifted(decision, parents)
    if isinstance(parent, ast.If) and parent.test is node:
        return None if _only_raises(parent.body) else parent
    if isinstance(parent, (ast.IfExp, ast.While)) and parent.test is node:
        return parent
    if isinstance(parent, ast.keyword):
        parent = parents.get(parent)
    if isinstance(parent, ast.Call) and node is not parent.func:
        return parent
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        flag = parent.targets[0].id
        for use in walk(scope):
            if isinstance(use, ast.Name) and use.id == flag and isinstance(use.ctx, ast.Load):
                gate = _gate(use, scope, parents) if use is not decision else None
                if gate is not None:
                    return gate
    return None


def _ruled_out(decision: ast.AST, scope: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """The decision sits in an `and` with a test the function's own assertion makes false: `ARCH != "gfx1250"
    and size <= LIMIT` under `assert ARCH == "gfx1250"` never picks the 32-bit side."""
    asserted = {ast.unparse(a.test) for a in walk(scope) if isinstance(a, ast.Assert) and isinstance(a.test, ast.Compare)}
    node, parent = decision, parents.get(decision)
    while isinstance(parent, ast.BoolOp):
        if isinstance(parent.op, ast.And):
            for other in parent.values:
                if other is node or not (isinstance(other, ast.Compare) and len(other.ops) == 1
                                         and isinstance(other.ops[0], (ast.Eq, ast.NotEq))):
                    continue
                opposite = ast.Compare(other.left, [ast.Eq() if isinstance(other.ops[0], ast.NotEq) else ast.NotEq()],
                                       other.comparators)
                if ast.unparse(opposite) in asserted:
                    return True
        node, parent = parent, parents.get(parent)
    return False


def _contiguous_helpers(tree: ast.Module) -> set[str]:
    """Module functions that return their argument made contiguous (`return x.contiguous()` somewhere in them)."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _method(n, ("contiguous",)) is not None for n in walk(node)):
            out.add(node.name)
    return out


def _contiguity_established(tensor: str, scope: ast.AST, assigned: dict[str, list[ast.AST]],
                            helpers: set[str]) -> bool:
    """The function tests `tensor.is_contiguous()` or binds `tensor` to a fresh or contiguous tensor."""
    for node in walk(scope):
        checked = _method(node, ("is_contiguous",))
        if checked is not None and ast.unparse(checked) == tensor:
            return True
    for value in assigned.get(tensor, ()):
        if isinstance(value, ast.Call):
            if isinstance(value.func, ast.Attribute) and value.func.attr in ALLOCATIONS:
                return True
            if isinstance(value.func, ast.Name) and (value.func.id in helpers or value.func.id in ALLOCATIONS):
                return True
    return False


def _strides_read(scope: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in walk(scope):
        tensor = _strided_tensor(node)
        if tensor is None and isinstance(node, ast.Attribute) and node.attr == "strides":
            tensor = node.value
        if tensor is not None:
            out.add(ast.unparse(tensor))
    return out


def _moves_base(module: ast.Module, kernel: ast.FunctionDef, param: str) -> bool:
    """The kernel only ever uses the pointer `param` as a moved base: `p + row * stride` kept in a name or
    `p += …`, handed to a helper, or given as a buffer op's base (reading `p.dtype` aside). Its 32-bit offsets
    are then relative to that base, so the tensor's whole span is not what they address, and a size test of
    the whole tensor bounds nothing either way. `tl.load(p + offs)` is a full address, not a moved base."""
    parents = index_of(module).parents
    if any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == param
           for n in walk(kernel)):
        return True  # the pointer walks (`p += BLOCK * stride`): every address is from where it has got to
    moved = False
    for node in walk(kernel):
        if not (isinstance(node, ast.Name) and node.id == param) or isinstance(node.ctx, ast.Store):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            continue  # p.dtype.element_ty
        if not (isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add)):
            return False
        top = parent
        while isinstance(parents.get(top), ast.BinOp) and isinstance(parents[top].op, ast.Add):
            top = parents[top]
        holder = parents.get(top)
        if isinstance(holder, ast.keyword):
            if holder.arg != "ptr":
                return False
            moved = True
        elif isinstance(holder, (ast.Assign, ast.AnnAssign)):
            moved = True
        elif isinstance(holder, ast.Call) and top in holder.args:
            tail = call_tail(holder)
            if tail in POINTER_CALLS:
                return False  # a full address
            if tail in ADDRESS_ARGS and holder.args.index(top) != ADDRESS_ARGS[tail][0]:
                return False  # the 32-bit offsets themselves
            moved = True  # a buffer op's base, or a helper's
        else:
            return False
    return moved


def _addressed_from_moved_bases(review: ReviewInput, path: str, tree: ast.Module, scope: ast.AST,
                                tensor: str) -> bool:
    """Every kernel the function launches with `tensor` (resolved in this module or through its imports)
    moves that tensor's pointer before using it. False when a launch's kernel cannot be read."""
    launches = [c for c in walk(scope) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript)
                and any(ast.unparse(a) == tensor for a in [*c.args, *(k.value for k in c.keywords)])]
    if not launches:
        return False
    for launch in launches:
        kernels = review.defs_reached(path, tree, dotted_name(launch.func.value).rsplit(".", 1)[-1])
        if not kernels:
            return False
        for module, kernel in kernels:
            params = [p for p, arg in _bound(launch, kernel).items() if ast.unparse(arg) == tensor]
            if not params or not all(_moves_base(module, kernel, p) for p in params):
                return False
    return True


def _span_choices(tree: ast.Module, added: set[int]) -> Iterator[tuple[ast.Compare, ast.AST, dict[str, ast.Call],
                                                                        bool, int]]:
    """(comparison, gate, tensors sized by logical size and read by strides without a contiguity check,
    whether the 32-bit side admits a byte span of exactly 2^31 - 1, the line to report) for every such
    choice in `tree` touching `added`."""
    index = index_of(tree)
    helpers: set[str] | None = None
    per_scope: dict[ast.AST, tuple[dict[str, list[ast.AST]], dict[str, int], set[str]]] = {}
    for compare in index.of_type(ast.Compare):
        if len(compare.comparators) != 1 or not isinstance(compare.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE)):
            continue
        scope = index.scope_of(compare)
        if scope not in per_scope:
            assigned = _assignments(scope)
            per_scope[scope] = (assigned, _constants(tree, assigned), _strides_read(scope))
        assigned, consts, strided = per_scope[scope]
        sides = (compare.left, compare.comparators[0])
        bounds = [_const_int(s, consts) for s in sides]
        if not any(b in INT32_LIMITS for b in bounds):
            continue
        bound_left = bounds[0] in INT32_LIMITS
        size_side = sides[1] if bound_left else sides[0]
        tensors, in_bytes = _sized_tensors(size_side, assigned)
        if helpers is None:
            helpers = _contiguous_helpers(tree)
        loose = {t: call for t, call in tensors.items()
                 if t in strided and not _contiguity_established(t, scope, assigned, helpers)}
        if not loose:
            continue
        gate = _gate(compare, scope, index.parents)
        if gate is None or _ruled_out(compare, scope, index.parents):
            continue
        chain = [compare.lineno, *(c.lineno for c in loose.values())]  # the decision is the PR's, not only a use of it
        line = next((n for n in chain if n in added), 0)
        if line:
            bound = bounds[0] if bound_left else bounds[1]
            yield compare, gate, loose, in_bytes and _largest_admitted(compare.ops[0], bound, bound_left) == 2 ** 31 - 1, line


def _largest_admitted(op: ast.cmpop, bound: int, bound_left: bool) -> int:
    """The largest size the comparison sends down the 32-bit side: `size <= B` and `size > B` admit B,
    `size < B` and `size >= B` admit B - 1 (mirrored when the bound is on the left)."""
    inclusive = isinstance(op, (ast.GtE, ast.Lt) if bound_left else (ast.LtE, ast.Gt))
    return bound if inclusive else bound - 1


@detector("int32-index-overflow")
def int32_addressing_by_logical_size(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False, added_matching=ADDED):
        if not SIZE_TEXT.search(review.source.text(f.path) or ""):
            continue
        index = index_of(tree)
        for compare, gate, loose, top_byte, line in _span_choices(tree, f.added_lines):
            scope = index.scope_of(compare)
            loose = {t: c for t, c in loose.items() if not _addressed_from_moved_bases(review, f.path, tree, scope, t)}
            if not loose:
                continue
            names = ", ".join(f"`{t}`" for t in loose)
            size = next(iter(loose.values()))
            off_by_one = ""
            if top_byte:
                off_by_one = (" The 32-bit side also admits a span of exactly 2^31 - 1 bytes, whose last byte sits at "
                              "offset 2^31 - 2: a buffer descriptor whose record count is 2^31 - 2 reads it as zero.")
            evidence = [Evidence(f.path, c.lineno, one_line(ast.unparse(c), 100)) for c in loose.values()]
            evidence.append(Evidence(f.path, gate.lineno, one_line(ast.unparse(gate).splitlines()[0], 100)))
            yield Finding(
                rule="int32-index-overflow", path=f.path, line=line, severity="medium",
                problem=f"`{one_line(ast.unparse(compare), 100)}` chooses the addressing width from the logical size of "
                        f"{names} (`{one_line(ast.unparse(size), 100)}`), but the launch hands on their strides and nothing "
                        f"here makes or checks them contiguous: a strided view into a larger allocation is small by "
                        f"`numel()` and large by the offsets the kernel forms, so it gets 32-bit addressing over a "
                        f"span that does not fit.{off_by_one}",
                impact="Offsets past the 32-bit range wrap or pass the buffer's record count: the kernel reads zeros "
                       "or another block's bytes, with no error.",
                action="Author should size the decision by the largest offset the strides reach "
                       "(`sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1`, times the element size), "
                       "or make the tensor contiguous / check `is_contiguous()` first.",
                tag="inferred", evidence=evidence,
            )
