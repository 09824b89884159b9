"""int32-index-overflow (D9): a product of two unbounded runtime values that feeds an address,
computed in 32 bits.

Structural, with no name lists: an operand's width and bound come from where it is defined, not
from what it is called. An operand is

- *bounded* when it derives only from literals, `constexpr`/template parameters and
  `arange`-style tile ranges — a tile constant bounds the product;
- *wide* when a 64-bit widening reaches it (`.to(tl.int64)`, `static_cast<int64_t>`, a local or
  parameter declared `int64_t`/`size_t`/`long`, an `i64` FlyDSL value);
- *runtime* otherwise when it derives from a runtime parameter, a program or block id, or a value
  loaded from memory (a page id read from a block table).

A multiplication of two runtime operands, neither wide, on a line the PR added, that reaches an
address (the pointer of a load/store/atomic, a buffer `offsets=`, a C++ subscript or pointer
offset) is reported once per statement. A widened sibling expression in the same file is named.
"""
from __future__ import annotations

import ast
import builtins
import re
from abc import ABC, abstractmethod
from itertools import chain
from typing import Callable, Iterable, Iterator

from ..lang import cpp, one_line
from ..lang.index import index_of
from ..lang.python import call_tail, children, decorated_with, dotted_name, walk
from ..lang.triton import Kernel, argument, keyword, tl_call
from ..model import Evidence, Finding, record, replace
from . import detector
from .base import ReviewInput
from .shapes import LIMIT, Extent, Scale, id_table_bound, tensor_extent
from .triton import KernelFile, _kernel_files
from ..lang.regex import lazy_re

BOUNDED, RUNTIME, WIDE = 0, 1, 2

# The added lines a file must have for the Triton scan to parse it: a product next to an address.
TRITON_TOKEN = lazy_re(r"\*")
TRITON_IMPORT = lazy_re(r"^\s*(import|from)\s+triton\b", re.MULTILINE)
WIDE_DTYPES = ("int64", "uint64")
# Triton/Gluon calls whose first argument (or `pointer=`/`ptr=`) is an address.
POINTER_CALLS = ("load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
                 "atomic_and", "atomic_or", "atomic_xor", "atomic_fmax")
# Gluon's buffer and async-copy intrinsics (gl.amd.cdna3.buffer_load, …async_copy.buffer_load_to_shared):
# the positions of their address arguments (base pointer, 32-bit offsets); keywords `ptr`/`offsets` too.
ADDRESS_ARGS = {"buffer_load": (0, 1), "buffer_store": (1, 2), "buffer_load_to_shared": (1, 2),
                "global_load_to_shared": (1,), "buffer_atomic": (1, 2)}
MEMORY_CALL = lazy_re(r"^(buffer|global)_(load|store|atomic)\w*$")
# Calls whose value is bounded by their (constexpr) arguments: tile ranges and shapes.
TILE_CALLS = ("arange", "zeros", "full", "zeros_like", "full_like", "num_programs")


@record(frozen=True)
class Product:
    line: int
    text: str
    operands: tuple[str, str]
    key: frozenset = frozenset()  # what it multiplies, whatever the spelling (C++: see _cpp_key)
    scale: Extent | None = None  # the production extent of the tensor it indexes, when the launch shows it


# ------------------------------------------------------------------------------ Triton / Gluon

class _PythonWidth(ABC):
    """Width/bound classification of Python-syntax kernel expressions (Triton, Gluon, FlyDSL), memoised
    per local name; each DSL says what its names, calls and other nodes are."""

    def __init__(self) -> None:
        self.memo: dict[str, int] = {}

    def kind(self, node: ast.AST) -> int:
        if isinstance(node, ast.Constant):
            return BOUNDED
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if isinstance(node.op, ast.Mod) and right == BOUNDED:
                return BOUNDED  # x % TILE stays below the tile
            return max(left, right)
        return self._other(node)

    @abstractmethod
    def _name(self, name: str) -> int: ...

    @abstractmethod
    def _call(self, call: ast.Call) -> int: ...

    def _other(self, node: ast.AST) -> int:
        return BOUNDED


class _TritonWidth(_PythonWidth):
    """Width/bound classification of expressions in one Triton/Gluon kernel."""

    def __init__(self, kernel: Kernel) -> None:
        super().__init__()
        self.kernel = kernel
        args = kernel.func.args
        self.params = {a.arg: a for a in args.posonlyargs + args.args + args.kwonlyargs}

    def _other(self, node: ast.AST) -> int:
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand)
        if isinstance(node, ast.Subscript):
            return self.kind(node.value)  # x[:, None] has x's width
        if isinstance(node, ast.IfExp):
            return max(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, (ast.Compare, ast.BoolOp, ast.Attribute, ast.Tuple, ast.List)):
            return BOUNDED  # a boolean, a dtype/shape attribute or a tuple of them
        return BOUNDED

    def _wide_choice(self, target: ast.AST) -> bool:
        """A dtype the kernel binds to a 64-bit type under a switch (`index_type: tl.constexpr = tl.int64 if
        UPCAST_INDICES else tl.int32`): the author built the 64-bit mode, the launcher picks it."""
        if not isinstance(target, ast.Name):
            return False
        return any(_is_wide_dtype(n) for value in self.kernel.defs.get(target.id, ()) for n in walk(value)
                   if isinstance(n, (ast.Attribute, ast.Name)))

    def _name(self, name: str) -> int:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = BOUNDED  # a cycle through a loop-carried name adds nothing
        if name in self.kernel.constexprs:
            result = BOUNDED
        elif name in self.params:
            annotation = self.params[name].annotation
            result = WIDE if annotation is not None and dotted_name(annotation).endswith(WIDE_DTYPES) else RUNTIME
        elif name in self.kernel.defs:
            result = max((self.kind(v) for v in self.kernel.defs[name]), default=BOUNDED)
        elif name in self.kernel.loop_vars:
            loop = self.kernel.loop_vars[name]
            result = max((self.kind(a) for a in children(loop.iter)), default=BOUNDED)
        else:
            result = BOUNDED  # a module-level name in a kernel is a compile-time constant
        self.memo[name] = result
        return result

    def _call(self, call: ast.Call) -> int:
        aliases = self.kernel.aliases
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("to", "cast", "astype"):
            target = call.args[0] if call.args else keyword(call, "dtype")
            if target is not None and (_is_wide_dtype(target) or self._wide_choice(target)):
                return WIDE
            return self.kind(func.value)
        if tl_call(call, aliases, "cast"):
            target = argument(call, 1, "dtype")
            if target is not None and _is_wide_dtype(target):
                return WIDE
            return self.kind(call.args[0]) if call.args else BOUNDED
        if tl_call(call, aliases, "program_id") or _loads(call):
            return RUNTIME
        if tl_call(call, aliases, *TILE_CALLS):
            dtype = keyword(call, "dtype")
            return WIDE if dtype is not None and _is_wide_dtype(dtype) else BOUNDED
        parts = [self.kind(a) for a in call.args] + [self.kind(k.value) for k in call.keywords]
        if isinstance(func, ast.Attribute) and not dotted_name(func).partition(".")[0] in aliases:
            parts.append(self.kind(func.value))  # a method of a local value (x.to(...), x.reshape(...))
        return max(parts, default=BOUNDED)


def _is_wide_dtype(node: ast.AST) -> bool:
    name = dotted_name(node) or (node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "")
    return name.rsplit(".", 1)[-1] in WIDE_DTYPES


def _loads(call: ast.Call) -> bool:
    """A value read from memory: tl.load, a buffer/global load, a shared-memory `.load(layout)` or
    `load_shared_relaxed`."""
    tail = call_tail(call)
    return tail == "load" or tail.startswith("load_") or (bool(MEMORY_CALL.match(tail)) and "load" in tail and "to_shared" not in tail)


def _address_roots(kernel: Kernel) -> Iterator[ast.expr]:
    """The address expressions of every memory access in the kernel."""
    for node in walk(kernel.func):
        if not isinstance(node, ast.Call):
            continue
        tail = call_tail(node)
        if MEMORY_CALL.match(tail):
            positions = next((v for k, v in ADDRESS_ARGS.items() if tail.startswith(k) and
                              (tail == k or k == "buffer_atomic")), ())
            for kw in node.keywords:
                if kw.arg in ("ptr", "pointer", "offsets", "base"):
                    yield kw.value
            for index in positions:
                if index < len(node.args) and not isinstance(node.args[index], ast.Starred):
                    yield node.args[index]
        elif tl_call(node, kernel.aliases, *POINTER_CALLS):
            pointer = argument(node, 0, "pointer")
            if pointer is not None:
                yield pointer


def _narrow_products(kernel: Kernel, width: _TritonWidth, root: ast.expr) -> Iterator[ast.BinOp]:
    """Multiplications of two runtime, non-wide operands in `root` or any name it was computed
    from; a loaded value is opaque (its own address is another access)."""
    for node in kernel.reached(root, opaque=_opaque_access):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            if width.kind(node.left) == RUNTIME and width.kind(node.right) == RUNTIME:
                yield node


def _row_number(kernel: Kernel, width: _TritonWidth, root: ast.expr, product: ast.BinOp) -> bool:
    """Whether another multiplication on the way to the address takes `product` (through locals) as one
    operand and a runtime stride as the other (`src_row = phys * block_size` then `src_row * row_stride`):
    `product` counts rows, and the offset, where a wrap happens first, is the outer product."""
    for node in kernel.reached(root, opaque=_opaque_access):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and node is not product:
            for mine, other in ((node.left, node.right), (node.right, node.left)):
                if width.kind(other) != BOUNDED and kernel.reaches(mine, lambda n: n is product, stop=_opaque_helper):
                    return True
    return False


def _opaque_access(node: ast.AST) -> bool:
    """A load (its own address is another access) or a jitted helper's result: not looked into."""
    return isinstance(node, ast.Call) and (_loads(node) or _helper(node))


def _helper(call: ast.Call) -> bool:
    """A call of a jitted helper by its bare name (`remap_xcd(pid, total_tiles, ...)`, `pid_grid(...)`): its
    result is not its arguments' sum, so a product among the arguments (a tile count, a bound) does not
    reach the address through it. Builtins (`min`, `max`) pass values through."""
    return isinstance(call.func, ast.Name) and not hasattr(builtins, call.func.id)


def _base_products(kf: KernelFile) -> Callable[[str], set]:
    """kernel name → the text and the operand key of every multiplication in it on the base side,
    computed on first use for that kernel only. A kernel the file's base side does not define but a file
    the PR cuts code from does (a kernel split out into a new module) brings that definition's products:
    moved code is not new code."""
    review = kf.review
    base = None if kf.f.is_new else review.source.python(kf.f.old_path or kf.f.path, "base")
    cache: dict[str, set] = {}

    def of(name: str) -> set:
        if name not in cache:
            seen: set = set()
            for tree in chain([base] if base is not None else [], review.cut_from(kf.f)):
                index = index_of(tree)
                defs = [f for f in index.of_type(ast.FunctionDef) + index.of_type(ast.AsyncFunctionDef) if f.name == name]
                imports = _imported(tree) if defs else set()
                for func in defs:
                    for operands, node in _py_multiplications(func):
                        seen.add(_squash(ast.unparse(node)))
                        seen.add(_py_key(operands, imports))
                if defs:
                    break  # the file's own base first, then the first file the kernel was cut from
            cache[name] = seen
        return cache[name]
    return of


# A widening in an operand's text: part of its key, so a product whose widening was dropped is new.
WIDE_TEXT = lazy_re(r"64|size_t|\blong\b|index_cast|extsi|extui|\.to\(")


def _imported(tree: ast.Module) -> set[str]:
    """Names a module binds by import (`tl`, `fx`, `arith`): wrappers and namespaces, not values."""
    out = set()
    index = index_of(tree)
    for node in index.of_type(ast.Import) + index.of_type(ast.ImportFrom):
        out.update((a.asname or a.name).split(".")[0] for a in node.names)
    return out


def _py_multiplications(tree: ast.AST) -> Iterator[tuple[tuple[ast.AST, ast.AST], ast.AST]]:
    """Every product in `tree`: `a * b` and a two-argument `mul`/`muli` call (FlyDSL's arith)."""
    for n in walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult):
            yield (n.left, n.right), n
        elif isinstance(n, ast.Call) and call_tail(n) in ("mul", "muli") and len(n.args) == 2:
            yield (n.args[0], n.args[1]), n


def _py_key(operands: tuple[ast.AST, ast.AST], imports: set[str]) -> frozenset:
    """What a product multiplies, whatever its spelling: per operand, the values it names (not the wrapper
    or namespace it calls: `ArithValue(x)`, `fx.Int32(x)` and `x` are one operand) and whether it widens.
    `mul(a, b)` restyled as `a * b`, or `ArithValue(a) * ArithValue(b)` as `fx.Int32(a) * fx.Int32(b)`,
    is the product the base already had."""
    def one(node: ast.AST) -> tuple[frozenset, bool]:
        callees = {id(c.func) for c in walk(node) if isinstance(c, ast.Call)}
        names = frozenset(n.id for n in walk(node)
                          if isinstance(n, ast.Name) and n.id not in imports and id(n) not in callees)
        return names, bool(WIDE_TEXT.search(ast.unparse(node)))
    return frozenset((one(operands[0]), one(operands[1])))


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _widened_sibling(tree: ast.Module) -> tuple[int, str] | None:
    """The first expression in the file that widens an index to 64 bits: the author's own idiom."""
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
            target = node.args[0] if node.args else keyword(node, "dtype")
            if target is not None and _is_wide_dtype(target):
                return node.lineno, one_line(ast.unparse(node), 100)
    return None


def _leading_strides(review: ReviewInput, kernel_name: str) -> tuple[set[str], set[str]]:
    """How the PR's Python files launch `kernel_name`: the parameters bound to a tensor's leading stride
    (`x.stride(0)`: a row index times it spans the whole tensor), and those bound only to values that are
    certainly no stride (a literal, a shape or a local assigned from them: a block size, an expert count; a
    page id times one is a slot number, not an offset). Keys are parameter names and `#<position>`."""
    leading: set[str] = set()
    kinds: dict[str, set[str]] = {}
    for _, tree in review.python_files():
        index = index_of(tree)
        assigned: dict[str, list[ast.AST]] | None = None
        for node in index.of_type(ast.Call):
            if not (isinstance(node.func, ast.Subscript)
                    and dotted_name(node.func.value).rsplit(".", 1)[-1] == kernel_name):
                continue
            if assigned is None:
                assigned = {}
                for a in index.of_type(ast.Assign):
                    for t in a.targets:
                        for n in walk(t):
                            if isinstance(n, ast.Name):
                                assigned.setdefault(n.id, []).append(a.value)
            bound = [(i, a) for i, a in enumerate(node.args)] + [(k.arg, k.value) for k in node.keywords if k.arg]
            for key, value in bound:
                if isinstance(value, ast.Starred):
                    break  # positions after a starred argument cannot be mapped
                name = key if isinstance(key, str) else f"#{key}"
                if _is_leading_stride(value):
                    leading.add(name)
                kinds.setdefault(name, set()).add(_stride_kind(value, assigned, set()))
    return leading, {k for k, v in kinds.items() if v == {"other"}}


def _stride_kind(node: ast.AST, assigned: dict[str, list[ast.AST]], seen: set[str]) -> str:
    """"stride" when a `.stride(...)` reaches the value, "other" when only literals, shapes, sizes and
    locals assigned from them do, "unknown" otherwise (a parameter of the launcher, a call's result)."""
    def combine(parts: Iterable[str]) -> str:
        parts = set(parts)
        return "stride" if "stride" in parts else "unknown" if "unknown" in parts or not parts else "other"

    if isinstance(node, ast.Constant):
        return "other"
    if isinstance(node, ast.Attribute):
        return "other" if node.attr in ("shape", "ndim") else "unknown"
    if isinstance(node, ast.Subscript):
        return _stride_kind(node.value, assigned, seen)
    if isinstance(node, ast.Call):
        tail = call_tail(node)
        if tail == "stride":
            return "stride"
        if tail in ("size", "numel", "dim", "len"):
            return "other"
        if tail in ("int", "cdiv", "next_power_of_2", "min", "max"):
            return combine(_stride_kind(a, assigned, seen) for a in node.args)
        return "unknown"
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        return combine(_stride_kind(c, assigned, seen) for c in children(node)
                       if not isinstance(c, (ast.operator, ast.unaryop)))
    if isinstance(node, ast.Name):
        if node.id in seen:
            return "unknown"
        seen.add(node.id)
        return combine(_stride_kind(v, assigned, seen) for v in assigned.get(node.id, ()))
    return "unknown"


def _is_leading_stride(node: ast.AST) -> bool:
    for n in walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "stride":
            if n.args and isinstance(n.args[0], ast.Constant) and n.args[0].value == 0:
                return True
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute) \
                and n.value.func.attr == "stride" and isinstance(n.slice, ast.Constant) and n.slice.value == 0:
            return True
    return False


def triton_products(kf: KernelFile, leading: Callable[[str], tuple[set[str], set[str]]],
                    extents: Callable[[str], dict[str, list[Extent | None]]] | None = None,
                    ids_bounded: bool = False) -> Iterator[tuple[Kernel, list[Product]]]:
    """Per kernel, the new narrow products that feed an address and span a whole tensor: one operand is
    a value loaded from memory (a page id from a table) or a parameter launched with a leading stride.
    With `extents` (kernel name → parameter → the production extent of the tensor each launch binds its
    stride to), a product whose tensor provably stays below 2^31 elements is dropped and one whose tensor
    passes it carries that extent. With `ids_bounded` (the profile caps every table of ids below 2^31 entries), a
    row offset into a table whose values the kernel treats as ids is dropped too."""
    base = _base_products(kf)
    imports: set[str] | None = None
    for kernel in kf.kernels:
        first, last = kernel.func.lineno, kernel.func.end_lineno or kernel.func.lineno
        if not any(first <= n <= last for n in kf.added):
            continue  # a kernel the PR does not touch has no new product
        width = _TritonWidth(kernel)
        params = [a.arg for a in kernel.func.args.args]
        strides: set[str] | None = None
        counts: set[str] = set()
        found: dict[int, Product] = {}
        roots = list(_address_roots(kernel))
        tables: set[int] | None = None
        id_tables: set[int] | None = None
        for root in roots:
            for product in _narrow_products(kernel, width, root):
                if product.lineno not in kf.added:
                    continue
                if tables is None:
                    tables = _index_tables(kernel, roots)
                if id(root) in tables:
                    break  # a table of ids (block table, token map): one entry per page or token, far below 2^31
                if ids_bounded:
                    if id_tables is None:
                        id_tables = _id_tables(kernel)
                    if id(root) in id_tables:
                        break  # ids stored, divided into pages or padded with -1: a table the profile caps
                if imports is None:
                    imports = _imported(kf.tree)
                before = base(kernel.func.name)
                if _squash(ast.unparse(product)) in before or _py_key((product.left, product.right), imports) in before:
                    continue  # the product was there before the PR, perhaps spelled differently
                if strides is None:
                    bound, plain = leading(kernel.func.name)
                    strides = {p for i, p in enumerate(params) if p in bound or f"#{i}" in bound}
                    counts = {p for i, p in enumerate(params) if p in plain or f"#{i}" in plain}
                operands = (product.left, product.right)
                loaded = [_loaded(kernel, o) for o in operands]
                if not any(loaded[i] or _mentions_any(kernel, o, strides) for i, o in enumerate(operands)):
                    continue
                if not any(_mentions_any(kernel, o, strides) for o in operands) and any(
                        not loaded[i] and _plain_name(o) in counts for i, o in enumerate(operands)):
                    continue  # a loaded id times a launched count (a block size): a slot number, not an offset
                if _row_number(kernel, width, root, product):
                    continue  # the product is a row number that a later product scales: that one is the offset
                scale = None
                if extents is not None:
                    known = _product_extent(kernel, params, operands, extents(kernel.func.name))
                    if known is not None and known.elements < LIMIT:
                        continue  # the tensor it indexes stays below 2^31 elements at production scale
                    scale = known
                found.setdefault(product.lineno, Product(
                    product.lineno, one_line(ast.unparse(product), 100),
                    (one_line(ast.unparse(product.left), 40), one_line(ast.unparse(product.right), 40)), scale=scale))
        if found:
            yield kernel, sorted(found.values(), key=lambda p: p.line)


def _product_extent(kernel: Kernel, params: list[str], operands: tuple[ast.AST, ast.AST],
                    bound: dict[str, list[Extent | None]]) -> Extent | None:
    """The largest production extent among the tensors whose strides the product's operands use, when every
    launch shows the allocation of each of them; None when any is not shown."""
    best: Extent | None = None
    used = False
    for i, param in enumerate(params):
        launches = bound.get(param, []) + bound.get(f"#{i}", [])
        if not launches or not any(_mentions_any(kernel, o, {param}) for o in operands):
            continue
        used = True
        if any(e is None for e in launches):
            return None
        for extent in launches:
            if best is None or extent.elements > best.elements:  # type: ignore[union-attr]
                best = extent
    return best if used else None


def _launch_extents(review: ReviewInput, kernel_name: str, scale: Scale) -> dict[str, list[Extent | None]]:
    """How the PR's Python files launch `kernel_name`: per parameter bound to a `t.stride(k)`, the production
    extent of `t` at each launch (None where the launcher does not show how `t` is allocated)."""
    out: dict[str, list[Extent | None]] = {}
    resolvers: dict = {}
    for _, tree in review.python_files():
        index = index_of(tree)
        guarded: set[str] | None = None
        for node in index.of_type(ast.Call):
            if not (isinstance(node.func, ast.Subscript)
                    and dotted_name(node.func.value).rsplit(".", 1)[-1] == kernel_name):
                continue
            scope = index.scope_of(node)
            klass = next((a for a in index.ancestors(node) if isinstance(a, ast.ClassDef)), None)
            bound = [(i, a) for i, a in enumerate(node.args)] + [(k.arg, k.value) for k in node.keywords if k.arg]
            for key, value in bound:
                if isinstance(value, ast.Starred):
                    break
                tensor = _strided_tensor(value)
                if tensor is None:
                    continue
                name = key if isinstance(key, str) else f"#{key}"
                if guarded is None:
                    guarded = _int32_guarded(tree)
                if ast.unparse(tensor) in guarded:
                    out.setdefault(name, []).append(Extent(ast.unparse(tensor), LIMIT - 1, "", "checked against the int32 range before the launch", ()))
                    continue
                out.setdefault(name, []).append(tensor_extent(scale, scope, tensor, klass, resolvers))
    return out


INT32_LIMITS = (2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32)


def _int32_guarded(tree: ast.Module) -> set[str]:
    """Tensors whose stride the file checks against the int32 range in a test, an assert or a predicate's
    return (`return (rows - 1) * x.stride(0) + n <= _MAX_INT32`, directly or through a local the comparison
    reads): the launcher takes another path when the offset would not fit, so the kernel's 32-bit offset into
    them is capped. A comparison kept in a flag (passed on as a kernel mode) does not count."""
    index = index_of(tree)
    consts = module_constants(tree)
    out: set[str] = set()
    for compare in index.of_type(ast.Compare):
        sides = [compare.left, *compare.comparators]
        if not any(_const_int(s, consts) in INT32_LIMITS for s in sides):
            continue
        if not isinstance(index.parents.get(compare), (ast.Return, ast.If, ast.Assert, ast.UnaryOp, ast.BoolOp)):
            continue  # a flag kept in a local (`within_2gb = … <= 2**31`) picks a kernel mode, it does not avoid the launch
        scope = index.scope_of(compare)
        locals_: dict[str, list[ast.AST]] = {}
        for node in walk(scope):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                locals_.setdefault(node.targets[0].id, []).append(node.value)
        todo, seen = list(sides), set()
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Name) and node.id not in seen:
                seen.add(node.id)
                todo.extend(locals_.get(node.id, ()))
            tensor = _strided_tensor(node)
            if tensor is not None:
                out.add(ast.unparse(tensor))
            todo.extend(children(node))
    return out


def module_constants(tree: ast.Module) -> dict[str, int]:
    """The module's names bound to a compile-time integer (`_MAX_INT32 = 2**31 - 1`), in order."""
    consts: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _const_int(node.value, consts)
            if value is not None:
                consts[node.targets[0].id] = value
    return consts


def _const_int(node: ast.AST, consts: dict[str, int]) -> int | None:
    """A compile-time integer: a literal, a module constant, arithmetic of them, `torch.iinfo(torch.int32).max`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.Attribute) and node.attr == "max" and isinstance(node.value, ast.Call) \
            and call_tail(node.value) == "iinfo" and node.value.args:
        width = dotted_name(node.value.args[0]).rsplit(".", 1)[-1]
        return {"int32": 2 ** 31 - 1, "uint32": 2 ** 32 - 1}.get(width)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Pow, ast.Sub, ast.Add, ast.LShift, ast.Mult)):
        left, right = _const_int(node.left, consts), _const_int(node.right, consts)
        if left is None or right is None or (isinstance(node.op, (ast.Pow, ast.LShift)) and right > 64):
            return None
        op = node.op
        return (left ** right if isinstance(op, ast.Pow) else left - right if isinstance(op, ast.Sub) else
                left + right if isinstance(op, ast.Add) else left << right if isinstance(op, ast.LShift) else left * right)
    return None


def _strided_tensor(node: ast.AST) -> ast.AST | None:
    """`t` of `t.stride(k)` / `t.stride()[k]`."""
    if isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "stride":
        return node.func.value
    return None


def _negative_int(node: ast.AST) -> bool:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
        and isinstance(node.operand.value, int)


def _sentinel_where(kernel: Kernel, node: ast.AST) -> bool:
    """`tl.where(valid, idx, -1)`: a value padded with a negative id sentinel."""
    return isinstance(node, ast.Call) and tl_call(node, kernel.aliases, "where") and \
        any(_negative_int(a) for a in node.args[1:3])


def _id_tables(kernel: Kernel) -> set[int]:
    """Address roots of tables whose values the kernel treats as ids rather than data: a load padded with a
    negative sentinel (`other=-1`), a loaded value compared with one or split into pages (`slot // PAGE`,
    `pos % PAGE`), and a store of such a value (`tl.store(block_table + ..., slot // PAGE)`). Packed data is
    unpacked with shifts and masks, not division, so a weight table does not qualify."""
    loads: dict[int, int] = {}  # id(load call) -> id(its address root)
    stores: list[tuple[ast.expr, ast.expr]] = []
    out: set[int] = set()
    for node in walk(kernel.func):
        if not isinstance(node, ast.Call):
            continue
        if tl_call(node, kernel.aliases, "load"):
            pointer = argument(node, 0, "pointer")
            if pointer is not None:
                loads[id(node)] = id(pointer)
                other = keyword(node, "other")
                if other is not None and _negative_int(other):
                    out.add(id(pointer))
        elif tl_call(node, kernel.aliases, "store"):
            pointer, value = argument(node, 0, "pointer"), argument(node, 1, "value")
            if pointer is not None and value is not None:
                stores.append((pointer, value))
    if not loads:
        return out
    opaque = (lambda n: id(n) in loads or _opaque_helper(n))  # a helper's result is not its arguments

    def loaded_in(expr: ast.AST) -> set[int]:
        return {loads[id(n)] for n in kernel.reached(expr, opaque=opaque) if id(n) in loads}

    id_math: list[ast.AST] = []
    for node in walk(kernel.func):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)) and not loaded_in(node.right):
            id_math.append(node.left)
        elif isinstance(node, ast.Compare) and any(_negative_int(c) for c in [node.left, *node.comparators]):
            id_math.extend([node.left, *node.comparators])
    for expr in id_math:
        out |= loaded_in(expr)
    for pointer, value in stores:
        n = _top(kernel, value)
        if (id(n) in loads and loads[id(n)] in out) or _sentinel_where(kernel, n) or (
                isinstance(n, ast.BinOp) and isinstance(n.op, (ast.FloorDiv, ast.Mod)) and loaded_in(n.left)):
            out.add(id(pointer))
    return out


def _top(kernel: Kernel, expr: ast.AST) -> ast.AST:
    """What a stored value is, through a local it was assigned once and casts (`.to(...)`): the stored
    expression itself, not everything its masks and loop bounds were computed from."""
    for _ in range(8):
        if isinstance(expr, ast.Name) and len(kernel.defs.get(expr.id, ())) == 1:
            expr = kernel.defs[expr.id][0]
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr in ("to", "cast"):
            expr = expr.func.value
        else:
            break
    return expr


def _index_tables(kernel: Kernel, roots: list[ast.expr]) -> set[int]:
    """Address roots whose loaded value is itself an index into memory: the read of a block table, a
    token map or a top-k index list. Such tables hold one integer per page or token, so a row offset into
    one stays far below 2^31; the product worth reporting is the one the loaded id takes part in."""
    pointer_of: dict[int, int] = {}  # id(load call) -> id(its address root)
    for node in walk(kernel.func):
        if isinstance(node, ast.Call) and tl_call(node, kernel.aliases, "load"):
            pointer = argument(node, 0, "pointer")
            if pointer is not None:
                pointer_of[id(node)] = id(pointer)
    if not pointer_of:
        return set()
    out: set[int] = set()
    for root in roots:
        for node in kernel.reached(root, opaque=lambda n: id(n) in pointer_of):
            if id(node) in pointer_of and pointer_of[id(node)] != id(root):
                out.add(pointer_of[id(node)])
    return out


def _opaque_helper(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _helper(node)


def _plain_name(node: ast.AST) -> str:
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _loaded(kernel: Kernel, expr: ast.AST) -> bool:
    """`expr` derives from a value read from memory, not through a helper's result (a program id that
    `pid_grid(pid, loaded_count, ...)` returns is bounded by the grid, not by the loaded count)."""
    return kernel.reaches(expr, lambda n: isinstance(n, ast.Call) and _loads(n), stop=_opaque_helper)


def _mentions_any(kernel: Kernel, expr: ast.AST, names: set[str]) -> bool:
    return bool(names) and kernel.reaches(expr, lambda n: isinstance(n, ast.Name) and n.id in names,
                                          through_loads=False, stop=_opaque_helper)


@detector("int32-index-overflow")
def int32_index_overflow_triton(review: ReviewInput) -> Iterable[Finding]:
    cache: dict[str, tuple[set[str], set[str]]] = {}
    scale = Scale(review.profile)
    bound: dict[str, dict[str, list[Extent | None]]] = {}
    id_bound = id_table_bound(scale)
    ids_bounded = id_bound is not None and id_bound[0] < LIMIT

    def leading(name: str) -> tuple[set[str], set[str]]:
        if name not in cache:
            cache[name] = _leading_strides(review, name)
        return cache[name]

    def extents(name: str) -> dict[str, list[Extent | None]]:
        if name not in bound:
            bound[name] = _launch_extents(review, name, scale)
        return bound[name]

    for kf in _kernel_files(review, TRITON_TOKEN):
        if not TRITON_IMPORT.search(review.source.text(kf.f.path) or ""):
            continue  # a FlyDSL host `@flyc.jit` is not a Triton kernel
        sibling = None
        for kernel, products in triton_products(kf, leading, extents if scale else None, ids_bounded):
            if sibling is None:
                sibling = _widened_sibling(kf.tree) or (0, "")
            for product, again in _repeats_folded(products):
                yield _finding(kf.f.path, kernel.func.name, product, sibling if sibling[0] else None, "Triton", again)


def _repeats_folded(products: Iterable[Product]) -> list[tuple[Product, list[int]]]:
    """A kernel's products, one per text at its first line with the lines that compute it again (the same
    offset recomputed for a load and its store is one thing to widen, not two), carrying the production
    scale any of them showed."""
    groups: dict[str, list[Product]] = {}
    for product in sorted(products, key=lambda p: p.line):
        groups.setdefault(_squash(product.text), []).append(product)
    out = []
    for same in groups.values():
        first, scale = same[0], next((p.scale for p in same if p.scale is not None), None)
        out.append((first if scale is first.scale else replace(first, scale=scale), [p.line for p in same[1:]]))
    return out


def _finding(path: str, function: str, product: Product, sibling: tuple[int, str] | None, language: str,
             again: list[int] | None = None) -> Finding:
    left, right = product.operands
    evidence = [Evidence(path, sibling[0], sibling[1])] if sibling else []
    widened = (f" The same file already widens an index at line {sibling[0]} (`{sibling[1]}`); this product "
               "does not." if sibling else "")
    if again:
        widened += f" The same product is computed again at line{'s' if len(again) > 1 else ''} " \
                   f"{', '.join(map(str, again))}."
    trigger = None
    if product.scale is not None:
        trigger = (f"{product.scale.quote()}, past 2^31 = {LIMIT:,}: the offset `{product.text}` into it wraps "
                   "once it reaches the tensor's upper part.")
    return Finding(
        rule="int32-index-overflow", path=path, line=product.line, severity="high" if trigger else "medium",
        trigger=trigger,
        problem=f"`{product.text}` in {language} `{function}` multiplies two runtime values (`{left}` and "
                f"`{right}`) in 32 bits and the result feeds a memory address; neither operand is widened "
                f"to 64 bits.{widened}" + (f" At production scale {trigger}" if trigger else ""),
        impact="Once the product passes 2^31 (long context, large batch, big KV pool) the offset wraps and "
               "the access lands at the wrong address, silently.",
        action="Author must widen the runtime operand to int64 before the multiplication, or show the "
               "product is capped below 2^31 for every supported shape; the reviewer should name the "
               "production size at which it passes 2^31.",
        tag="inferred", evidence=evidence,
    )


# ------------------------------------------------------------------------------ C++ / HIP

WIDE_TYPE = lazy_re(r"64|\blong\b|size_t|ptrdiff_t|intptr_t|\blong_index_t\b")
NARROW_TYPE = lazy_re(r"\b(int|unsigned|signed|short|u?int(8|16|32)_t|index_t|uint|int32|uint32|auto)\b")
RUNTIME_IDS = ("blockIdx", "gridDim")  # threadIdx and blockDim are bounded by the block size
CPP_SUFFIXES = (".cu", ".cuh", ".hip", ".cpp", ".cc", ".cxx", ".h", ".hpp")


class _CppWidth:
    """Width/bound classification of expressions in one C++ function."""

    def __init__(self, func, template_params: set[str]) -> None:
        self.func = func
        self.bounded_names = set(template_params)
        self.types: dict[str, str] = {}  # local or parameter → declared type text
        self.inits: dict[str, list] = {}
        self.pointers: set[str] = set()
        self.params: set[str] = set()
        self.memo: dict[str, int] = {}
        declarator = func.child_by_field_name("declarator")
        for node in cpp.walk(func):
            if node.type == "parameter_declaration" and _inside(node, declarator):
                self._declare(node, param=True)
            elif node.type == "declaration":
                self._declare(node)

    def _declare(self, node, param: bool = False) -> None:
        type_text = cpp.text_of(node.child_by_field_name("type"))
        qualifiers = " ".join(cpp.text_of(c) for c in node.children if c.type in ("type_qualifier",
                                                                                    "storage_class_specifier"))
        for declarator in node.children_by_field_name("declarator"):
            value = declarator.child_by_field_name("value") if declarator.type == "init_declarator" else None
            target = declarator.child_by_field_name("declarator") if declarator.type == "init_declarator" else declarator
            pointer = target is not None and target.type in ("pointer_declarator", "array_declarator",
                                                             "reference_declarator") and "*" in cpp.text_of(target)
            while target is not None and target.type not in ("identifier", "field_identifier"):
                target = target.child_by_field_name("declarator") or next(
                    (c for c in target.named_children if c.type == "identifier"), None)
            name = cpp.text_of(target)
            if not name:
                continue
            if pointer:
                self.pointers.add(name)
                continue
            if "constexpr" in qualifiers:
                self.bounded_names.add(name)
                continue
            self.types[name] = type_text
            if param:
                self.params.add(name)
            if value is not None:
                self.inits.setdefault(name, []).append(value)

    def kind(self, node) -> int:
        t = node.type
        if t in ("number_literal", "sizeof_expression", "char_literal", "true", "false", "string_literal"):
            return BOUNDED
        if t == "identifier":
            return self._name(cpp.text_of(node))
        if t == "qualified_identifier":
            return BOUNDED  # T::KV_TILE_SIZE, a namespace constant
        if t == "field_expression":
            base = node.child_by_field_name("argument")
            if base is not None and cpp.text_of(base) in RUNTIME_IDS:
                return RUNTIME
            if base is not None and cpp.text_of(base) in ("threadIdx", "blockDim"):
                return BOUNDED
            return RUNTIME if base is not None and self.kind(base) != BOUNDED else BOUNDED
        if t == "cast_expression":
            type_node = node.child_by_field_name("type")
            if WIDE_TYPE.search(cpp.text_of(type_node)):
                return WIDE
            value = node.child_by_field_name("value")
            return self.kind(value) if value is not None else BOUNDED
        if t == "call_expression":
            func = node.child_by_field_name("function")
            args = node.child_by_field_name("arguments")
            if func is not None and func.type == "template_function" and \
                    cpp.text_of(func.child_by_field_name("name")).endswith("_cast"):
                if WIDE_TYPE.search(cpp.text_of(func.child_by_field_name("arguments"))):
                    return WIDE
            return max((self.kind(a) for a in (args.named_children if args is not None else [])), default=BOUNDED)
        if t in ("subscript_expression", "pointer_expression"):
            return RUNTIME  # a value loaded from memory (a page id from a table)
        if t == "binary_expression":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            op = cpp.text_of(node.child_by_field_name("operator"))
            kr = self.kind(right) if right is not None else BOUNDED
            if op in ("%", "&") and kr == BOUNDED:
                return BOUNDED
            if op in ("<", ">", "<=", ">=", "==", "!=", "&&", "||"):
                return BOUNDED
            return max(self.kind(left) if left is not None else BOUNDED, kr)
        if t == "conditional_expression":
            return max(self.kind(c) for c in (node.child_by_field_name("consequence"),
                                              node.child_by_field_name("alternative")) if c is not None)
        if t in ("parenthesized_expression", "unary_expression"):
            return max((self.kind(c) for c in node.named_children), default=BOUNDED)
        return BOUNDED

    def loaded(self, node, seen: set[str] | None = None) -> bool:
        """Whether `node` derives from a value read from memory (`table[i]`, `*p`) through locals."""
        seen = set() if seen is None else seen
        for n in cpp.walk(node):
            if n.type == "subscript_expression" or (n.type == "pointer_expression" and cpp.text_of(n).startswith("*")):
                return True
            if n.type == "identifier":
                name = cpp.text_of(n)
                if name not in seen:
                    seen.add(name)
                    if any(self.loaded(v, seen) for v in self.inits.get(name, [])):
                        return True
        return False

    def _name(self, name: str) -> int:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = BOUNDED
        if name in self.bounded_names or name not in self.types:
            result = BOUNDED  # a template or constexpr constant, a macro, a global
        elif WIDE_TYPE.search(self.types[name]):
            result = WIDE
        elif not NARROW_TYPE.search(self.types[name]):
            result = BOUNDED  # not an integer (a float, a struct): not an index operand
        elif name in self.params:
            result = RUNTIME
        else:
            result = max((self.kind(v) for v in self.inits.get(name, [])), default=BOUNDED)
        self.memo[name] = result
        return result


def _inside(node, container) -> bool:
    return container is not None and container.start_byte <= node.start_byte and node.end_byte <= container.end_byte


def _template_params(func) -> set[str]:
    out = set()
    for a in cpp.ancestors(func):
        if a.type == "template_declaration":
            params = a.child_by_field_name("parameters")
            for p in params.named_children if params is not None else []:
                idents = [n for n in cpp.walk(p) if n.type in ("identifier", "type_identifier")]
                if idents:
                    out.add(cpp.text_of(idents[-1]))
    return out


def _feeds_address(product, width: _CppWidth, offset_names: set[str]) -> bool:
    """The product is (part of) a subscript index, a pointer offset, or the value of an offset variable."""
    child = product
    for a in cpp.ancestors(product):
        if a.type == "subscript_expression":
            return child != a.child_by_field_name("argument")
        if a.type == "binary_expression" and cpp.text_of(a.child_by_field_name("operator")) in ("+", "-"):
            other = a.child_by_field_name("left") if child == a.child_by_field_name("right") else a.child_by_field_name("right")
            if other is not None and other.type == "identifier" and cpp.text_of(other) in width.pointers:
                return True
        if a.type == "init_declarator":
            target = a.child_by_field_name("declarator")
            return cpp.text_of(target) in offset_names
        if a.type == "assignment_expression":
            return cpp.text_of(a.child_by_field_name("left")) in offset_names
        if a.type in ("expression_statement", "compound_statement", "function_definition", "argument_list"):
            return False
        child = a
    return False


def _offset_names(func, width: _CppWidth) -> set[str]:
    """Locals used as a subscript index or added to a pointer somewhere in the function."""
    out = set()
    for node in cpp.walk(func):
        if node.type == "subscript_expression":
            index = node.child_by_field_name("indices") or node.named_children[-1]
            out.update(cpp.text_of(n) for n in cpp.walk(index) if n.type == "identifier")
        elif node.type == "binary_expression" and cpp.text_of(node.child_by_field_name("operator")) in ("+", "-"):
            sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
            if any(s is not None and s.type == "identifier" and cpp.text_of(s) in width.pointers for s in sides):
                out.update(cpp.text_of(n) for s in sides if s is not None for n in cpp.walk(s) if n.type == "identifier")
    return out - width.pointers


def cpp_products(text: str, added: set[int]) -> Iterator[tuple[str, Product]]:
    tree = cpp.parse(text)
    per_function: dict[int, tuple[_CppWidth, set[str]]] = {}
    seen: set[int] = set()
    for node in cpp.nodes_on_lines(tree.root_node, added, ("binary_expression",)):
        if cpp.text_of(node.child_by_field_name("operator")) != "*" or cpp.line_of(node) in seen:
            continue
        func = cpp.enclosing_function(node)
        if func is None:
            continue
        if func.id not in per_function:
            width = _CppWidth(func, _template_params(func))
            per_function[func.id] = (width, _offset_names(func, width))
        width, offsets = per_function[func.id]
        left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
        if left is None or right is None or width.kind(left) != RUNTIME or width.kind(right) != RUNTIME:
            continue
        if not (width.loaded(left) or width.loaded(right)):
            continue  # a page or row id read from memory spans the pool; a block id times a size is bounded
        if not _feeds_address(node, width, offsets):
            continue
        seen.add(cpp.line_of(node))
        yield cpp.function_name(func), Product(cpp.line_of(node), one_line(cpp.text_of(node), 100),
                                               (one_line(cpp.text_of(left), 40), one_line(cpp.text_of(right), 40)),
                                               _cpp_key(left, right))


def _cpp_key(left, right) -> frozenset:
    """Per operand, the values it names (not the functions it calls) and whether it widens: a product
    re-spelled with a cast or a helper (`(int)a * b`, `mul(a, b)`) is the product the base had."""
    def one(node) -> tuple[frozenset, bool]:
        callees = {n.id for c in cpp.walk(node) if c.type == "call_expression"
                   and c.child_by_field_name("function") is not None for n in cpp.walk(c.child_by_field_name("function"))}
        names = frozenset(cpp.text_of(n) for n in cpp.walk(node) if n.type == "identifier" and n.id not in callees)
        return names, bool(WIDE_TEXT.search(cpp.text_of(node)))
    return frozenset((one(left), one(right)))


def _cpp_base_keys(text: str) -> set:
    out = set()
    for node in cpp.walk(cpp.parse(text).root_node):
        if node.type == "binary_expression" and cpp.text_of(node.child_by_field_name("operator")) == "*":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is not None and right is not None:
                out.add(_cpp_key(left, right))
    return out


def _cpp_widened_sibling(text: str) -> tuple[int, str] | None:
    match = re.search(r"static_cast<\s*(u?int64_t|long|size_t|long_index_t)\s*>\s*\([^)]*\)\s*\*", text)
    if not match:
        return None
    return text[:match.start()].count("\n") + 1, match.group(0)


@detector("int32-index-overflow")
def int32_index_overflow_cpp(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("cpp", include_tests=False):
        if not f.path.endswith(CPP_SUFFIXES) or not any("*" in t for _, t in f.added):
            continue
        text = review.source.text(f.path)
        if text is None:
            continue
        base_text: str | None = None
        base_products: set[str] = set()
        base_keys: set | None = None
        sibling = None
        for function, product in cpp_products(text, f.added_lines):
            if base_text is None:  # the base is read only for a file with a candidate product
                base_text = review.base_text(f, "") or ""
                base_products = {_squash(m) for m in re.findall(r"[\w.\->()\[\]]+\s*\*\s*[\w.\->()\[\]]+", base_text)}
            if _squash(product.text) in base_products:
                continue  # the same product was there before the PR
            if base_keys is None:
                base_keys = _cpp_base_keys(base_text) if base_text else set()
            if product.key in base_keys:
                continue  # the same product, spelled differently
            if sibling is None:
                sibling = _cpp_widened_sibling(text) or (0, "")
            yield _finding(f.path, function, product, sibling if sibling[0] else None, "C++")


# ------------------------------------------------------------------------------ FlyDSL

FLY_NARROW = lazy_re(r"\b(Int32|Int16|Int8|Uint32|i32)\b")
FLY_WIDE = lazy_re(r"\b(Int64|Uint64|i64|index)\b")
FLY_BOUNDED_PARAM = lazy_re(r"Constexpr|constexpr")
# Calls that move a value into 64 bits, and calls whose arguments are addresses.
FLY_WIDENING = ("index_cast", "extsi", "extui")
FLY_ADDRESS_CALLS = lazy_re(r"^(buffer_(load|store|atomic\w*)|index_cast|GTensor|make_buffer_tensor)$")


def _fly_kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    index = index_of(tree)
    return [n for n in index.of_type(ast.FunctionDef) + index.of_type(ast.AsyncFunctionDef)
            if decorated_with(n, ("kernel",))]


class _FlyWidth(_PythonWidth):
    """Width/bound classification in one FlyDSL kernel (nested helpers included: they close over it)."""

    def __init__(self, func: ast.FunctionDef) -> None:
        super().__init__()
        args = func.args
        self.params = {a.arg: ast.unparse(a.annotation) if a.annotation is not None else ""
                       for a in args.posonlyargs + args.args + args.kwonlyargs}
        self.defs: dict[str, list[ast.expr]] = {}
        for node in walk(func):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.defs.setdefault(target.id, []).append(node.value)

    def _other(self, node: ast.AST) -> int:
        if isinstance(node, ast.Attribute):
            text = dotted_name(node)
            return RUNTIME if "block_idx" in text or "block_id" in text else BOUNDED
        return BOUNDED

    def _call(self, call: ast.Call) -> int:
        tail = call_tail(call)
        args = list(call.args) + [k.value for k in call.keywords]
        type_text = " ".join(ast.unparse(a) for a in args[:1]) + " " + " ".join(
            ast.unparse(k.value) for k in call.keywords if k.arg in ("dtype", "type"))
        if tail in FLY_WIDENING and FLY_WIDE.search(type_text):
            return WIDE
        if tail.startswith("buffer_load"):
            dtype = next((k.value for k in call.keywords if k.arg == "dtype"), None)
            return WIDE if dtype is not None and FLY_WIDE.search(ast.unparse(dtype)) else RUNTIME
        if tail == "constant":
            return BOUNDED
        if tail in ("remsi", "remui") and len(call.args) == 2 and self.kind(call.args[1]) == BOUNDED:
            return BOUNDED
        if tail == "trunci":
            return RUNTIME if any(self.kind(a) != BOUNDED for a in call.args[1:]) else BOUNDED  # narrowed to i32
        return max((self.kind(a) for a in args), default=BOUNDED)

    def loaded(self, node: ast.AST) -> bool:
        """Whether `node` derives from a value read from memory (a page or row id from a table)."""
        seen: set[str] = set()
        todo = [node]
        while todo:
            current = todo.pop()
            if isinstance(current, ast.Call) and call_tail(current).startswith("buffer_load"):
                return True
            if isinstance(current, ast.Name) and current.id not in seen:
                seen.add(current.id)
                todo.extend(self.defs.get(current.id, ()))
            todo.extend(children(current))
        return False

    def _name(self, name: str) -> int:
        if name in self.memo:
            return self.memo[name]
        self.memo[name] = BOUNDED
        if name in self.params:
            annotation = self.params[name]
            result = (BOUNDED if FLY_BOUNDED_PARAM.search(annotation) else WIDE if FLY_WIDE.search(annotation)
                      else RUNTIME if FLY_NARROW.search(annotation) else BOUNDED)
        else:
            result = max((self.kind(v) for v in self.defs.get(name, [])), default=BOUNDED)
        self.memo[name] = result
        return result


def _fly_products(func: ast.FunctionDef, width: _FlyWidth) -> Iterator[ast.AST]:
    """Narrow runtime products (`a * b`, `arith.muli(a, b)`) that reach an address argument."""
    roots = [a for n in walk(func) if isinstance(n, ast.Call) and FLY_ADDRESS_CALLS.match(call_tail(n))
             for a in list(n.args)[1:] + [k.value for k in n.keywords if k.arg not in ("dtype", "vec_width")]]
    seen: set[str] = set()
    todo: list[ast.AST] = list(roots)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and call_tail(node).startswith("buffer_load"):
            continue  # a loaded value is opaque; its own offset is another root
        operands = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            operands = (node.left, node.right)
        elif isinstance(node, ast.Call) and call_tail(node) == "muli" and len(node.args) == 2:
            operands = (node.args[0], node.args[1])
        if operands and all(width.kind(o) == RUNTIME for o in operands) and any(width.loaded(o) for o in operands):
            yield node
        if isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            todo.extend(width.defs.get(node.id, ()))
        todo.extend(children(node))


@detector("int32-index-overflow")
def int32_index_overflow_flydsl(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False, added_matching=TRITON_TOKEN):
        text = review.source.text(f.path) or ""
        if "flydsl" not in text and "flyc" not in text:
            continue
        base: set | None = None
        imports: set[str] | None = None
        sibling = None
        for func in _fly_kernels(tree):
            if not any(func.lineno <= n <= (func.end_lineno or func.lineno) for n in f.added_lines):
                continue  # a kernel the PR does not touch has no new product
            width = _FlyWidth(func)
            found: dict[int, Product] = {}
            for product in _fly_products(func, width):
                left, right = (product.left, product.right) if isinstance(product, ast.BinOp) else product.args[:2]
                if product.lineno not in f.added_lines:
                    continue
                if base is None:
                    base, imports = _base_products_of(review.base_python(f)), _imported(tree)
                if _squash(ast.unparse(product)) in base or _py_key((left, right), imports or set()) in base:
                    continue  # the product was there before the PR, perhaps spelled differently
                found.setdefault(product.lineno, Product(product.lineno, one_line(ast.unparse(product), 100),
                                                         (one_line(ast.unparse(left), 40), one_line(ast.unparse(right), 40))))
            for product, again in _repeats_folded(found.values()):
                if sibling is None:
                    sibling = _fly_widened_sibling(tree) or (0, "")
                yield _finding(f.path, func.name, product, sibling if sibling[0] else None, "FlyDSL", again)


def _base_products_of(tree: ast.Module | None) -> set:
    if tree is None:
        return set()
    imports = _imported(tree)
    out: set = set()
    for operands, node in _py_multiplications(tree):
        out.add(_squash(ast.unparse(node)))
        out.add(_py_key(operands, imports))
    return out


def _fly_widened_sibling(tree: ast.Module) -> tuple[int, str] | None:
    for node in walk(tree):
        if isinstance(node, ast.Call) and call_tail(node) in FLY_WIDENING and node.args and \
                FLY_WIDE.search(ast.unparse(node.args[0])):
            return node.lineno, one_line(ast.unparse(node), 100)
    return None
