"""Triton / Gluon kernel rules (aiter T1–T6) decided from Python's `ast` over `@triton.jit`
kernels and the host code that launches them.

Every rule reports only what the PR introduced: a kernel construct whose lines the PR added
and whose text did not already exist in the same kernel on the base side (a re-indent or a
move is not new), or a launch site the PR added.
"""
from __future__ import annotations

import ast
import re
from typing import Callable, Iterable, Iterator

from ..git.diff import ChangedFile
from ..lang.index import index_of
from ..lang.python import call_tail, dotted_callee, dotted_name, quoted, touches, imported_module_path, walk
from ..lang.triton import (
    Kernel,
    argument,
    kernels,
    keyword,
    language_aliases,
    program_id_axes,
    tl_call,
)
from ..model import Evidence, Finding, record
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

CONFIG_DIR = lazy_re(r"(^|/)configs?/")


@record
class KernelFile:
    """A changed Python file's kernels, with the base side read lazily for the "new in this PR" test."""

    f: ChangedFile
    tree: ast.Module
    aliases: set[str]
    kernels: list[Kernel]
    review: ReviewInput
    added: set[int]
    _base_calls: dict[str, set[str]] | None = None

    @property
    def base_calls(self) -> dict[str, set[str]]:
        """kernel name → unparsed `tl.*` calls in that kernel on the base side."""
        if self._base_calls is None:
            self._base_calls = {}
            base_tree = None if self.f.is_new else self.review.source.python(self.f.old_path or self.f.path, "base")
            if base_tree is not None:
                base_aliases = language_aliases(base_tree)
                for func in kernels(base_tree):
                    self._base_calls.setdefault(func.name, set()).update(
                        ast.unparse(n) for n in walk(func)
                        if isinstance(n, ast.Call) and dotted_name(n.func).rpartition(".")[0] in base_aliases)
        return self._base_calls

    def is_new(self, kernel: Kernel, node: ast.AST) -> bool:
        """Added by the PR: on an added line and not the same text in the same kernel on base."""
        if not touches(node, self.added):
            return False
        return ast.unparse(node) not in self.base_calls.get(kernel.func.name, set())


# The kernels of the review in progress, shared by the T1/T2/T5 detectors, are kept on the review
# itself: a module-level table kept the last review (its source and every tree parsed in it) alive
# until the next review reached these detectors, so a `stats` worker held two reviews at once.
KERNEL_FILES_ATTRIBUTE = "_triton_kernel_files"


# the calls each rule reads, on an added line of a file worth building the kernels of
ACCESS_TOKENS = lazy_re(r"load|store|ptr|offs|mask|arange|program_id")
REDUCTION_TOKENS = lazy_re(r"\bload\(|\b(max|min|argmax|argmin)\(")
ACCUMULATOR_TOKENS = lazy_re(r"\bdot(_scaled)?\(|zeros\(|full\(|float16|bfloat16")


def _kernel_files(review: ReviewInput, token: re.Pattern[str]) -> Iterator[KernelFile]:
    """Changed files with Triton/Gluon kernels whose added lines match `token` (the calls a rule
    reads); each file's kernels are built once per review."""
    built: dict[str, KernelFile | None] = review.__dict__.setdefault(KERNEL_FILES_ATTRIBUTE, {})
    for f in review.changed("python", include_tests=False):
        if not f.added or review.facts.is_tooling(f.path) or not any(token.search(t) for _, t in f.added):
            continue
        if f.path not in built:
            built[f.path] = _kernel_file(review, f)
        kf = built[f.path]
        if kf is not None:
            yield kf


def _kernel_file(review: ReviewInput, f: ChangedFile) -> KernelFile | None:
    text = review.source.text(f.path) or ""
    if "jit" not in text:
        return None
    tree = review.source.python(f.path)
    if tree is None:
        return None
    found = kernels(tree)
    if not found:
        return None
    aliases = language_aliases(tree)
    return KernelFile(f, tree, aliases, [Kernel.build(k, aliases) for k in found], review, f.added_lines)


# ---------------------------------------------------------------------------------------------
# T1 — tl.load / tl.store with no mask on a tiled dimension

CLAMPS = ("minimum", "where")
GUARD_NAME = lazy_re(r"EVEN|DIVISIBLE|ALIGN|NO_?MASK|MASK|PAD|FULL|TAIL|BOUND|CHECK|SAFE", re.IGNORECASE)


def _is_arange(kernel: Kernel):
    return lambda n: tl_call(n, kernel.aliases, "arange")


def _block_pointer(kernel: Kernel):
    return lambda n: tl_call(n, kernel.aliases, "make_block_ptr", "advance", "make_tensor_descriptor")


def _clamped(kernel: Kernel):
    """`tl.minimum(offs, N - 1)`, `offs % N`, `tl.where(m, offs, 0)`: a clamp applied to the vector
    offsets themselves (a `%` on the program id is a swizzle, not a clamp)."""
    is_arange = _is_arange(kernel)

    def vector(e: ast.AST) -> bool:
        return kernel.reaches(e, is_arange, through_loads=False)

    def pred(n: ast.AST) -> bool:
        if tl_call(n, kernel.aliases, *CLAMPS) and isinstance(n, ast.Call):
            return any(vector(a) for a in n.args)
        return isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and vector(n.left)
    return pred


def _mentions(kernel: Kernel, expr: ast.AST, name: str) -> bool:
    return kernel.reaches(expr, lambda n: (isinstance(n, ast.Name) and n.id == name)
                          or (isinstance(n, ast.Constant) and str(n.value) == name), through_loads=False)


def _reachable(kernel: Kernel, expr: ast.AST) -> Iterator[ast.AST]:
    """Every expression node `expr` is computed from, through local assignments, not through loads."""
    return kernel.reached(expr, opaque=kernel.is_load)


@record
class Tile:
    extent: str  # the block size the tile spans (`BLOCK_K`)
    how: str  # how the tile is stepped (`k * BLOCK_K`, `pid * BLOCK`, `a_ptrs += BLOCK_K * …`)
    offset: str  # the name holding the tiled offsets, when there is one
    full_tiles_only: bool = False  # the loop visits only whole tiles (`range(0, K // BLOCK_K)`)


def _tile(kernel: Kernel, ptr: ast.expr) -> Tile | None:
    """The tiled dimension of a pointer: an `arange(0, E)` shifted by a program id or loop index
    scaled by E, or a pointer advanced by E inside a loop. None when the access covers exactly
    `[0, E)` of a dimension (a constexpr-sized axis) or is not tiled at all."""
    is_arange = _is_arange(kernel)
    assigned_name = {id(v): name for name, values in kernel.defs.items() for v in values}
    for node in _reachable(kernel, ptr):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))):
            continue
        for side, other in ((node.left, node.right), (node.right, node.left)):
            extents = {quoted(a.args[1]) for a in _reachable(kernel, side)
                       if is_arange(a) and isinstance(a, ast.Call) and len(a.args) >= 2}
            if not extents or kernel.reaches(other, is_arange, through_loads=False):
                continue
            for extent in extents:
                step = _tile_step(kernel, other, extent)
                if step is not None:
                    how, full = step
                    return Tile(extent, how, assigned_name.get(id(node), ""), full)
    # a pointer advanced by a block inside a loop: `a_ptrs += BLOCK_K * stride_ak`
    for node in _reachable(kernel, ptr):
        if isinstance(node, ast.Name) and node.id in kernel.augmented_in_loop:
            aranges = {name: quoted(v.args[1]) for name, values in kernel.defs.items() for v in values
                       if is_arange(v) and isinstance(v, ast.Call) and len(v.args) >= 2}
            used = {n.id for n in _reachable(kernel, ptr) if isinstance(n, ast.Name)}
            for value in kernel.augmented_in_loop[node.id]:
                for name, extent in aranges.items():
                    if name in used and _mentions(kernel, value, extent):
                        loop = _enclosing_loop(kernel, value)
                        full = loop is not None and _loop_full_tiles(loop, extent)
                        return Tile(extent, f"`{node.id} += {quoted(value, 50)}` each iteration", name, full)
    return None


def _tile_step(kernel: Kernel, other: ast.expr, extent: str) -> tuple[str, bool] | None:
    """How `other` steps through tiles of `extent`: a program id or loop index times the extent,
    or a loop index whose `range` steps by it. Returns (description, full tiles only)."""
    pid = lambda n: tl_call(n, kernel.aliases, "program_id")
    for n in _reachable(kernel, other):
        if isinstance(n, ast.Name) and n.id in kernel.loop_vars:
            loop = kernel.loop_vars[n.id]
            if _mentions(kernel, loop.iter, extent) or _mentions(kernel, other, extent):
                return f"loop index `{n.id}`", _loop_full_tiles(loop, extent)
    if kernel.reaches(other, pid, through_loads=False) and _mentions(kernel, other, extent):
        return f"`{quoted(other, 50)}`", False
    return None


def _loop_full_tiles(loop: ast.For, extent: str) -> bool:
    """`range(0, K // BLOCK_K)` / `range(0, K - BLOCK_K + 1, BLOCK_K)`: only whole tiles are visited."""
    if not (isinstance(loop.iter, ast.Call) and dotted_name(loop.iter.func) in {"range", "tl.range", "tl.static_range"}):
        return False
    bounds = loop.iter.args[1:2] if len(loop.iter.args) >= 2 else loop.iter.args[:1]
    for bound in bounds:
        text = ast.unparse(bound)
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.FloorDiv) for n in walk(bound)):
            return True
        if re.search(rf"-\s*{re.escape(extent)}\b", text):
            return True
    return False


def _enclosing_loop(kernel: Kernel, node: ast.AST) -> ast.For | None:
    for a in kernel.ancestors(node):
        if isinstance(a, ast.For):
            return a
    return None


def _guarded(kernel: Kernel, call: ast.Call, ptr_text: str, extent: str) -> bool:
    """An enclosing `if` that makes the access safe: a divisibility/`EVEN_*` flag, a bound
    comparison on the tile, or a sibling branch that does the masked version of the same access."""
    child: ast.AST = call
    for a in kernel.ancestors(call):
        if isinstance(a, (ast.If, ast.IfExp, ast.While)):
            test = a.test
            names = {n.id for n in walk(test) if isinstance(n, ast.Name)} | \
                    {n.attr for n in walk(test) if isinstance(n, ast.Attribute)}
            if any(GUARD_NAME.search(n) for n in names):
                return True
            if any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for n in walk(test)
                   if isinstance(n, ast.Compare) for op in n.ops) and _mentions(kernel, test, extent):
                return True
            if isinstance(a, ast.If):
                sibling = a.orelse if child in a.body or any(child is s for s in a.body) else a.body
                for stmt in sibling:
                    for n in walk(stmt):
                        if tl_call(n, kernel.aliases, "load", "store") and isinstance(n, ast.Call) \
                                and n.args and ast.unparse(n.args[0]) == ptr_text and _mask_of(n) is not None:
                            return True
        child = a
    return False


def _mask_of(call: ast.Call) -> ast.expr | None:
    is_store = dotted_name(call.func).endswith("store")
    mask = argument(call, 2 if is_store else 1, "mask")
    if isinstance(mask, ast.Constant) and mask.value is None:
        return None
    return mask


ASSERT_CALLS = ("static_assert", "device_assert")


def _aligned_elsewhere(tree: ast.Module, kernel: Kernel, extent: str) -> bool:
    """`assert X % BLOCK == 0` / `tl.static_assert(...)` anywhere in the file, or `tl.multiple_of`
    on the tile in the kernel: the author established the dimension is a multiple."""
    for node in index_of(tree).of_type((ast.Assert, ast.Call)):
        test = None
        if isinstance(node, ast.Assert):
            test = node.test
        # the callee's last name first: a plain dotted name ends so only when its last part does
        elif call_tail(node).endswith(ASSERT_CALLS) and dotted_name(node.func).endswith(ASSERT_CALLS) and node.args:
            test = node.args[0]
        if test is None:
            continue
        for n in walk(test):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) and ast.unparse(n.right).endswith(extent):
                return True
    return False


def _dimension(kernel: Kernel, tile: Tile) -> str | None:
    """The dimension the tile runs along, read from a mask elsewhere in the kernel that compares
    the same offsets (`offs_k < K`) — proof that the kernel itself treats the dimension as ragged."""
    if not tile.offset:
        return None
    for n in walk(kernel.func):
        if isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.Lt, ast.LtE)):
            left = n.left
            while isinstance(left, ast.Subscript):
                left = left.value
            if isinstance(left, ast.Name) and left.id == tile.offset:
                return quoted(n.comparators[0], 40)
    return None


@detector("unmasked-triton-access")
def unmasked_triton_access(review: ReviewInput) -> Iterable[Finding]:
    for kf in _kernel_files(review, ACCESS_TOKENS):
        for kernel in kf.kernels:
            for call in kernel.calls("load", "store"):
                if not kf.is_new(kernel, call):
                    continue
                finding = _t1(kf, kernel, call)
                if finding is not None:
                    yield finding


def _t1(kf: KernelFile, kernel: Kernel, call: ast.Call) -> Finding | None:
    if _mask_of(call) is not None or keyword(call, "boundary_check") is not None:
        return None
    ptr = argument(call, 0, "pointer")
    if ptr is None:
        return None
    if kernel.reaches(ptr, _block_pointer(kernel)):
        return None  # block pointers / descriptors: bounds are boundary_check's business
    if not kernel.reaches(ptr, _is_arange(kernel), through_loads=False):
        return None  # a scalar access: one element per program, bounded by the grid
    if kernel.reaches(ptr, _clamped(kernel), through_loads=False):
        return None  # offsets clamped with tl.minimum / % / tl.where
    tile = _tile(kernel, ptr)
    if tile is None or tile.full_tiles_only:
        return None  # covers exactly a constexpr-sized axis, or only whole tiles are visited
    ptr_text = ast.unparse(ptr)
    if _guarded(kernel, call, ptr_text, tile.extent) or _aligned_elsewhere(kf.tree, kernel, tile.extent):
        return None
    dim = _dimension(kernel, tile)
    if dim is None:
        # Nothing in the kernel says the dimension is ragged: it may be padded or a multiple by
        # construction (a workspace of whole tiles). A mask elsewhere on the same offsets is the
        # evidence that makes the unmasked access inconsistent.
        return None
    op = "store" if dotted_name(call.func).endswith("store") else "load"
    what = "writes" if op == "store" else "reads"
    along = f"`{dim}`" if dim else f"the dimension `{tile.extent}` tiles"
    problem = (f"`tl.{op}({quoted(ptr, 60)})` in kernel `{kernel.func.name}` ({kf.f.path}:{call.lineno}) has no "
               f"`mask=`, yet its offsets step through {along} in `{tile.extent}`-wide tiles ({tile.how}).")
    impact = (f"Triton does not bounds-check: when {along} is not a multiple of `{tile.extent}`, the last tile "
              f"{what} up to `{tile.extent}` - 1 elements past the end of the tensor"
              + (" — silent garbage in the result." if op == "load" else ", corrupting a neighbouring allocation."))
    action = (f"Author must mask the access (e.g. `mask={tile.offset or 'offs'} < {dim or 'N'}`"
              + (", other=0.0" if op == "load" else "") + ") or assert that the dimension is a multiple of "
              f"`{tile.extent}` where the kernel is launched.")
    trigger = (f"{dim} % {tile.extent} != 0 (e.g. {dim} = {tile.extent} + 1): the kernel masks `{tile.offset} < {dim}` "
               f"elsewhere but this {op} is unmasked, so the last tile {what} past the end")
    return Finding(
        rule="unmasked-triton-access", path=kf.f.path, line=call.lineno, end_line=call.end_lineno,
        problem=problem, impact=impact, action=action, trigger=trigger, tag="verified",
        evidence=[Evidence(kf.f.path, call.lineno, quoted(call, 120))],
    )


# ---------------------------------------------------------------------------------------------
# T2 — masked load without other= feeding a max/min reduction

REDUCTIONS = {"max": "max", "min": "min", "argmax": "max", "argmin": "min"}


@detector("masked-load-without-other")
def masked_load_without_other(review: ReviewInput) -> Iterable[Finding]:
    for kf in _kernel_files(review, REDUCTION_TOKENS):
        for kernel in kf.kernels:
            for call in kernel.calls("load"):
                if not kf.is_new(kernel, call) or _mask_of(call) is None:
                    continue
                if argument(call, 2, "other") is not None:
                    continue
                target = _bound_name(kernel, call)
                if target is None:
                    continue
                hit = _reduction_of(kernel, target)
                if hit is None:
                    continue
                red, kind = hit
                fill = "-inf" if kind == "max" else "+inf"
                yield Finding(
                    rule="masked-load-without-other", path=kf.f.path, line=call.lineno, end_line=call.end_lineno,
                    problem=(f"`{target}` is loaded with `mask=` but no `other=` in kernel `{kernel.func.name}` "
                             f"({kf.f.path}:{call.lineno}) and feeds the {kind}-reduction `{quoted(red, 60)}` "
                             f"(line {red.lineno})."),
                    impact=(f"Masked-off lanes hold an unspecified value (0 in practice); in a {kind}-reduction a "
                            f"padded lane can win — a 0 beats every value when the live lanes are all "
                            f"{'negative' if kind == 'max' else 'positive'}, so the tail tile returns a wrong {kind}."),
                    action=f"Author must pass `other=float('{fill}')` to the load (or `tl.where` the padded lanes "
                           f"to {fill}) before the reduction.",
                    trigger=(f"the tail tile with every live value {'< 0' if kind == 'max' else '> 0'}: "
                             f"`{quoted(red, 40)}` returns 0 instead of the true {kind}"),
                    evidence=[Evidence(kf.f.path, call.lineno, quoted(call, 120)),
                              Evidence(kf.f.path, red.lineno, quoted(red, 120))],
                )


def _bound_name(kernel: Kernel, call: ast.Call) -> str | None:
    parent = kernel.parents.get(call)
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        return parent.targets[0].id
    if isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
        return parent.target.id
    return None


def _reduction_of(kernel: Kernel, name: str) -> tuple[ast.Call, str] | None:
    where = lambda n: tl_call(n, kernel.aliases, "where", "maximum", "minimum")
    for call in kernel.calls(*REDUCTIONS):
        kind = REDUCTIONS[dotted_name(call.func).rpartition(".")[2]]
        value = argument(call, 0, "input")
        if value is None:
            continue
        if not _flows_into(kernel, value, name, stop=where):
            continue
        if kind == "max" and kernel.reaches(value, lambda n: tl_call(n, kernel.aliases, "abs")
                                            or dotted_name(getattr(n, "func", n)).endswith(".abs"),
                                            through_loads=False):
            continue  # max of |x|: a 0 lane can never beat a live non-negative value
        return call, kind
    return None


def _flows_into(kernel: Kernel, expr: ast.AST, name: str, stop: Callable[[ast.AST], bool]) -> bool:
    """Whether the value `name` held reaches `expr` through assignments that can run before it: a name is
    followed to a definition above the use, or to one in a loop around both (carried to the next
    iteration); a load is opaque and `stop` prunes. Kernel.reaches ignores statement order, so a name
    redefined further down (liger's X_block, rebound from weight_block in a later pass) would feed a
    reduction it never reaches."""
    def loops(node: ast.AST) -> set[ast.AST]:
        return {a for a in kernel.ancestors(node) if isinstance(a, (ast.For, ast.While))}

    def anchor_of(value: ast.AST) -> ast.AST:
        return value.right if isinstance(value, ast.BinOp) and not hasattr(value, "lineno") else value

    def dominates(value: ast.AST, at: ast.AST) -> bool:
        """The definition runs on every path to `at` (above it, in a block around it, no branch between)."""
        around = set(kernel.ancestors(at))
        for node in kernel.ancestors(value):
            if node in around:
                return True
            if isinstance(node, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.IfExp, ast.BoolOp)):
                return False
        return False

    def carried(value: ast.AST, at: ast.AST, name: str) -> bool:
        """A definition below the use reaches it in the next iteration of a loop around both, unless a
        definition above the use inside that loop always runs first."""
        common = loops(value) & loops(at)
        return bool(common) and not any(
            anchor_of(other).lineno < at.lineno and loops(anchor_of(other)) >= common and dominates(anchor_of(other), at)
            for other in kernel.defs.get(name, ()) if other is not value)

    seen: set[int] = set()
    todo: list[tuple[ast.AST, ast.AST]] = [(expr, expr)]  # (node, the statement-level node it is used at)
    while todo:
        node, at = todo.pop()
        if stop(node) or kernel.is_load(node):
            continue
        if isinstance(node, ast.Name):
            if node.id == name:
                return True
            for value in kernel.defs.get(node.id, ()):
                anchor = anchor_of(value)
                if id(value) in seen:
                    continue
                if anchor.lineno < at.lineno or carried(anchor, at, node.id):
                    seen.add(id(value))
                    todo.append((value, anchor))
            continue
        todo.extend((child, at) for child in ast.iter_child_nodes(node))
    return False


# ---------------------------------------------------------------------------------------------
# T5 — tl.dot accumulating in fp16/bf16

LOW_PRECISION = {"float16": "fp16", "bfloat16": "bf16", "fp16": "fp16", "bf16": "bf16"}


def _low_precision(kernel: Kernel, expr: ast.expr | None, depth: int = 0) -> str | None:
    if expr is None or depth > 4:
        return None
    name = dotted_name(expr)
    head, _, tail = name.rpartition(".")
    if head in kernel.aliases and tail in LOW_PRECISION:
        return LOW_PRECISION[tail]
    if isinstance(expr, ast.Name) and expr.id not in kernel.constexprs:
        values = kernel.defs.get(expr.id, [])
        kinds = {_low_precision(kernel, v, depth + 1) for v in values}
        if len(values) >= 1 and len(kinds) == 1:
            return kinds.pop()
    return None


def _accumulators(kernel: Kernel) -> dict[str, tuple[str, ast.Call]]:
    """name → (dtype, init call) for `acc = tl.zeros(..., dtype=tl.bfloat16)`-style inits."""
    out: dict[str, tuple[str, ast.Call]] = {}
    for name, values in kernel.defs.items():
        for v in values:
            if tl_call(v, kernel.aliases, "zeros", "full") and isinstance(v, ast.Call):
                kind = _low_precision(kernel, keyword(v, "dtype") or (v.args[-1] if len(v.args) >= 2 else None))
                if kind:
                    out[name] = (kind, v)
    return out


@detector("accumulator-precision")
def accumulator_precision(review: ReviewInput) -> Iterable[Finding]:
    for kf in _kernel_files(review, ACCUMULATOR_TOKENS):
        for kernel in kf.kernels:
            accs = _accumulators(kernel)
            for dot in kernel.calls("dot", "dot_scaled"):
                if _enclosing_loop(kernel, dot) is None:
                    continue  # one product, not a running sum
                acc_name, kind, init = _dot_accumulator(kernel, dot, accs)
                if kind is None:
                    continue
                if not (kf.is_new(kernel, dot) or (init is not None and kf.is_new(kernel, init))):
                    continue
                where = f"`{acc_name}`" if acc_name else "the dot's output"
                yield Finding(
                    rule="accumulator-precision", path=kf.f.path, line=dot.lineno, end_line=dot.end_lineno,
                    problem=(f"`{quoted(dot, 70)}` in kernel `{kernel.func.name}` ({kf.f.path}:{dot.lineno}) "
                             f"accumulates into {where} in {kind} inside a loop"
                             + (f" (initialised at line {init.lineno})." if init is not None else ".")),
                    impact=(f"{kind} keeps {8 if kind == 'bf16' else 11} significant bits: once the running sum is "
                            f"about 2^{8 if kind == 'bf16' else 11} times a partial product, each new K-tile's "
                            "contribution is rounded away, so long-K results drift from the fp32 reference."),
                    action="Author must accumulate in `tl.float32` (`tl.zeros(..., dtype=tl.float32)`, no fp16/bf16 "
                           "`out_dtype`) and cast once at the store.",
                    trigger=(f"a K loop of a few hundred tiles with same-sign partial products: the {kind} running "
                             f"sum stops growing once it reaches ~2^{8 if kind == 'bf16' else 11}× one tile's product"),
                    evidence=[Evidence(kf.f.path, dot.lineno, quoted(dot, 120))]
                    + ([Evidence(kf.f.path, init.lineno, quoted(init, 120))] if init is not None else []),
                )


def _dot_accumulator(kernel: Kernel, dot: ast.Call, accs: dict[str, tuple[str, ast.Call]]
                     ) -> tuple[str, str | None, ast.Call | None]:
    out_kind = _low_precision(kernel, keyword(dot, "out_dtype"))
    acc = argument(dot, 2, "acc")
    parent = kernel.parents.get(dot)
    name = ""
    if isinstance(acc, ast.Name):
        name = acc.id
    elif isinstance(parent, ast.AugAssign) and isinstance(parent.target, ast.Name):
        name = parent.target.id
    elif isinstance(parent, ast.BinOp) and isinstance(kernel.parents.get(parent), ast.Assign):
        assign = kernel.parents[parent]
        targets = [t.id for t in assign.targets if isinstance(t, ast.Name)]  # type: ignore[attr-defined]
        operands = {n.id for n in (parent.left, parent.right) if isinstance(n, ast.Name)}
        name = next((t for t in targets if t in operands), "")
    if name in accs:
        kind, init = accs[name]
        return name, kind, init
    if out_kind and name:
        return name, out_kind, None
    return name, None, None


# ---------------------------------------------------------------------------------------------
# T6 — host grid rank vs the program_id axes the kernel reads

@detector("grid-program-id-mismatch")
def grid_program_id_mismatch(review: ReviewInput) -> Iterable[Finding]:
    resolver = _KernelResolver(review)
    reported: set[tuple[str, int]] = set()
    for f, tree in review.python_files(include_tests=False):
        if review.facts.is_tooling(f.path):
            continue
        if not any("](" in text or "program_id" in text or "grid" in text for _, text in f.added):
            continue  # no launch, grid or program id on an added line
        added = f.added_lines
        parents = index_of(tree).parents
        for call, kname, grid in _launches(tree):
            kernel, kpath = resolver.resolve(f.path, tree, kname)
            if kernel is None:
                continue
            changed_kernel = resolver.program_id_changed(kpath, kernel)
            if not (touches(call, added) or changed_kernel):
                continue
            dims = _grid_dims(grid, call, tree, parents)
            if dims is None:
                continue
            finding = _t6(f.path, call, kname, dims, kernel, kpath)
            if finding is not None and (f.path, call.lineno) not in reported:
                reported.add((f.path, call.lineno))
                yield finding


def _launches(tree: ast.Module) -> Iterator[tuple[ast.Call, str, ast.expr]]:
    """`kernel[grid](...)` calls: (call, kernel name, grid expression)."""
    for node in index_of(tree).of_type(ast.Call):
        if isinstance(node.func, ast.Subscript):
            name = dotted_name(node.func.value)
            if name:
                grid = node.func.slice
                yield node, name.rsplit(".", 1)[-1], grid


def _grid_dims(grid: ast.expr, call: ast.Call, tree: ast.Module, parents: dict) -> list[ast.expr] | None:
    """The grid's per-axis expressions when they are statically visible."""
    expr: ast.expr | None = grid
    for _ in range(3):
        if isinstance(expr, ast.Tuple):
            return list(expr.elts)
        if isinstance(expr, ast.Lambda):
            expr = expr.body
            continue
        if isinstance(expr, ast.Name):
            expr = _last_binding(expr.id, call, tree, parents)
            continue
        return None
    return list(expr.elts) if isinstance(expr, ast.Tuple) else None


def _last_binding(name: str, call: ast.Call, tree: ast.Module, parents: dict) -> ast.expr | None:
    """The value last assigned to `name` before `call` in its function (or module), or the single
    returned expression of a same-named grid function. None when the grid's rank depends on which
    assignment ran (tuples of different lengths on different branches)."""
    scope: ast.AST = tree
    node: ast.AST = call
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = node
            break
    assigned = [(n.lineno, n.value) for n in walk(scope) if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    # `def grid(meta): return (...)` written in the launching function, once per launch (fla writes one
    # before each of a function's launches): the last one before the call is the one in force
    defined = [(n.lineno, returns[0]) for n in walk(scope) if n is not scope and isinstance(n, ast.FunctionDef)
               and n.name == name and len(returns := [r.value for r in walk(n) if isinstance(r, ast.Return)
                                                      and r.value is not None]) == 1]
    if defined and scope is not tree:
        before = [(line, v) for line, v in assigned + defined if line < call.lineno]
        if not before:
            return None
        value = max(before, key=lambda lv: lv[0])[1]
        # in force only when bound in a block that encloses the launch (not on one branch of an if)
        stmt = parents.get(value)
        while stmt is not None and not isinstance(stmt, (ast.Assign, ast.FunctionDef)):
            stmt = parents.get(stmt)
        ancestors, node = set(), call
        while node in parents:
            node = parents[node]
            ancestors.add(node)
        return value if stmt is not None and parents.get(stmt) in ancestors else None
    if assigned:
        ranks = {len(v.elts) if isinstance(v, ast.Tuple) else
                 len(v.body.elts) if isinstance(v, ast.Lambda) and isinstance(v.body, ast.Tuple) else -1
                 for _, v in assigned}
        if len(ranks) > 1:
            return None
        before = [(line, v) for line, v in assigned if line < call.lineno]
        return max(before, key=lambda lv: lv[0])[1] if before else None
    for n in index_of(tree).of_type(ast.FunctionDef):
        if n.name == name:
            returns = [r.value for r in walk(n) if isinstance(r, ast.Return) and r.value is not None]
            if len(returns) == 1:
                return returns[0]
    return None


def _axis_behind_constexpr(kernel: Kernel, axis: int) -> bool:
    """Every `program_id(axis)` of the kernel sits under an `if` on a constexpr parameter (fla's
    `merge_fwd_bwd_kernel` reads axis 2 only `if INTRACARD_MODE:`, and its CP-mode launches are 2-D): which
    grid rank the kernel expects depends on a compile-time switch the launch sets, not on the kernel alone."""
    reads = [c for c in kernel.calls("program_id") if isinstance(a := argument(c, 0, "axis"), ast.Constant) and a.value == axis]
    def guarded(node: ast.AST) -> bool:
        while node in kernel.parents:
            node = kernel.parents[node]
            if isinstance(node, ast.If) and any(isinstance(n, ast.Name) and n.id in kernel.constexprs for n in walk(node.test)):
                return True
        return False
    return bool(reads) and all(guarded(c) for c in reads)


def _t6(path: str, call: ast.Call, kname: str, dims: list[ast.expr], kernel: Kernel, kpath: str) -> Finding | None:
    axes = program_id_axes(kernel)
    if -1 in axes or not axes:
        return None
    rank = len(dims)
    beyond = sorted(a for a in axes if a >= rank and not _axis_behind_constexpr(kernel, a))
    grid_text = "(" + ", ".join(quoted(d, 40) for d in dims) + ("," if rank == 1 else "") + ")"
    if beyond:
        axis = beyond[0]
        return Finding(
            rule="grid-program-id-mismatch", path=path, line=call.lineno, end_line=call.end_lineno,
            problem=(f"`{kname}` is launched with the {rank}-D grid {grid_text} at {path}:{call.lineno}, but the "
                     f"kernel reads `program_id({axis})` ({kpath}:{axes[axis]})."),
            impact=(f"Axis {axis} of a {rank}-D grid has extent 1, so `program_id({axis})` is always 0: only the "
                    f"first block along that axis is computed and the rest of the output is never written."),
            action=f"Author must add axis {axis} to the grid (or fold it into an existing axis in the kernel).",
            trigger=f"any launch whose work along kernel axis {axis} needs more than one program",
            evidence=[Evidence(path, call.lineno, quoted(call, 120)), Evidence(kpath, axes[axis], f"tl.program_id({axis})")],
        )
    unused = [i for i, d in enumerate(dims) if i not in axes and not (isinstance(d, ast.Constant) and d.value == 1)]
    if unused:
        axis = unused[0]
        return Finding(
            rule="grid-program-id-mismatch", path=path, line=call.lineno, end_line=call.end_lineno, severity="medium",
            problem=(f"`{kname}` is launched with the grid {grid_text} at {path}:{call.lineno}, but the kernel never "
                     f"reads `program_id({axis})` (it reads axes {sorted(axes)}; {kpath})."),
            impact=(f"Every program along axis {axis} (extent `{quoted(dims[axis], 40)}`) repeats the same tile: "
                    "wasted launches, and duplicated atomics or racing stores when the kernel accumulates."),
            action=f"Author must drop axis {axis} from the grid or use `program_id({axis})` in the kernel.",
            trigger=None, tag="inferred",
            evidence=[Evidence(path, call.lineno, quoted(call, 120))],
        )
    return None


class _KernelResolver:
    """Finds a launched kernel's definition: same module, or a first-party `from x import k`."""

    def __init__(self, review: ReviewInput) -> None:
        self.review = review
        self.cache: dict[str, ast.Module | None] = {}
        self.changed = {f.path: f for f in review.changed("python")}

    def module(self, path: str) -> ast.Module | None:
        if path not in self.cache:
            self.cache[path] = self.review.source.python(path) if self.review.source.exists(path) else None
        return self.cache[path]

    def resolve(self, path: str, tree: ast.Module, name: str) -> tuple[Kernel | None, str]:
        for func in kernels(tree):
            if func.name == name:
                return Kernel.build(func, language_aliases(tree)), path
        for node in index_of(tree).of_type(ast.ImportFrom):
            if node.module or node.level:
                for alias in node.names:
                    if (alias.asname or alias.name) == name:
                        target = imported_module_path(path, node)
                        for candidate in (f"{target}.py", f"{target}/__init__.py"):
                            mod = self.module(candidate)
                            if mod is None:
                                continue
                            for func in kernels(mod):
                                if func.name == alias.name:
                                    return Kernel.build(func, language_aliases(mod)), candidate
        return None, ""

    def program_id_changed(self, path: str, kernel: Kernel) -> bool:
        f = self.changed.get(path)
        if f is None:
            return False
        added = f.added_lines
        return any(touches(c, added) for c in kernel.calls("program_id"))


# ---------------------------------------------------------------------------------------------
# T3 / T4 — launch knobs set to literals

T3_KNOBS = ("num_warps", "num_stages", "num_ctas")
T4_KNOBS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
ARCH_TEST = lazy_re(r"gfx|arch|cdna|rdna|mi3\d\d|is_fp8_fnuz|fnuz", re.IGNORECASE)


@record
class KnobSite:
    node: ast.AST
    function: str
    knobs: list[tuple[str, str]]  # (knob, literal)


def _literal(value: ast.expr) -> str | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
        return repr(value.value)
    if isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant):
        return ast.unparse(value)
    return None


CONFIG_NAME = lazy_re(r"config|cfg|tune", re.IGNORECASE)


def _imports_triton(tree: ast.Module) -> bool:
    for node in index_of(tree).of_type((ast.Import, ast.ImportFrom)):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
            return True
    return False


def _knob_sites(tree: ast.Module, knobs: tuple[str, ...]) -> Iterator[KnobSite]:
    """Literal launch knobs on host code: kwargs of a launch (or any call) and entries of a
    launch-options dict. Skipped: `triton.Config` candidates (an autotune table), dicts built in a
    config function or bound to a `*config*` name (the op's config table), and `tl.range(...,
    num_stages=)` inside kernels (software pipelining, not a launch)."""
    parents = index_of(tree).parents
    in_kernel = {id(n) for k in kernels(tree) for n in walk(k)}
    for node in index_of(tree).of_type((ast.Call, ast.Dict)):  # nothing else holds a knob
        if id(node) in in_kernel:
            continue
        pairs: list[tuple[str, ast.expr]] = []
        if isinstance(node, ast.Call):
            if dotted_callee(node, ("Config",)):  # `Config(…)`, `triton.Config(…)`
                continue  # a triton.Config entry: a candidate of the tuned/autotuned table
            pairs = [(kw.arg, kw.value) for kw in node.keywords if kw.arg in knobs]
        elif isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value in knobs]
            owner = parents.get(node)
            targets = owner.targets if isinstance(owner, ast.Assign) else [getattr(owner, "target", None)]
            if any(CONFIG_NAME.search(dotted_name(t) if t is not None else "") for t in targets) \
                    or CONFIG_NAME.search(_function_of(node, parents).rsplit(".", 1)[-1]):
                continue
        literal = [(k, lit) for k, v in pairs if (lit := _literal(v)) is not None
                   and not (k == "waves_per_eu" and lit == "0")]  # 0 = no occupancy hint: the default
        if literal:
            yield KnobSite(node, _function_of(node, parents), literal)


def _function_of(node: ast.AST, parents: dict) -> str:
    names = []
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
    return ".".join(reversed(names))


def _arch_names(tree: ast.Module) -> set[str]:
    """Names assigned from an arch test (`tuned = get_arch() == "gfx950"`)."""
    out = set()
    for node in index_of(tree).of_type(ast.Assign):
        if ARCH_TEST.search(ast.unparse(node.value)):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _arch_conditional(node: ast.AST, parents: dict, arch_names: set[str]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.If, ast.IfExp)):
            test = node.test
            if ARCH_TEST.search(ast.unparse(test)) or any(
                    isinstance(n, ast.Name) and n.id in arch_names for n in walk(test)):
                return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ARCH_TEST.search(node.name):
            return True
    return False


EVIDENCE_COMMENT = lazy_re(r"#.*(tuned|measured|benchmark|sweep|\d+(\.\d+)?\s*(x|%|us|ms)\b)", re.IGNORECASE)


def _justified(lines: list[str], node: ast.AST) -> bool:
    """A comment within the six lines above the knob (or on its lines) that reports tuning evidence."""
    start = max(0, getattr(node, "lineno", 1) - 7)
    end = getattr(node, "end_lineno", None) or getattr(node, "lineno", 1)
    return any(EVIDENCE_COMMENT.search(line) for line in lines[start:end])


# a Triton backend for a device without warps or a CUDA/HIP pipeline (triton-ascend on Ascend NPU: fla's
# `backends/triton_ascend/`, liger's `backends/_ascend/`): num_warps/num_stages there are no GPU tuning question
NON_GPU_BACKEND = lazy_re(r"(^|/)_?(triton_)?(ascend|npu)(_\w+)?/", re.IGNORECASE)

MAX_KNOB_FILES = 3  # one question per file, at most this many per PR; the rest are listed on the last


def _knob_findings(review: ReviewInput, rule: str, knobs: tuple[str, ...]) -> Iterable[Finding]:
    found = list(_knob_findings_per_file(review, rule, knobs))
    if len(found) > MAX_KNOB_FILES:
        rest = found[MAX_KNOB_FILES - 1:]
        last = rest[0]
        last.problem += f" The same question applies to {len(rest) - 1} more file(s): " + ", ".join(
            f"{x.path}:{x.line}" for x in rest[1:6]) + ("…" if len(rest) > 6 else "") + "."
        last.evidence += [Evidence(x.path, x.line, "") for x in rest[1:]]
        found = found[:MAX_KNOB_FILES - 1] + [last]
    yield from found


def _knob_findings_per_file(review: ReviewInput, rule: str, knobs: tuple[str, ...]) -> Iterable[Finding]:
    token = re.compile(r"\b(" + "|".join(knobs) + r")\b")
    resolver = _KernelResolver(review)
    for f in review.changed("python", include_tests=False):
        if not f.added or review.facts.is_tooling(f.path) or CONFIG_DIR.search(f.path) \
                or NON_GPU_BACKEND.search(f.path) or not any(token.search(t) for _, t in f.added):
            continue
        tree = review.source.python(f.path)
        if tree is None or not _imports_triton(tree):
            continue
        added = f.added_lines
        arch_names = _arch_names(tree)
        base_tree = review.base_python(f)
        base: dict[tuple[str, str], set[str]] = {}
        if base_tree is not None:
            for site in _knob_sites(base_tree, knobs):
                for knob, lit in site.knobs:
                    base.setdefault((site.function, knob), set()).add(lit)
        parents = index_of(tree).parents
        lines = (review.source.text(f.path) or "").splitlines()
        sites = []
        why: Evidence | None = None
        for site in _knob_sites(tree, knobs):
            if not touches(site.node, added):
                continue
            if _justified(lines, site.node):
                continue  # a comment beside the knob gives the measurement the question asks for
            if _arch_conditional(site.node, parents, arch_names):
                continue  # set per arch: tuned for the arch it is gated to
            fresh = [(k, v) for k, v in site.knobs if v not in base.get((site.function, k), set())]
            if not fresh or _family_values(review, f.path, fresh):
                continue
            reason = _knob_sensitive_kernel(resolver, f.path, tree, site.node, parents)
            if reason is None:
                continue  # a copy/elementwise kernel (or one we cannot read): no pipelined loop, no MMA to tune
            sites.append((site, fresh))
            why = why or reason
        if not sites or why is None:
            continue
        first, fresh = sites[0]
        line = getattr(first.node, "lineno", None)
        where = f"`{first.function}`" if first.function else "module level"
        changed = [(k, v, sorted(base[(first.function, k)])) for k, v in fresh if (first.function, k) in base]
        knob_text = ", ".join(f"{k}={v}" for k, v in fresh)
        more = f" ({len(sites) - 1} more site(s) in this file)" if len(sites) > 1 else ""
        if rule == "launch-config-unretuned":
            was = "; ".join(f"{k} was {'/'.join(old)} on base" for k, _, old in changed)
            problem = (f"{where} hard-codes {knob_text} at {f.path}:{line}" + (f" ({was})" if was else "") + more
                       + " — tuned on which arch, and for which shapes?")
            impact = ("num_warps/num_stages are per-shape and per-arch: a value tuned on gfx942, or copied from a "
                      "sibling kernel with a different block size, is not tuned for this kernel on gfx950; too many "
                      "stages silently cut occupancy instead of failing.")
            action = ("Reviewer should ask: was this value measured on both gfx942 and gfx950 for the shapes this "
                      "kernel serves? If so, say so in the PR with the numbers; otherwise move it to the tuned config.")
        else:
            problem = (f"{where} sets the AMD launch knob(s) {knob_text} for every arch at {f.path}:{line}{more}"
                       " — is the value right on both gfx942 and gfx950?")
            impact = ("waves_per_eu / matrix_instr_nonkdim / kpack are AMD-specific and differ between MI300 "
                      "(gfx942) and MI350 (gfx950): one literal forced onto every arch is tuned for at most one, and "
                      "matrix_instr_nonkdim selects an MFMA shape the target must have.")
            action = ("Reviewer should ask: which arch was this tuned on, and is it right for the other? Author should "
                      "read it from the per-arch tuned config or gate it by arch.")
        evidence = [why] + [Evidence(f.path, getattr(s.node, "lineno", None), ", ".join(f"{k}={v}" for k, v in fr))
                            for s, fr in sites[:10]]
        yield Finding(rule=rule, path=f.path, line=line, end_line=getattr(first.node, "end_lineno", None),
                      problem=problem, impact=impact, action=action, tag="inferred", evidence=evidence)


def _family_values(review: ReviewInput, path: str, knobs: list[tuple[str, str]]) -> bool:
    """Every knob value is one that a file of the same name elsewhere in the base tree already sets (fla's
    `*/fused_recurrent.py` run num_warps=1, its `*/chunk_o.py` num_warps=4, num_stages=2): the kernel family's
    launch convention, carried to a new variant, not a value picked for this kernel."""
    name = path.rsplit("/", 1)[-1]
    if name == "__init__.py":
        return False
    words = "|".join(sorted({k for k, _ in knobs}))
    hits = [(p, text) for p, _, text in review.source.grep(words, "base", (f":(glob)**/{name}",)) if p != path]
    return bool(hits) and all(any(re.search(rf"\b{re.escape(k)}\s*[=:]\s*['\"]?{re.escape(v)}\b", text)
                                  for _, text in hits) for k, v in knobs)


def _knob_sensitive_kernel(resolver: _KernelResolver, path: str, tree: ast.Module, site: ast.AST,
                           parents: dict) -> Evidence | None:
    """Where a kernel the knob site launches has the structure launch knobs tune — a loop over a runtime
    extent (K, tiles: what num_stages pipelines) or a `tl.dot` (what num_warps, kpack and
    matrix_instr_nonkdim shape) — or None for copy, elementwise and loop-free kernels. A launch
    (`k[grid](…, num_warps=4)`) names its kernel; a knob dict or other call stands for every launch in its
    function."""
    if isinstance(site, ast.Call) and isinstance(site.func, ast.Subscript):
        names = {dotted_name(site.func.value).rsplit(".", 1)[-1]}
    else:
        scope: ast.AST = site
        while scope in parents and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = parents[scope]
        names = {dotted_name(n.func.value).rsplit(".", 1)[-1] for n in walk(scope)
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)}
    for name in sorted(n for n in names if n):
        kernel, kpath = resolver.resolve(path, tree, name)
        if kernel is None:
            continue  # not defined in the tree: nothing to read, and no path to ask for
        module = resolver.module(kpath) if kpath != path else tree
        if module is None:
            continue
        found = _tunable_structure(kernel.func, module, kernel.aliases)
        if found is not None:
            node, what = found
            return Evidence(kpath, node.lineno, f"`{kernel.func.name}` {what}")
    return None


LOOP_RANGES = {"range", "static_range"}


def _tunable_structure(func: ast.FunctionDef, module: ast.Module, aliases: set[str],
                       seen: set[str] | None = None) -> tuple[ast.AST, str] | None:
    """A runtime-bounded loop or a `tl.dot` in the kernel or the `@jit` helpers it calls (same module)."""
    seen = seen if seen is not None else set()
    seen.add(func.name)
    helpers = {k.name: k for k in kernels(module)}
    for node in walk(func):
        if tl_call(node, aliases, "dot", "dot_scaled"):
            return node, f"calls `{quoted(node.func)}` at line {node.lineno}"
        if isinstance(node, ast.While):
            return node, f"loops (`while`) at line {node.lineno}"
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
            callee = dotted_name(node.iter.func)
            head, _, tail = callee.rpartition(".")
            bounds = node.iter.args
            if tail in LOOP_RANGES and (not head or head in aliases) and not all(_literal(b) for b in bounds):
                return node, f"loops over `{quoted(node.iter, 60)}` at line {node.lineno}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers \
                and node.func.id not in seen:
            found = _tunable_structure(helpers[node.func.id], module, aliases, seen)
            if found is not None:
                return found
    return None


@detector("launch-config-unretuned")
def launch_config_unretuned(review: ReviewInput) -> Iterable[Finding]:
    yield from _knob_findings(review, "launch-config-unretuned", T3_KNOBS)


@detector("amd-launch-knobs")
def amd_launch_knobs(review: ReviewInput) -> Iterable[Finding]:
    yield from _knob_findings(review, "amd-launch-knobs", T4_KNOBS)
