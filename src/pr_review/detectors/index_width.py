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
import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from ..lang.python import dotted_name
from ..lang.triton import Kernel, argument, keyword, tl_call
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from .triton import KernelFile, _kernel_files

BOUNDED, RUNTIME, WIDE = 0, 1, 2

# The added lines a file must have for the Triton scan to parse it: a product next to an address.
TRITON_TOKEN = re.compile(r"\*")
WIDE_DTYPES = ("int64", "uint64")
# Triton/Gluon calls whose first argument (or `pointer=`/`ptr=`) is an address.
POINTER_CALLS = ("load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_xchg", "atomic_cas",
                 "atomic_and", "atomic_or", "atomic_xor", "atomic_fmax")
# Gluon's buffer and async-copy intrinsics (gl.amd.cdna3.buffer_load, …async_copy.buffer_load_to_shared):
# the positions of their address arguments (base pointer, 32-bit offsets); keywords `ptr`/`offsets` too.
ADDRESS_ARGS = {"buffer_load": (0, 1), "buffer_store": (1, 2), "buffer_load_to_shared": (1, 2),
                "global_load_to_shared": (1,), "buffer_atomic": (1, 2)}
MEMORY_CALL = re.compile(r"^(buffer|global)_(load|store|atomic)\w*$")
# Calls whose value is bounded by their (constexpr) arguments: tile ranges and shapes.
TILE_CALLS = ("arange", "zeros", "full", "zeros_like", "full_like", "num_programs")


@dataclass(frozen=True)
class Product:
    line: int
    text: str
    operands: tuple[str, str]


# ------------------------------------------------------------------------------ Triton / Gluon

class _TritonWidth:
    """Width/bound classification of expressions in one kernel, memoised per local name."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        args = kernel.func.args
        self.params = {a.arg: a for a in args.posonlyargs + args.args + args.kwonlyargs}
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
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand)
        if isinstance(node, ast.Subscript):
            return self.kind(node.value)  # x[:, None] has x's width
        if isinstance(node, ast.IfExp):
            return max(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, (ast.Compare, ast.BoolOp, ast.Attribute, ast.Tuple, ast.List)):
            return BOUNDED  # a boolean, a dtype/shape attribute or a tuple of them
        return BOUNDED

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
            result = max((self.kind(a) for a in ast.iter_child_nodes(loop.iter)), default=BOUNDED)
        else:
            result = BOUNDED  # a module-level name in a kernel is a compile-time constant
        self.memo[name] = result
        return result

    def _call(self, call: ast.Call) -> int:
        aliases = self.kernel.aliases
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("to", "cast", "astype"):
            target = call.args[0] if call.args else keyword(call, "dtype")
            if target is not None and _is_wide_dtype(target):
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


def _call_tail(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _loads(call: ast.Call) -> bool:
    """A value read from memory: tl.load, a buffer/global load, a shared-memory `.load(layout)` or
    `load_shared_relaxed`."""
    tail = _call_tail(call)
    return tail == "load" or tail.startswith("load_") or (bool(MEMORY_CALL.match(tail)) and "load" in tail and "to_shared" not in tail)


def _address_roots(kernel: Kernel) -> Iterator[ast.expr]:
    """The address expressions of every memory access in the kernel."""
    for node in ast.walk(kernel.func):
        if not isinstance(node, ast.Call):
            continue
        tail = _call_tail(node)
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
    seen: set[str] = set()
    todo: list[ast.AST] = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and _loads(node):
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            if width.kind(node.left) == RUNTIME and width.kind(node.right) == RUNTIME:
                yield node
        if isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            todo.extend(kernel.defs.get(node.id, ()))
        todo.extend(ast.iter_child_nodes(node))


def _base_products(kf: KernelFile) -> dict[str, set[str]]:
    """kernel name → the text of every multiplication in it on the base side."""
    out: dict[str, set[str]] = {}
    base = None if kf.f.is_new else kf.review.source.python(kf.f.old_path or kf.f.path, "base")
    if base is not None:
        for func in ast.walk(base):
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(func.name, set()).update(
                    _squash(ast.unparse(n)) for n in ast.walk(func)
                    if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mult))
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _widened_sibling(tree: ast.Module) -> tuple[int, str] | None:
    """The first expression in the file that widens an index to 64 bits: the author's own idiom."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
            target = node.args[0] if node.args else keyword(node, "dtype")
            if target is not None and _is_wide_dtype(target):
                return node.lineno, _short(ast.unparse(node))
    return None


def _short(text: str, limit: int = 100) -> str:
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def triton_products(kf: KernelFile) -> Iterator[tuple[Kernel, list[Product]]]:
    """Per kernel, the new narrow products that feed an address, grouped by line."""
    base = _base_products(kf)
    for kernel in kf.kernels:
        width = _TritonWidth(kernel)
        found: dict[int, Product] = {}
        for root in _address_roots(kernel):
            for product in _narrow_products(kernel, width, root):
                text = _squash(ast.unparse(product))
                if product.lineno not in kf.added or text in base.get(kernel.func.name, ()):
                    continue
                found.setdefault(product.lineno, Product(
                    product.lineno, _short(ast.unparse(product)),
                    (_short(ast.unparse(product.left), 40), _short(ast.unparse(product.right), 40))))
        if found:
            yield kernel, sorted(found.values(), key=lambda p: p.line)


@detector("int32-index-overflow")
def int32_index_overflow_triton(review: ReviewInput) -> Iterable[Finding]:
    for kf in _kernel_files(review, TRITON_TOKEN):
        sibling = None
        for kernel, products in triton_products(kf):
            if sibling is None:
                sibling = _widened_sibling(kf.tree) or (0, "")
            for product in products:
                yield _finding(kf.f.path, kernel.func.name, product, sibling if sibling[0] else None, "Triton")


def _finding(path: str, function: str, product: Product, sibling: tuple[int, str] | None, language: str) -> Finding:
    left, right = product.operands
    evidence = [Evidence(path, sibling[0], sibling[1])] if sibling else []
    widened = (f" The same file already widens an index at line {sibling[0]} (`{sibling[1]}`); this product "
               "does not." if sibling else "")
    return Finding(
        rule="int32-index-overflow", path=path, line=product.line, severity="medium",
        problem=f"`{product.text}` in {language} `{function}` multiplies two runtime values (`{left}` and "
                f"`{right}`) in 32 bits and the result feeds a memory address; neither operand is widened "
                f"to 64 bits.{widened}",
        impact="Once the product passes 2^31 (long context, large batch, big KV pool) the offset wraps and "
               "the access lands at the wrong address, silently.",
        action="Author must widen the runtime operand to int64 before the multiplication, or show the "
               "product is capped below 2^31 for every supported shape; the reviewer should name the "
               "production size at which it passes 2^31.",
        tag="inferred", evidence=evidence,
    )
