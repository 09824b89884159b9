"""C++/HIP/CUDA through tree-sitter: a real parse, so comments, strings and guards are told apart."""
from __future__ import annotations

import bisect
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Iterator

from . import Unparsable

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree


@lru_cache(maxsize=1)
def _parser() -> Parser:
    """Imported on the first C++ parse, not with this module: a PR without C++ never loads tree-sitter
    (and `tree_sitter_cpp`'s package imports importlib.resources, zipfile and tempfile, ~5 ms on a runner)."""
    import tree_sitter_cpp
    from tree_sitter import Language, Parser
    return Parser(Language(tree_sitter_cpp.language()))


@lru_cache(maxsize=32)
def parse(text: str) -> Tree:
    """The syntax tree of PR content; `Unparsable` when tree-sitter fails or gives up (it returns None).

    Memoised on the text itself: each side of a file is parsed once per review however many
    detectors, evidence collectors and triage read it (the cache holds a few dozen recent texts, so
    memory stays bounded on a PR of hundreds of files). Trees are read-only by convention: nobody
    calls `Tree.edit`."""
    try:
        tree = _parser().parse(text.encode("utf-8"))
    except (ValueError, MemoryError, RuntimeError) as exc:
        raise Unparsable(f"not parsed as C++ ({type(exc).__name__})") from exc
    if tree is None:
        raise Unparsable("not parsed as C++ (tree-sitter gave up)")
    return tree


def walk(node: Node) -> Iterator[Node]:
    cursor = node.walk()
    visited_children = False
    while True:
        if not visited_children:
            yield cursor.node
            if cursor.goto_first_child():
                continue
        if cursor.goto_next_sibling():
            visited_children = False
        elif cursor.goto_parent():
            visited_children = True
        else:
            return


# Node types whole-tree questions ask for. The first such question walks the tree once and keeps
# these (a few percent of a tree's nodes); later ones read the lists.
INDEXED_TYPES = frozenset({"comment", "function_definition", "struct_specifier", "class_specifier",
                           "string_literal", "call_expression", "assignment_expression"})


@lru_cache(maxsize=32)
def _by_type(tree: Tree) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = {t: [] for t in INDEXED_TYPES}
    for node in walk(tree.root_node):
        kept = out.get(node.type)
        if kept is not None:
            kept.append(node)
    return out


def nodes_of_type(tree: Tree, kind: str) -> list[Node]:
    """Every node of one of `INDEXED_TYPES`, in `walk` order (pre-order), from one walk per tree."""
    return _by_type(tree)[kind]


def comments(tree: Tree) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of every comment, 1-based lines."""
    return [(node.start_point[0] + 1, node.end_point[0] + 1, node.text.decode("utf-8", "replace") if node.text else "")
            for node in nodes_of_type(tree, "comment")]


def function_spans(tree: Tree) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function definition, 1-based."""
    spans = []
    for node in nodes_of_type(tree, "function_definition"):
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.type not in ("identifier", "field_identifier",
                                                                   "qualified_identifier", "operator_name",
                                                                   "destructor_name"):
            declarator = declarator.child_by_field_name("declarator")
        name = declarator.text.decode("utf-8", "replace") if declarator is not None and declarator.text else "?"
        spans.append((node.start_point[0] + 1, node.end_point[0] + 1, name))
    return spans


# --- helpers for detectors that read guards and literals --------------------------------------

def text_of(node: Node | None) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def callee_name(call: Node) -> str:
    """The called name of a call_expression: `end_sync<n, true>(…)` → `end_sync`; `ns::f(…)`, `obj.f(…)` → `f`."""
    return re.sub(r"<.*$", "", text_of(call.child_by_field_name("function"))).rsplit("::", 1)[-1].rsplit(".", 1)[-1]


def line_of(node: Node) -> int:
    """1-based first line of a node."""
    return node.start_point[0] + 1


def ancestors(node: Node) -> Iterator[Node]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


FUNCTION_TYPES = ("function_definition", "lambda_expression")


def enclosing_function(node: Node) -> Node | None:
    for a in ancestors(node):
        if a.type == "function_definition":
            return a
    return None


def function_name(func: Node) -> str:
    """The declarator name of a function_definition (`ns::Cls::fn` → `fn`), '' when not found."""
    declarator = func.child_by_field_name("declarator")
    while declarator is not None and declarator.type not in ("function_declarator",):
        declarator = declarator.child_by_field_name("declarator")
    if declarator is None:
        return ""
    name = declarator.child_by_field_name("declarator")
    return text_of(name).rsplit("::", 1)[-1]


def parameters(func: Node) -> list[Node]:
    """A function_definition's parameter declarations, in order."""
    declarator = func.child_by_field_name("declarator")
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    params = declarator.child_by_field_name("parameters") if declarator is not None else None
    return [p for p in (params.named_children if params is not None else [])
            if p.type in ("parameter_declaration", "optional_parameter_declaration")]


def parameter_name(param: Node) -> str:
    """The identifier of a parameter's declarator (`at::Tensor &q` → `q`, `std::optional<at::Tensor> out_ =
    std::nullopt` → `out_`); '' for an unnamed one."""
    inner = param.child_by_field_name("declarator")
    ident = next((n for n in walk(inner) if n.type == "identifier"), None) if inner is not None else None
    return text_of(ident)


def parameter_names(func: Node) -> list[str]:
    """The names of a function_definition's parameters in order ('' for an unnamed one)."""
    return [parameter_name(p) for p in parameters(func)]


def enclosing_names(node: Node) -> list[str]:
    """Names of the functions, classes, structs and namespaces around a node, innermost first."""
    out = []
    for a in ancestors(node):
        if a.type == "function_definition":
            out.append(function_name(a))
        elif a.type in ("struct_specifier", "class_specifier", "namespace_definition"):
            out.append(text_of(a.child_by_field_name("name")))
    return [n for n in out if n]


def guards(node: Node, stop: Node | None = None) -> list[tuple[str, str]]:
    """The conditions that must hold for `node` to be reached or selected, innermost first:
    (kind, condition text) for enclosing `if`/`if constexpr`, ternaries, `switch` cases,
    `#if`/`#ifdef`/`#elif`/`#else` and explicit template specialisations. Stops at `stop`."""
    out: list[tuple[str, str]] = []
    child = node
    for a in ancestors(node):
        if stop is not None and a == stop:
            break
        if a.type == "if_statement":
            cond = a.child_by_field_name("condition")
            if cond is not None and child != cond:
                constexpr = any(c.type == "constexpr" for c in a.children)
                out.append(("if constexpr" if constexpr else "if", text_of(cond)))
        elif a.type == "conditional_expression":
            cond = a.child_by_field_name("condition")
            if cond is not None and child != cond:
                out.append(("ternary", text_of(cond)))
        elif a.type == "case_statement":
            value = a.child_by_field_name("value")
            out.append(("case", text_of(value) if value is not None else "default"))
        elif a.type in ("preproc_if", "preproc_elif"):
            cond = a.child_by_field_name("condition")
            out.append(("#if", text_of(cond)))
        elif a.type in ("preproc_ifdef", "preproc_elifdef"):
            name = a.child_by_field_name("name")
            out.append(("#ifdef", text_of(name)))
        elif a.type == "preproc_else" and a.parent is not None:
            cond = a.parent.child_by_field_name("condition") or a.parent.child_by_field_name("name")
            out.append(("#else", text_of(cond)))
        elif a.type == "template_declaration":
            params = a.child_by_field_name("parameters")
            if params is not None and params.named_child_count == 0:
                # `template <> struct X<fp8_e4m3fnuz_t>`: the specialisation's arguments are the guard
                for c in a.named_children:
                    if c != params:
                        out.append(("specialization", text_of(c).split("{", 1)[0]))
                        break
        child = a
    return out


def number_value(node: Node) -> float | None:
    """The value of a number_literal (`448.0f`, `240.`, `0x1C0`), or None when it is not one."""
    if node.type != "number_literal":
        return None
    raw = text_of(node).replace("'", "").lower()
    try:
        if raw.startswith(("0x", "0b")) or (raw.startswith("0") and raw.isdigit() and len(raw) > 1):
            return float(int(raw.rstrip("ul"), 0))
        return float(raw.rstrip("flu"))
    except ValueError:
        return None


def is_float_literal(node: Node) -> bool:
    raw = text_of(node).lower()
    return node.type == "number_literal" and not raw.startswith("0x") and ("." in raw or "e" in raw or raw.endswith("f"))


def string_value(node: Node) -> str | None:
    """The content of a plain string_literal, or None."""
    if node.type != "string_literal":
        return None
    return "".join(text_of(c) for c in node.named_children if c.type in ("string_content", "escape_sequence"))


def nodes_over_lines(root: Node, lines: set[int]) -> Iterator[tuple[Node, bool]]:
    """Each node whose span holds one of `lines` (1-based), in document order, with whether it starts on
    one; only subtrees that overlap the lines are entered — a changed line in a 5,000-line header costs
    a few hundred node visits, not the file."""
    if not lines:
        return
    ordered = sorted(lines)
    stack = [root]
    while stack:
        node = stack.pop()
        first, last = node.start_point[0] + 1, node.end_point[0] + 1
        i = bisect.bisect_left(ordered, first)
        if i == len(ordered) or ordered[i] > last:
            continue  # no changed line inside this subtree
        yield node, ordered[i] == first
        stack.extend(reversed(node.children))


def nodes_on_lines(root: Node, lines: set[int], types: tuple[str, ...] = ()) -> Iterator[Node]:
    """Nodes that start on one of `lines` (1-based), of one of `types` when given."""
    for node, starts in nodes_over_lines(root, lines):
        if starts and (not types or node.type in types):
            yield node
