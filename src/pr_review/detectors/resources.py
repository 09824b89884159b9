"""Resource rules decided from Python syntax.

- weight-variant-double-pin (F1): a new weight variant attribute (`*_preshuffled`, `*_quantized`, …)
  computed from the original weight and stored next to it, with the original never freed or replaced.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from ..lang.index import index_of
from ..lang.python import FUNCTION_TYPES, dotted_name, walk
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

VARIANT = lazy_re(r"^(?P<base>\w+?)_(?P<kind>preshuffled|preshuffle|shuffled|shuffle|quantized|quant|packed|"
                     r"swizzled|transposed|padded|reordered|dequantized|dequant|fp8|fp4|mxfp4|int8|int4|bf16|fp16|"
                     r"fp32|t|copy|clone|contiguous|converted|prepacked|interleaved)$")
VARIANT_TEXT = lazy_re(VARIANT.pattern.replace("^(?P<base>\\w+?)", r"\w").rstrip("$") + r"\b")
WEIGHT = lazy_re(r"weight|^w\d*$|^w\d+_|^w_|_w$|_proj$|^proj")
VIEW_OPS = {"view", "t", "transpose", "permute", "unsqueeze", "squeeze", "as_strided", "narrow", "detach",
            "view_as", "expand", "unflatten", "flatten", "T", "mT", "data", "reshape"}


def _variant_assignments(tree: ast.Module) -> Iterable[tuple[ast.AST, str, str, ast.AST | None, ast.AST]]:
    """(statement, owner text, attribute, value, owner node) for `obj.attr = v`, `setattr(obj, "attr", v)`,
    `obj.register_parameter/buffer("attr", v)`."""
    for node in index_of(tree).of_type((ast.Assign, ast.AnnAssign, ast.Call)):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute):
                    yield node, dotted_name(t.value) or ast.unparse(t.value), t.attr, node.value, t.value
        elif isinstance(node, ast.Call) and len(node.args) >= 2 and isinstance(node.args[0 if not isinstance(node.func, ast.Name) else 1], ast.Constant):
            name = dotted_name(node.func)
            if name == "setattr" and len(node.args) == 3 and isinstance(node.args[1], ast.Constant):
                yield node, ast.unparse(node.args[0]), str(node.args[1].value), node.args[2], node.args[0]
            elif isinstance(node.func, ast.Attribute) and node.func.attr in ("register_parameter", "register_buffer") \
                    and isinstance(node.args[0], ast.Constant):
                yield node, ast.unparse(node.func.value), str(node.args[0].value), node.args[1], node.func.value


def _derived_from(value: ast.AST | None, base: str, func: ast.AST | None) -> ast.Attribute | None:
    """The `<x>.<base>` read the value is computed from (directly, or through one local variable)."""
    if value is None:
        return None
    for n in walk(value):
        if isinstance(n, ast.Attribute) and n.attr == base and isinstance(n.ctx, ast.Load):
            return n
    if func is not None:
        names = {n.id for n in walk(value) if isinstance(n, ast.Name)}
        for stmt in walk(func):
            if isinstance(stmt, ast.Assign) and stmt.lineno < value.lineno and \
                    any(isinstance(t, ast.Name) and t.id in names for t in stmt.targets):
                for n in walk(stmt.value):
                    if isinstance(n, ast.Attribute) and n.attr == base and isinstance(n.ctx, ast.Load):
                        return n
    return None


def _view_only(value: ast.AST, base: str) -> bool:
    """`x.base.view(...)`, `x.base.t()`, a `*_view(x.base)` helper and the like share storage: no second
    copy is pinned."""
    node = value
    for call in walk(value):
        if isinstance(call, ast.Call) and re.search(r"(^|_)view$|as_strided|alias", dotted_name(call.func).rsplit(".", 1)[-1]):
            return True
    if isinstance(node, ast.Call) and dotted_name(node.func).rsplit(".", 1)[-1] in ("Parameter", "Buffer") and node.args:
        node = node.args[0]
    while True:
        if isinstance(node, ast.Attribute) and node.attr == base:
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEW_OPS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in VIEW_OPS or isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False


def _released(tree: ast.Module, base: str, variant: str, variant_stmt: ast.AST, init_funcs: set[ast.AST],
              parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    """Where the original attribute is freed or replaced, if anywhere in the module.

    Anywhere: `del x.<base>`, `delattr`, `x.<base> = None`, a storage resize, a replace/free helper
    called with the name. In the function that creates the variant, after it: any re-binding of the
    original not computed from the original itself. Elsewhere: a re-binding to the variant. (Other
    functions assigning `layer.<base> = …` are usually where the weight is created, not freed.)"""
    home = next((a for a in _ancestors(variant_stmt, parents) if isinstance(a, FUNCTION_TYPES)), None)
    for node in index_of(tree).of_type((ast.Delete, ast.Call, ast.Assign, ast.AnnAssign)):
        if node is variant_stmt:
            continue
        if isinstance(node, ast.Delete) and any(isinstance(t, ast.Attribute) and t.attr == base for t in node.targets):
            return node
        if isinstance(node, ast.Call):
            leaf = dotted_name(node.func).rsplit(".", 1)[-1]
            if any(isinstance(a, ast.Constant) and a.value == base for a in node.args) and \
                    (leaf in ("delattr", "setattr", "register_parameter", "register_buffer", "pop")
                     or re.search(r"replace|free|release|drop|delete|remove|swap", leaf, re.IGNORECASE)):
                return node
            if isinstance(node.func, ast.Attribute) and leaf in ("resize_", "set_") and \
                    re.search(rf"\b{re.escape(base)}\b", ast.unparse(node.func.value)):
                return node
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        hit = any((isinstance(t, ast.Attribute) and t.attr == base) or
                  (isinstance(t, ast.Attribute) and t.attr == "data" and isinstance(t.value, ast.Attribute)
                   and t.value.attr == base) or
                  (isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == base)
                  for t in targets)
        if not hit:
            continue
        if isinstance(node.value, ast.Constant) and node.value.value is None:
            return node
        reads = {n.attr for n in walk(node.value) if isinstance(n, ast.Attribute)}
        if variant in reads:
            return node  # the original now points at the variant
        same_home = home is not None and _inside(node, {home}, parents) and node.lineno > variant_stmt.lineno
        if same_home and base not in reads:
            return node
    return None


def _inside(node: ast.AST, funcs: set[ast.AST], parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if node in funcs:
            return True
    return False


@detector("weight-variant-double-pin")
def weight_variant_double_pin(review: ReviewInput) -> Iterable[Finding]:
    for f, tree in review.python_files(include_tests=False, added_matching=VARIANT_TEXT):
        added = f.added_lines
        base_text = review.base_text(f, "")
        parents = index_of(tree).parents
        init_funcs = {n for n in index_of(tree).of_type(FUNCTION_TYPES) if n.name == "__init__"}
        reported: set[str] = set()
        for stmt, owner, attr, value, _ in _variant_assignments(tree):
            if stmt.lineno not in added or attr in reported:
                continue
            m = VARIANT.match(attr)
            if not m or not WEIGHT.search(m.group("base")):
                continue
            base = m.group("base")
            if base_text and re.search(rf"\b{re.escape(attr)}\b", base_text):
                continue  # the variant already existed on base
            func = next((a for a in _ancestors(stmt, parents) if isinstance(a, FUNCTION_TYPES)), None)
            source = _derived_from(value, base, func)
            if source is None or value is None or _view_only(value, base):
                continue
            freed = _released(tree, base, attr, stmt, init_funcs, parents)
            if freed is not None or _says_no_copy(review.source.lines(f.path), stmt.lineno):
                continue
            reported.add(attr)
            yield Finding(
                rule="weight-variant-double-pin", path=f.path, line=stmt.lineno,
                problem=f"New weight variant `{owner}.{attr}` ({f.path}:{stmt.lineno}) is computed from "
                        f"`{ast.unparse(source)}` and stored next to it; nothing in {f.path} frees or replaces "
                        f"`{base}` afterwards.",
                impact="Both copies stay resident in device memory for the model's lifetime — for large MoE weights "
                       "that doubles their HBM footprint and surfaces as an OOM only at peak load.",
                action=f"Author must free or replace the original (`del {owner}.{base}`, or re-point `{base}` at the "
                       "variant) once the variant exists, or explain why both are needed.",
                tag="inferred",
                evidence=[Evidence(f.path, source.lineno, ast.unparse(source)[:120])],
            )


NO_COPY = lazy_re(r"zero[- ]copy|shares? (the )?storage|no (second|extra|additional) (weight )?copy|same storage|"
                     r"in[- ]place|aliases", re.IGNORECASE)


def _says_no_copy(lines: list[str], line: int) -> bool:
    """The author states, right above or on the line, that the variant shares the original's storage."""
    window = lines[max(0, line - 6):line]
    return any("#" in text and NO_COPY.search(text.split("#", 1)[1]) for text in window)


def _ancestors(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> Iterable[ast.AST]:
    while node in parents:
        node = parents[node]
        yield node
