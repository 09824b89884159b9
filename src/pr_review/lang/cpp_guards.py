"""Guards in C++/HIP/CUDA read through tree-sitter: checks, asserts, throws, zero-inits, contiguous calls.

A guard is what a deletion can weaken: `TORCH_CHECK(cond, …)`, `AITER_CHECK(…)`, `assert(…)`,
`TORCH_INTERNAL_ASSERT(…)`, `CHECK_*` input macros, `throw …` (with its enclosing `if` condition),
`torch::zeros`/`at::zeros`/`::zeros`/`.zero_()`/`.fill_(0)`, a `memset`/`hipMemset`/`hipMemsetAsync`/`cudaMemset`
of the value 0, and `.contiguous()`. Each comes with a normalised key
(so a reformatted copy matches), its condition, the identifiers it checks and its enclosing function.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING

from . import cpp
from .regex import lazy_re
from ..model import field, record

if TYPE_CHECKING:
    from tree_sitter import Node

CHECK_MACRO = lazy_re(r"^(?:TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|AITER_CHECK\w*|assert|CHECK_[A-Z0-9_]+|"
                         r"[A-Z][A-Z0-9]*_CHECK(?:_[A-Z0-9_]+)?)$")
NOT_GUARDS = {"HIP_CHECK", "HIP_CALL", "CUDA_CHECK", "HIPBLAS_CHECK", "HIPBLASLT_CHECK", "CHECK_HIP_ERROR",
              "C10_CUDA_CHECK", "C10_HIP_CHECK", "NCCL_CHECK", "RCCL_CHECK"}  # wrap an API call, not a condition
IDENT = lazy_re(r"(?<![\w.])[A-Za-z_]\w*")
CPP_NOISE = {"true", "false", "nullptr", "NULL", "sizeof", "static_cast", "reinterpret_cast", "const", "int",
             "int64_t", "int32_t", "size_t", "float", "double", "bool", "auto", "std", "torch", "at", "c10",
             "aiter", "dim", "size", "numel", "is_contiguous", "dtype", "scalar_type", "kFloat", "kHalf",
             "kBFloat16", "value", "has_value", "data_ptr", "defined", "stride", "device", "is_cuda", "get"}


@record
class CppGuard:
    kind: str  # check | throw | zeros | contiguous
    line: int  # 1-based first line of the guarding statement
    end_line: int
    key: str  # whitespace-free text of the guard, for exact matching
    text: str  # as written (first line, trimmed)
    condition: str  # the checked condition ('' for zeros/contiguous)
    subjects: set[str] = field(default_factory=set)
    function: str = ""
    target: str = ""  # assignment target of a zero-init / contiguous call; the buffer an in-place zeroing clears
    message: str = ""  # the literal text of the check's message, for recognising a reworded copy
    inplace: bool = False  # a zeroing of an existing buffer (`.zero_()`, `.fill_(0)`, memset), not an allocation


MEMSETS = {"memset", "hipMemset", "hipMemsetAsync", "cudaMemset", "cudaMemsetAsync", "hipMemsetD8", "hipMemsetD8Async",
           "hipMemsetD32", "hipMemsetD32Async"}


def _text(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _function_name(node: Node) -> str:
    cur: Node | None = node
    while cur is not None:
        if cur.type == "function_definition":
            decl = cur.child_by_field_name("declarator")
            while decl is not None and decl.type not in ("identifier", "field_identifier", "qualified_identifier",
                                                         "destructor_name", "operator_name"):
                inner = decl.child_by_field_name("declarator")
                if inner is None:
                    break
                decl = inner
            return _text(decl)
        cur = cur.parent
    return ""


def _statement(node: Node) -> Node:
    """The enclosing statement or declaration, for line spans and assignment targets."""
    cur = node
    while cur.parent is not None and not (cur.type.endswith("_statement") or cur.type == "declaration"
                                          or cur.type == "field_declaration"):
        cur = cur.parent
    return cur


def _target(stmt: Node) -> str:
    if stmt.type == "declaration":
        for child in stmt.children:
            if child.type == "init_declarator":
                decl = child.child_by_field_name("declarator")
                return _text(decl).lstrip("*&")
    if stmt.type == "expression_statement" and stmt.children:
        expr = stmt.children[0]
        if expr.type == "assignment_expression":
            return _squash(_text(expr.child_by_field_name("left")))
    return ""


def subjects_of(text: str) -> set[str]:
    return {t for t in IDENT.findall(re.sub(r'"(?:\\.|[^"\\])*"', "", text)) if t not in CPP_NOISE}


def _nodes(root: Node, lines: list[int] | None, functions: set[str]):
    """The syntax nodes to inspect: all of them, or those touching `lines` or inside one of `functions`."""
    stack = [(root, lines is None)]
    while stack:
        node, keep = stack.pop()
        if not keep:
            if node.type == "function_definition" and functions and _function_name(node) in functions:
                keep = True
            else:
                first, last = node.start_point[0] + 1, node.end_point[0] + 1
                i = bisect_left(lines, first)  # type: ignore[arg-type]
                if not (i < len(lines) and lines[i] <= last):  # type: ignore[arg-type]
                    continue
        yield node
        stack.extend((child, keep) for child in reversed(node.children))


def guards(text: str, lines: set[int] | None = None, functions: set[str] | None = None) -> list[CppGuard]:
    """Guards in a C++ source text: all, or those on `lines` and inside `functions` (function names)."""
    tree = cpp.parse(text)
    out: list[CppGuard] = []
    wanted = sorted(lines) if lines is not None else None
    for node in _nodes(tree.root_node, wanted, functions or set()):
        if node.type == "call_expression":
            func = node.child_by_field_name("function")
            name = _text(func)
            args = node.child_by_field_name("arguments")
            bare = name.rsplit("::", 1)[-1]
            if func is not None and func.type == "field_expression":
                bare = _text(func.child_by_field_name("field"))
            if func is not None and func.type == "identifier" and CHECK_MACRO.match(name) and name not in NOT_GUARDS:
                arg_nodes = [c for c in (args.named_children if args is not None else []) if c.type != "comment"]
                cond = _text(arg_nodes[0]) if arg_nodes else ""
                message = " ".join(_text(a).strip('"') for a in arg_nodes[1:] if a.type == "string_literal")
                out.append(CppGuard("check", node.start_point[0] + 1, node.end_point[0] + 1,
                                    name + _squash(_text(args)), _first_line(_text(node)), cond,
                                    subjects_of(cond), _function_name(node), message=message))
            elif func is not None and bare in ("zeros", "zeros_like") and func.type != "field_expression":
                stmt = _statement(node)
                out.append(CppGuard("zeros", stmt.start_point[0] + 1, stmt.end_point[0] + 1, _squash(_text(node)),
                                    _first_line(_text(stmt)), "", subjects_of(_text(args)), _function_name(node),
                                    _target(stmt)))
            elif func is not None and (cleared := _cleared(node, func, bare, args)) is not None:
                stmt = _statement(node)
                out.append(CppGuard("zeros", stmt.start_point[0] + 1, stmt.end_point[0] + 1, _squash(_text(node)),
                                    _first_line(_text(stmt)), "", subjects_of(_text(cleared)), _function_name(node),
                                    _target(stmt) or _buffer(cleared), inplace=True))
            elif func is not None and func.type == "field_expression" and bare == "contiguous":
                stmt = _statement(node)
                obj = _text(func.child_by_field_name("argument"))
                out.append(CppGuard("contiguous", node.start_point[0] + 1, node.end_point[0] + 1,
                                    _squash(_text(node)), _first_line(_text(stmt)), "", subjects_of(obj),
                                    _function_name(node), _target(stmt)))
        elif node.type == "throw_statement":
            cond = ""
            parent = node.parent
            if parent is not None and parent.type == "compound_statement":
                parent = parent.parent
            if parent is not None and parent.type == "if_statement":
                cond = _text(parent.child_by_field_name("condition")).strip("() ")
            line = (parent.start_point[0] + 1) if cond else node.start_point[0] + 1
            message = " ".join(m.strip('"') for m in re.findall(r'"(?:\\.|[^"\\])*"', _text(node)))
            out.append(CppGuard("throw", line, node.end_point[0] + 1, "throw" + _squash(cond) + "|" + _squash(_text(node)),
                                _first_line(_text(node)), cond, subjects_of(cond), _function_name(node),
                                message=message))
    return out


def _zero(node: Node | None) -> bool:
    return node is not None and node.type == "number_literal" and \
        re.fullmatch(r"0+(?:[xX]0+)?[uUlL]*|0*\.0*[fF]?", _text(node)) is not None


def _cleared(node: Node, func: Node, bare: str, args: Node | None) -> Node | None:
    """The buffer expression an in-place zeroing clears: the object of `.zero_()` / `.fill_(0)`, the
    destination of a memset whose value is 0; None for any other call."""
    values = [c for c in (args.named_children if args is not None else []) if c.type != "comment"]
    if func.type == "field_expression" and (bare == "zero_" and not values or bare == "fill_" and len(values) == 1
                                            and _zero(values[0])):
        return func.child_by_field_name("argument")
    if bare in MEMSETS and len(values) >= 2 and _zero(values[1]):
        return values[0]
    return None


def _buffer(node: Node) -> str:
    """The variable a buffer expression names: `out` in `out->ptr`, `ws.data_ptr()`, `&x`,
    `reinterpret_cast<char*>(ws.data_ptr()) + off`, `buf[i]`; a member's name when it is `this->`'s."""
    while True:
        if node.type in ("field_expression", "subscript_expression", "pointer_expression"):
            inner = node.child_by_field_name("argument")
            if node.type == "field_expression" and inner is not None and inner.type == "this":
                return _text(node.child_by_field_name("field"))
        elif node.type == "call_expression":
            func = node.child_by_field_name("function")
            args = [c for c in node.child_by_field_name("arguments").named_children if c.type != "comment"]
            inner = func.child_by_field_name("argument") if func is not None and func.type == "field_expression" \
                else (args[0] if len(args) == 1 else None)  # `x.data_ptr()`, `static_cast<void*>(x)`
        elif node.type == "binary_expression":
            inner = node.child_by_field_name("left")
        elif node.type == "cast_expression":
            inner = node.child_by_field_name("value")
        elif node.type == "parenthesized_expression":
            inner = node.named_children[0] if node.named_children else None
        else:
            return _text(node) if node.type in ("identifier", "qualified_identifier") else ""
        if inner is None:
            return ""
        node = inner


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""
