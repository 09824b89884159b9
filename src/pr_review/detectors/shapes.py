"""Tensor shapes against the project's production dimensions (profile `scale:`).

Two uses:

- D9 (`index_width`) asks for the extent of the tensor a launcher binds to a kernel: the shape of its
  allocation in the launcher, with each dimension evaluated from literals, other tensors' shapes and the
  names the profile gives production figures for (`self.config.hidden_size`, `max_num_batched_tokens`).
  A fully known extent says whether an offset into the tensor can pass 2^31, and for which model.
- magic-constant (the detector below): an added literal in a shape or stride position that restates a
  model dimension the scope already has at hand (a config attribute it reads, or a value it assigns).

Names are tied to figures only as attribute reads (`<obj>.hidden_size`): the config object's own keys,
as the profile lists them with their source; a bare parameter called `hidden` is not a figure.
"""
from __future__ import annotations

import ast
import re
from functools import cached_property
from typing import Iterable, Iterator

from ..lang import one_line
from ..lang.index import index_of
from ..lang.python import call_tail, dotted_name, walk
from ..model import Finding, record
from ..profiles import Profile
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

LIMIT = 2 ** 31

ALLOCATORS = ("empty", "zeros", "ones", "full", "rand", "randn", "randint", "empty_strided",
              "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided")
LIKE = ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like")
RESHAPES = ("view", "reshape", "expand", "broadcast_to")
SAME_SHAPE = ("contiguous", "clone", "detach", "to", "float", "half", "bfloat16", "int", "long", "cuda",
              "view_as", "type", "requires_grad_", "fill_", "zero_")


@record(frozen=True)
class Dim:
    value: int | None
    text: str  # how the dimension is known: "hidden_size=7168", "64", or the unresolved source text
    figures: tuple[str, ...] = ()  # profile figures it rests on, "name=value (source)"


@record(frozen=True)
class Variant:
    """One production model with the engine's figures: every name the profile gives a value for."""
    name: str
    values: dict[str, int]
    sources: dict[str, str]


class Scale:
    """The profile's production dimensions, one variant per listed model (engine figures in each)."""

    def __init__(self, profile: Profile | None) -> None:
        data = (profile.data.get("scale") if profile is not None else None) or {}
        self.engine = {k: (int(v["value"]), str(v.get("source", ""))) for k, v in (data.get("engine") or {}).items()}
        self.models = list(data.get("models") or [])
        self.derived = {name: tuple(text.split()) for name, text in (data.get("derived") or {}).items()}

    @cached_property
    def variants(self) -> list[Variant]:
        engine_values = {k: v for k, (v, _) in self.engine.items()}
        engine_sources = {k: s for k, (_, s) in self.engine.items()}
        out = []
        for model in self.models:
            dims = {k: int(v) for k, v in (model.get("dims") or {}).items()}
            sources = {k: model.get("source", model.get("name", "")) for k in dims}
            out.append(Variant(model.get("name", ""), {**engine_values, **dims}, {**engine_sources, **sources}))
        if not out and self.engine:
            out.append(Variant("", engine_values, engine_sources))
        return out

    def __bool__(self) -> bool:
        return bool(self.variants)


def _tail(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else ""


def _int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int(node.operand)
        return -inner if inner is not None else None
    return None


class ShapeResolver:
    """Shapes and dimensions of the values in one scope (a launcher function), under one variant."""

    def __init__(self, scope: ast.AST, variant: Variant, klass: ast.ClassDef | None = None) -> None:
        self.variant = variant
        self.klass = klass
        self.assigned: dict[str, list[ast.AST]] = {}
        self.unpacked: dict[str, list[tuple[ast.AST, int]]] = {}
        for node in walk(scope):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
                    elif isinstance(target, (ast.Tuple, ast.List)):
                        for i, element in enumerate(target.elts):
                            if isinstance(element, ast.Name):
                                if isinstance(node.value, (ast.Tuple, ast.List)) and len(node.value.elts) == len(target.elts):
                                    self.assigned.setdefault(element.id, []).append(node.value.elts[i])
                                else:
                                    self.unpacked.setdefault(element.id, []).append((node.value, i))
            elif isinstance(node, (ast.AugAssign, ast.For, ast.With)):
                for target in ([node.target] if isinstance(node, (ast.AugAssign, ast.For)) else
                               [i.optional_vars for i in node.items if i.optional_vars is not None]):
                    for n in walk(target):
                        if isinstance(n, ast.Name):
                            self.assigned.setdefault(n.id, []).append(n)  # rebound: not one known value
        for name in list(self.assigned):
            if name in self.unpacked:
                self.assigned[name].append(ast.Name(id=name))  # bound twice: unknown

    def _single(self, name: str) -> tuple[str, ast.AST | tuple[ast.AST, int]] | None:
        values = self.assigned.get(name, [])
        unpacked = self.unpacked.get(name, [])
        if len(values) == 1 and not unpacked:
            return "value", values[0]
        if len(unpacked) == 1 and not values:
            return "unpacked", unpacked[0]
        return None

    def figure(self, node: ast.AST) -> Dim | None:
        """A config attribute the profile gives a production value for (`self.config.kv_lora_rank`)."""
        key = _tail(node)
        if key and key in self.variant.values:
            value = self.variant.values[key]
            return Dim(value, f"{key}={value}", (f"{key}={value} ({self.variant.sources.get(key, '')})",))
        return None

    def dim(self, node: ast.AST, depth: int = 0) -> Dim:
        text = ast.unparse(node)
        if depth > 12:
            return Dim(None, text)
        value = _int(node)
        if value is not None:
            return Dim(value, str(value))
        known = self.figure(node) if isinstance(node, ast.Attribute) else None
        if known is not None:
            return known
        if isinstance(node, ast.Name):
            single = self._single(node.id)
            if single is None:
                return Dim(None, text)
            kind, what = single
            if kind == "value":
                return self._named(node.id, self.dim(what, depth + 1))  # type: ignore[arg-type]
            source, index = what  # type: ignore[misc]
            shape = self._shape_of_shape(source, depth + 1)
            if shape is not None and index < len(shape):
                return self._named(node.id, shape[index])
            return Dim(None, text)
        if isinstance(node, ast.Subscript):
            shape = self._shape_of_shape(node.value, depth + 1)
            index = _int(node.slice)
            if shape is not None and index is not None and -len(shape) <= index < len(shape):
                return shape[index]
            return Dim(None, text)
        if isinstance(node, ast.Call):
            tail = call_tail(node)
            if tail == "size" and isinstance(node.func, ast.Attribute) and len(node.args) == 1:
                shape = self.shape(node.func.value, depth + 1)
                index = _int(node.args[0])
                if shape is not None and index is not None and -len(shape) <= index < len(shape):
                    return shape[index]
            if tail in ("int", "cdiv", "max", "min", "next_power_of_2") and node.args:
                parts = [self.dim(a, depth + 1) for a in node.args]
                if all(p.value is not None for p in parts):
                    values = [p.value for p in parts]
                    result = (values[0] if tail == "int" else -(-values[0] // values[1]) if tail == "cdiv" and len(values) == 2
                              else max(values) if tail == "max" else min(values) if tail == "min"
                              else 1 << max(0, (values[0] - 1).bit_length()) if tail == "next_power_of_2" else None)
                    if result is not None:
                        return Dim(result, f"{text}={result}", sum((p.figures for p in parts), ()))
            return Dim(None, text)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            left, right = self.dim(node.left, depth + 1), self.dim(node.right, depth + 1)
            if left.value is None or right.value is None or (isinstance(node.op, ast.FloorDiv) and not right.value):
                return Dim(None, text)
            op = node.op
            value = (left.value + right.value if isinstance(op, ast.Add) else left.value - right.value
                     if isinstance(op, ast.Sub) else left.value * right.value if isinstance(op, ast.Mult)
                     else left.value // right.value)
            return Dim(value, f"{text}={value}", left.figures + right.figures)
        return Dim(None, text)

    def _member(self, attr: str, depth: int) -> tuple[Dim, ...] | None:
        """`self.<attr>` allocated by exactly one assignment in the class (a buffer made in __init__)."""
        if self.klass is None:
            return None
        found = [(method, node.value) for method in self.klass.body if isinstance(method, ast.FunctionDef)
                 for node in walk(method) if isinstance(node, ast.Assign) and len(node.targets) == 1
                 and isinstance(node.targets[0], ast.Attribute) and node.targets[0].attr == attr
                 and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"]
        if len(found) != 1:
            return None
        method, value = found[0]
        return ShapeResolver(method, self.variant).shape(value, depth + 1)

    @staticmethod
    def _named(name: str, dim: Dim) -> Dim:
        if dim.value is None:
            return Dim(None, name)
        return dim if dim.figures else Dim(dim.value, f"{name}={dim.value}")

    def _shape_of_shape(self, node: ast.AST, depth: int) -> tuple[Dim, ...] | None:
        """`x.shape` / `x.size()` → x's shape."""
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            return self.shape(node.value, depth)
        if isinstance(node, ast.Call) and call_tail(node) == "size" and not node.args and isinstance(node.func, ast.Attribute):
            return self.shape(node.func.value, depth)
        return None

    def _dims(self, args: list[ast.AST], depth: int) -> tuple[Dim, ...] | None:
        if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
            args = list(args[0].elts)
        elif len(args) == 1 and not isinstance(args[0], ast.Constant):
            single = self._shape_of_shape(args[0], depth)  # torch.empty(x.shape)
            if single is not None:
                return single
            if isinstance(args[0], ast.Name):
                bound = self._single(args[0].id)
                if bound is not None and bound[0] == "value" and isinstance(bound[1], (ast.Tuple, ast.List)):
                    args = list(bound[1].elts)  # type: ignore[union-attr]
        if any(isinstance(a, ast.Starred) for a in args):
            return None
        return tuple(self.dim(a, depth + 1) for a in args)

    def shape(self, node: ast.AST, depth: int = 0) -> tuple[Dim, ...] | None:
        """The shape of a tensor value, as far as this scope shows it; None when it is not shown."""
        if depth > 12:
            return None
        if isinstance(node, ast.Name):
            single = self._single(node.id)
            if single is None or single[0] != "value":
                return None
            return self.shape(single[1], depth + 1)  # type: ignore[arg-type]
        if isinstance(node, ast.Subscript):
            return self.shape(node.value, depth + 1)  # a view spans (at most) its base
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self._member(node.attr, depth)
        if not isinstance(node, ast.Call):
            return None
        tail = call_tail(node)
        if tail in ALLOCATORS:
            positional = [a for a in node.args]
            if tail in ("full", "new_full") or tail.endswith("strided"):
                positional = positional[:1]
            if tail == "randint":
                positional = [a for a in positional if isinstance(a, (ast.Tuple, ast.List))][:1]
            size = next((k.value for k in node.keywords if k.arg == "size"), None)
            return self._dims([size] if size is not None else positional, depth)
        if tail in LIKE and node.args:
            return self.shape(node.args[0], depth + 1)
        if isinstance(node.func, ast.Attribute):
            base = node.func.value
            if tail in SAME_SHAPE:
                return self.shape(base, depth + 1)
            if tail in RESHAPES:
                dims = self._dims(list(node.args), depth)
                if dims is None:
                    return None
                if any(d.value == -1 for d in dims):
                    whole = self.shape(base, depth + 1)
                    total = numel(whole) if whole is not None else None
                    rest = numel(tuple(d for d in dims if d.value != -1))
                    if total is None or rest is None or rest.value in (None, 0):
                        return None
                    inferred = Dim(total.value // rest.value, f"{total.value // rest.value}", total.figures)  # type: ignore[operator]
                    dims = tuple(inferred if d.value == -1 else d for d in dims)
                return dims
        return None


def numel(shape: tuple[Dim, ...] | None) -> Dim | None:
    """The element count of a shape when every dimension is known."""
    if shape is None or any(d.value is None for d in shape):
        return None
    total = 1
    for d in shape:
        total *= d.value  # type: ignore[operator]
    figures: tuple[str, ...] = ()
    for d in shape:
        figures += tuple(f for f in d.figures if f not in figures)
    return Dim(total, " × ".join(d.text for d in shape), figures)


@record(frozen=True)
class Extent:
    """The largest element count a tensor reaches over the profile's models, with the model that reaches it."""
    tensor: str
    elements: int
    model: str
    shape: str
    figures: tuple[str, ...]

    def quote(self) -> str:
        where = f" with {self.model}" if self.model else ""
        sources = "; ".join(self.figures)
        return (f"`{self.tensor}` is allocated as ({self.shape}){where}: {self.elements:,} elements"
                + (f" [{sources}]" if sources else ""))


def tensor_extent(scale: Scale, scope: ast.AST, tensor: ast.AST, klass: ast.ClassDef | None = None,
                  resolvers: dict[tuple[int, str], ShapeResolver] | None = None) -> Extent | None:
    """The production extent of `tensor` as allocated in `scope`, when every dimension is known under every
    variant; the variant with the largest count is kept. `resolvers` caches one resolver per scope and variant
    across calls."""
    best: Extent | None = None
    resolvers = {} if resolvers is None else resolvers
    for variant in scale.variants:
        key = (id(scope), variant.name)
        if key not in resolvers:
            resolvers[key] = ShapeResolver(scope, variant, klass)
        total = numel(resolvers[key].shape(tensor))
        if total is None or total.value is None:
            return None
        if best is None or total.value > best.elements:
            best = Extent(ast.unparse(tensor), total.value, variant.name if total.figures else "", total.text,
                          total.figures)
    return best


def id_table_bound(scale: Scale) -> tuple[int, str] | None:
    """The most entries a table of ids (page, slot, token or expert ids) holds at production scale: one id per
    position of every sequence (max_num_seqs × max_model_len), or a few per batched token (top-k lists, expert
    choices). None when the profile lacks a figure the bound needs."""
    best: tuple[int, str] | None = None
    for variant in scale.variants:
        values = variant.values
        if not all(k in values for k in ("max_num_seqs", "max_model_len", "max_num_batched_tokens")):
            return None
        candidates = [(values["max_num_seqs"] * values["max_model_len"],
                       f"max_num_seqs {values['max_num_seqs']} × max_model_len {values['max_model_len']}")]
        for key in ("index_topk", "num_experts_per_tok"):
            if key in values:
                candidates.append((values["max_num_batched_tokens"] * values[key],
                                   f"max_num_batched_tokens {values['max_num_batched_tokens']} × {key} {values[key]}"
                                   + (f" ({variant.name})" if variant.name else "")))
        top = max(candidates)
        if best is None or top[0] > best[0]:
            best = top
    return best


# ------------------------------------------------------------------------------ magic-constant

SHAPE_CALLS = ALLOCATORS + RESHAPES + ("new_tensor", "as_strided")
TRIVIAL = {0, 1, 2, -1}
KERNEL_NAMESPACES = ("tl", "gl", "triton", "ttgl")
CONFIG_OBJECT = lazy_re(r"(?:^|\.)(?:\w*config\w*|args)$", re.IGNORECASE)


@record(frozen=True)
class AtHand:
    value: int
    text: str  # how the scope names it: "self.config.kv_lora_rank", "self.head_dim"
    source: str  # "DeepSeek-V3 config.json", "assigned at line 12"
    variant: str = ""  # the profile model the value belongs to; "" for a value the file itself states


def _at_hand(scope: ast.AST, tree: ast.Module, scale: Scale, class_node: ast.ClassDef | None) -> list[AtHand]:
    """Model dimensions the scope has at hand: config attributes it reads (valued from the profile's
    models, or from a default assigned in the same file), `self.<dim>` attributes the class assigns from a
    config attribute or a literal, and — for sums and products only — the other keys of a config object the
    scope reads composed as the profile's `derived` dimensions say (`hf_config.kv_lora_rank +
    hf_config.qk_rope_head_dim` when it reads `hf_config`)."""
    out: list[AtHand] = []
    seen: set[tuple[int, str, str]] = set()

    def add(value: int, text: str, source: str, variant: str = "") -> None:
        if (value, text, variant) not in seen and value not in TRIVIAL and value > 2:
            seen.add((value, text, variant))
            out.append(AtHand(value, text, source, variant))

    def valued(key: str, text: str, via: str = "") -> None:
        for variant in scale.variants:
            if key in variant.values and variant.name:
                add(variant.values[key], text, f"{via}{key}={variant.values[key]} in {variant.sources.get(key, variant.name)}",
                    variant.name)
        if key in defaults:
            add(defaults[key][0], text, f"{via}{key} = {defaults[key][0]} at line {defaults[key][1]}")

    defaults = _file_defaults(tree)
    objects: set[str] = set()
    for node in walk(scope):
        if isinstance(node, ast.Attribute) and CONFIG_OBJECT.search(dotted_name(node.value) or ""):
            if any(node.attr in v.values and node.attr not in scale.engine for v in scale.variants):
                objects.add(dotted_name(node.value))  # it holds model dimensions (not only engine settings)
            valued(node.attr, ast.unparse(node))
    if class_node is not None:
        for node in walk(class_node):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) \
                    and dotted_name(node.targets[0].value) == "self":
                value = _int(node.value)
                if value is not None:
                    add(value, ast.unparse(node.targets[0]), f"assigned at line {node.lineno}")
                elif isinstance(node.value, ast.Attribute) and CONFIG_OBJECT.search(dotted_name(node.value.value) or ""):
                    valued(node.value.attr, ast.unparse(node.targets[0]), f"{ast.unparse(node.value)}: ")
    for obj in sorted(objects):
        for name, (left, op, right) in scale.derived.items():
            for variant in scale.variants:
                if variant.name and left in variant.values and right in variant.values:
                    a, b = variant.values[left], variant.values[right]
                    add(a + b if op == "+" else a * b, f"{obj}.{left} {op} {obj}.{right}",
                        f"{name}: {left}={a}, {right}={b} in {variant.sources.get(left, variant.name)}", variant.name)
    return out


def _file_defaults(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """Config fields with an integer default in the file (`kv_lora_rank: int = 512` in a dataclass, a
    keyword default `kv_lora_rank=512` of a config's __init__)."""
    out: dict[str, tuple[int, int]] = {}
    index = index_of(tree)
    for node in index.of_type(ast.AnnAssign):
        if isinstance(node.target, ast.Name) and node.value is not None and _int(node.value) is not None:
            out.setdefault(node.target.id, (_int(node.value), node.lineno))  # type: ignore[arg-type]
    for func in index.of_type(ast.FunctionDef):
        if func.name != "__init__":
            continue
        args = func.args.args + func.args.kwonlyargs
        defaults = [None] * (len(func.args.args) - len(func.args.defaults)) + list(func.args.defaults) + list(func.args.kw_defaults)
        for arg, default in zip(args, defaults):
            if default is not None and _int(default) is not None:
                out.setdefault(arg.arg, (_int(default), default.lineno))  # type: ignore[arg-type]
    return out


def _shape_literals(call: ast.Call) -> Iterator[ast.Constant]:
    """Integer literals in a shape or stride position of a shape-making call (not `dtype=`/`device=`/fill
    values, not a storage offset)."""
    tail = call_tail(call)
    args = list(call.args)
    if tail in ("full", "new_full"):
        args = args[:1]
    elif tail.endswith("strided"):  # (size, stride[, storage_offset])
        args = args[:2] + [k.value for k in call.keywords if k.arg == "stride"]
    if tail == "new_tensor":
        return
    if tail == "randint":
        args = [a for a in args if isinstance(a, (ast.Tuple, ast.List))]  # low/high are values, not a shape
    args += [k.value for k in call.keywords if k.arg == "size"]
    for arg in args:
        elements = arg.elts if isinstance(arg, (ast.Tuple, ast.List)) else [arg]
        for element in elements:
            tiles = _granularities(element)
            yield from (c for c in _dimension_literals(element) if _int(c) not in tiles)


def _granularities(element: ast.AST) -> set[int]:
    """Values a dimension is rounded to, read off the dimension itself: a literal divisor or modulus
    (`(n + 63) // 64 * 64`) or a literal passed to a call inside it (`cdiv(n, 64) * 64`). A factor equal to one
    of them is that tile size again, not a model dimension."""
    out: set[int] = set()
    for node in walk(element):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)) and _int(node.right) is not None:
            out.add(_int(node.right))  # type: ignore[arg-type]
        elif isinstance(node, ast.Call):
            out.update(v for a in node.args if (v := _int(a)) is not None)
    return out


def _dimension_literals(element: ast.AST) -> Iterator[ast.Constant]:
    """Literals that are a dimension, or a term or factor of one (`n * 576`, `512 + 64`); a divisor or modulus
    (`D // 128`, a quantisation group) is not a dimension."""
    if isinstance(element, ast.Constant) and _int(element) is not None:
        yield element
    elif isinstance(element, ast.BinOp) and isinstance(element.op, (ast.Add, ast.Mult)):
        yield from _dimension_literals(element.left)
        yield from _dimension_literals(element.right)


def _stride_compare_literals(node: ast.Compare) -> Iterator[ast.Constant]:
    """`x.stride(0) == 576`, `x.shape[-1] != 512`: the literal side of a comparison with a stride or size."""
    sides = [node.left] + list(node.comparators)
    if not any(isinstance(s, ast.Call) and call_tail(s) in ("stride", "size") or
               isinstance(s, ast.Subscript) and (_tail(s.value) == "shape" or
                                                 isinstance(s.value, ast.Call) and call_tail(s.value) == "stride")
               for s in sides):
        return
    for side in sides:
        if _int(side) is not None and isinstance(side, ast.Constant):
            yield side


def derivation(literal: int, at_hand: list[AtHand]) -> tuple[str, list[AtHand]] | None:
    """How `literal` follows from the dimensions at hand: one of them (a profile-derived one included), or a
    sum or product of two values of one model (or stated by the file)."""
    for a in at_hand:
        if a.value == literal:
            return f"`{a.text}`", [a]
    for i, a in enumerate(at_hand):
        for b in at_hand[i:]:
            if a.text == b.text or (a.variant and b.variant and a.variant != b.variant):
                continue
            if a.value + b.value == literal:
                return f"`{a.text} + {b.text}`", [a, b]
            if a.value * b.value == literal:
                return f"`{a.text} * {b.text}`", [a, b]
    return None


@detector("magic-constant")
def magic_constant(review: ReviewInput) -> Iterable[Finding]:
    scale = Scale(review.profile)
    for f, tree in review.python_files(include_tests=False, added_matching=re.compile(r"\d")):
        if review.is_test(f.path) or review.facts.role(f.path) == "benchmark":
            continue  # a benchmark measures a fixed, spelled-out shape on purpose, like a test
        index = index_of(tree)
        literals = index.literals_by_line
        lines = [n for n in f.added_lines if n in literals]
        if not lines:
            continue
        wanted = {id(c) for n in lines for c in literals[n]}
        candidates: list[tuple[ast.Constant, ast.AST]] = []
        for call in index.of_type(ast.Call):
            if dotted_name(call.func).split(".")[0] in KERNEL_NAMESPACES:
                continue  # tl.zeros((BLOCK_M, BLOCK_N)): a tile shape, not a tensor's
            if call_tail(call) in SHAPE_CALLS and call.lineno <= max(lines) and (call.end_lineno or call.lineno) >= min(lines):
                candidates += [(c, call) for c in _shape_literals(call) if id(c) in wanted]
        for compare in index.of_type(ast.Compare):
            if compare.lineno <= max(lines) and (compare.end_lineno or compare.lineno) >= min(lines):
                candidates += [(c, compare) for c in _stride_compare_literals(compare) if id(c) in wanted]
        hands: dict[int, list[AtHand]] = {}
        reported: set[int] = set()
        for constant, site in sorted(candidates, key=lambda p: (p[0].lineno, p[0].col_offset)):
            value = _int(constant)
            if value is None or value in TRIVIAL or constant.lineno in reported:
                continue
            scope = index.scope_of(site)
            if isinstance(scope, ast.Lambda):
                continue
            if id(scope) not in hands:
                klass = next((a for a in index.ancestors(site) if isinstance(a, ast.ClassDef)), None)
                hands[id(scope)] = _at_hand(scope, tree, scale, klass) if not isinstance(scope, ast.Module) else []
            found = derivation(value, hands[id(scope)])
            if found is None:
                continue
            text, used = found
            reported.add(constant.lineno)
            sources = "; ".join(f"`{u.text}`: {u.source}" for u in used)
            yield Finding(
                rule="magic-constant", path=f.path, line=constant.lineno, severity="low",
                problem=f"The new literal `{value}` in `{_short(ast.unparse(site))}` is a tensor shape or stride "
                        f"that equals {text}, which this scope already has at hand ({sources}).",
                impact="The literal holds for the model it was written against; a model or config with other "
                       "dimensions gets a wrongly sized tensor, or a check that rejects valid input.",
                action=f"Author should write {text} instead of `{value}` so the shape follows the config.",
                tag="inferred",
            )


def _short(text: str, limit: int = 90) -> str:
    return one_line(text, limit)
