"""pinned-struct-abi-shift (D11): a field inserted, removed or reordered anywhere but the end of a
struct whose layout the tree pins with `offsetof(` / `static_assert(sizeof(`.

The two sides of every struct the diff touches are parsed with tree-sitter and their field lists
compared: an append leaves every earlier offset where it was and is quiet, and so is a PR that
changes the pinning assertions together with the fields.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator

from ..git.diff import ChangedFile
from ..lang import cpp
from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

STRUCT_TYPES = ("struct_specifier", "class_specifier")
# A line holding only an upper-case name: an object-like macro invoked with no `;` (aiter's
# `AITER_CTYPES_ERROR_DEF`, which expands to definitions). tree-sitter cannot know what it expands to and reads
# it as the type of whatever follows: `NAME struct S {...}` becomes a function named `S`, and a static_assert
# after it is swallowed the same way, so the struct's layout and its pins were invisible.
BARE_MACRO = lazy_re(r"^[ \t]*[A-Z_][A-Z0-9_]*(?=[ \t]*(//[^\n]*)?$)", re.M)


def _parse(text: str) -> cpp.Tree:
    """The tree of `text` with every bare macro line blanked (same lines and columns); the shared, memoised
    tree itself when there is none."""
    return cpp.parse(BARE_MACRO.sub(lambda m: " " * len(m.group()), text))


def _structs(text: str) -> dict[str, tuple[int, int, list[tuple[str, int]]]]:
    """struct name → (first line, last line, [(field name, line)]) for structs with a body."""
    tree = _parse(text)
    out: dict[str, tuple[int, int, list[tuple[str, int]]]] = {}
    specifiers = sorted((n for kind in STRUCT_TYPES for n in cpp.nodes_of_type(tree, kind)),
                        key=lambda n: (n.start_byte, -n.end_byte))  # the order of a walk: outer first
    for node in specifiers:
        name = cpp.text_of(node.child_by_field_name("name"))
        body = node.child_by_field_name("body")
        if not name or body is None:
            continue
        fields = list(_slots(body))
        out.setdefault(name, (cpp.line_of(node), node.end_point[0] + 1, fields))
    return out


def _slots(body) -> Iterator[tuple[str, int]]:
    """The layout slots of a field list, in order: each declared field (every declarator of a declaration:
    `uint8_t a:1, b:1` is two), and an anonymous union or struct member as one slot named after its first
    field (`{flagBits}`): what changes inside it moves nothing after it unless its size changes."""
    for member in body.named_children:
        if member.type != "field_declaration" or any(c.type == "function_declarator" for c in cpp.walk(member)):
            continue
        if any(c.type == "storage_class_specifier" and cpp.text_of(c) == "static" for c in member.children):
            continue  # a static member has no place in the layout
        declarators = member.children_by_field_name("declarator")
        inner = member.child_by_field_name("type")
        if not declarators and inner is not None and inner.type in ("union_specifier", "struct_specifier") \
                and inner.child_by_field_name("body") is not None:
            first = next(_slots(inner.child_by_field_name("body")), None)
            if first is not None:
                yield "{" + first[0] + "}", cpp.line_of(member)
            continue
        for declarator in declarators:
            idents = [n for n in cpp.walk(declarator) if n.type in ("field_identifier", "identifier")]
            if idents:
                yield cpp.text_of(idents[0]), cpp.line_of(member)


def _touched_names(text: str, lines: set[int]) -> set[str]:
    """Names of the structs/classes whose body holds one of `lines`."""
    out: set[str] = set()
    for node, _ in cpp.nodes_over_lines(_parse(text).root_node, lines):
        if node.type in STRUCT_TYPES and node.child_by_field_name("body") is not None:
            name = cpp.text_of(node.child_by_field_name("name"))
            if name:
                out.add(name)
    return out


def _touched(span: tuple[int, int], lines: set[int]) -> bool:
    return any(span[0] <= n <= span[1] for n in lines)


def _pin_pattern(name: str) -> str:
    return rf"offsetof\s*\(\s*(\w+::)*{name}\s*,|sizeof\s*\(\s*(\w+::)*{name}\s*\)"


def _pins(review: ReviewInput, name: str) -> list[tuple[str, int, str]]:
    """The assertions in the base tree that pin `name`'s layout (see `_pins_layout`)."""
    out = []
    for path, line, text in review.source.grep(_pin_pattern(name), "base"):
        if "static_assert" not in text.lower():
            continue
        source = review.source.text(path, "base")
        if source is not None and any(_pins_layout(a, name) for a in _assertions_on(source, line)):
            out.append((path, line, text))
    return out


def _assertions_on(text: str, line: int) -> Iterator:
    """The static assertions (`static_assert(...)`, `_Static_assert(...)`, a STATIC_ASSERT macro) whose text
    holds `line`."""
    try:
        tree = _parse(text)
    except cpp.Unparsable:
        return
    for node, _ in cpp.nodes_over_lines(tree.root_node, {line}):
        if node.type == "static_assert_declaration" or (
                node.type == "call_expression" and cpp.callee_name(node).lower().endswith("static_assert")):
            yield node


def _pins_layout(assertion, name: str) -> bool:
    """Whether an assertion fixes where `name`'s fields sit: an `offsetof(name, field)` or `sizeof(name)`
    compared for equality with something outside the struct (`== 48`, `== sizeof(Mirror)`). A bound
    (`sizeof(X) <= 128`, `% 8 == 0`, a count of elements that fit in a buffer) only caps the size, and two
    of the struct's own offsets compared (`offsetof(S, a) == offsetof(S, b)`: members overlaid in a union)
    only tie its fields together: fields may move under either, by design."""
    pattern = re.compile(rf"^(\w+::)*{name}$|^(struct|class)\s+(\w+::)*{name}$")
    for node in cpp.walk(assertion):
        if node.type == "offsetof_expression":
            described = node.child_by_field_name("type")
            if described is None or not pattern.search(cpp.text_of(described).strip()):
                continue
        elif node.type != "sizeof_expression" or not _sized(node, pattern):
            continue
        other = _equated_with(node)
        if other is not None and not _measures(other, pattern):
            return True
    return False


def _equated_with(node):
    """The other operand when `node` (through parentheses) is a side of `==` or `!=`, else None."""
    child, parent = node, node.parent
    while parent is not None and parent.type == "parenthesized_expression":
        child, parent = parent, parent.parent
    if parent is None or parent.type != "binary_expression" or \
            cpp.text_of(parent.child_by_field_name("operator")) not in ("==", "!="):
        return None
    left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
    return right if left == child else left


def _measures(expression, pattern: re.Pattern[str]) -> bool:
    """Whether `expression` holds an offsetof or sizeof of the struct `pattern` names."""
    for node in cpp.walk(expression):
        if node.type == "offsetof_expression":
            described = node.child_by_field_name("type")
            if described is not None and pattern.search(cpp.text_of(described).strip()):
                return True
        elif node.type == "sizeof_expression" and _sized(node, pattern):
            return True
    return False


def _sized(node, pattern: re.Pattern[str]) -> bool:
    operand = node.child_by_field_name("type") or node.child_by_field_name("value")
    while operand is not None and operand.type == "parenthesized_expression" and operand.named_child_count == 1:
        operand = operand.named_children[0]
    return operand is not None and bool(pattern.search(cpp.text_of(operand).strip()))


HEADER = lazy_re(r"\.(h|hh|hpp|hxx|cuh|inc|inl)$")


def _sees(review: ReviewInput, pin_path: str, struct_path: str) -> bool:
    """Whether a pin in `pin_path` can be about the struct defined in `struct_path`: the same file, or a file
    that includes the header defining it (a struct in a `.cu` is that translation unit's own)."""
    if pin_path == struct_path:
        return True
    if not HEADER.search(struct_path):
        return False
    header = struct_path.rsplit("/", 1)[-1]
    text = review.source.text(pin_path, "base") or ""
    return bool(re.search(rf'#\s*include\s*[<"]([^">]*/)?{re.escape(header)}[">]', text))


def _assertions_changed(review: ReviewInput, name: str) -> bool:
    pin = re.compile(rf"(offsetof\s*\(\s*(\w+::)*{name}\s*,|sizeof\s*\(\s*(\w+::)*{name}\s*\))")
    return any(pin.search(t) for f in review.files for _, t in f.added + f.removed)


def _shift(base_fields: list[str], head_fields: list[str]) -> tuple[str, int] | None:
    """How the layout moved and the index of the first head field that no longer sits where its base
    counterpart did, or None when nothing before the end moves: an append, the last fields dropped (no field
    follows them) or replaced by new ones."""
    kept = next((i for i, (b, h) in enumerate(zip(base_fields, head_fields)) if b != h),
                min(len(base_fields), len(head_fields)))
    if kept == len(base_fields) or kept == len(head_fields):
        return None  # one side is a prefix of the other: fields appended or dropped at the end, or no change
    if not set(base_fields[kept:]) & set(head_fields) and not set(head_fields[kept:]) & set(base_fields):
        return None  # the last fields replaced by new ones (`padding[4]` → `use_count`): nothing after them moves
    inserted = [n for n in head_fields if n not in base_fields]
    removed = [n for n in base_fields if n not in head_fields]
    if removed:
        return "removes " + ", ".join(f"`{n}`" for n in removed), kept
    if inserted:
        first = next(i for i, n in enumerate(head_fields) if n not in base_fields)
        after = head_fields[first - 1] if first else None
        return ("inserts " + ", ".join(f"`{n}`" for n in inserted)
                + (f" after `{after}`" if after else " at the start") + ", before fields that already existed"), kept
    return f"moves `{head_fields[kept]}` ahead of `{base_fields[kept]}` (reorders its fields)", kept


def _touched_structs(review: ReviewInput, f: ChangedFile) -> set[str]:
    """The names of the structs the diff touches, found by descending only into subtrees that hold a
    changed line (cheap: both sides are read whole only for those the tree pins)."""
    head_text = review.source.text(f.path)
    base_text = review.base_text(f)
    if head_text is None or base_text is None or not re.search(r"\b(struct|class)\b", head_text):
        return set()
    return _touched_names(head_text, f.added_lines) | _touched_names(base_text, {n for n, _ in f.removed})


def _shifted_structs(review: ReviewInput, f: ChangedFile) -> Iterator[tuple[str, str, int]]:
    touched = _touched_structs(review, f)
    if not touched:
        return
    head_text, base_text = review.source.text(f.path), review.base_text(f)
    assert head_text is not None and base_text is not None
    added, removed = f.added_lines, {n for n, _ in f.removed}
    head, base = _structs(head_text), _structs(base_text)
    for name, (start, end, fields) in head.items():
        if name not in touched or name not in base or not (_touched((start, end), added) or _touched(base[name][:2], removed)):
            continue
        moved = _shift([n for n, _ in base[name][2]], [n for n, _ in fields])
        if moved is None:
            continue
        how, first = moved
        yield name, how, fields[first][1]  # the first field out of place: inserted, moved, or the one after a removal


@detector("pinned-struct-abi-shift")
def pinned_struct_abi_shift(review: ReviewInput) -> Iterable[Finding]:
    files = [f for f in review.changed("cpp") if not f.is_new]
    # Layouts first (both sides come from the shared parse), pins only for the structs whose layout moved:
    # the tree-wide search runs for the rare PR that shifts a struct, not for every touched one.
    shifted = {f.path: list(_shifted_structs(review, f)) for f in files}
    names = sorted({name for found in shifted.values() for name, _, _ in found})
    if not names:
        return
    review.source.prefetch_grep([_pin_pattern(n) for n in names], "base")  # one read of the base tree
    for f in files:
        for name, how, line in shifted[f.path]:
            if _assertions_changed(review, name):
                continue  # the PR moved the pins with the fields: the right shape
            pins = [p for p in _pins(review, name) if _sees(review, p[0], f.path)]
            if not pins:
                continue  # no pin, or only pins on another struct of the same name (each .cu its own `KernelArgs`)
            path, pin_line, pin_text = pins[0]
            yield Finding(
                rule="pinned-struct-abi-shift", path=f.path, line=line,
                problem=f"This PR {how} in `{name}`, whose layout the tree pins ({path}:{pin_line}: "
                        f"`{pin_text.strip()[:100]}`"
                        + (f" and {len(pins) - 1} more" if len(pins) > 1 else "")
                        + "); the assertions are not updated, so every later field moves.",
                impact="Separately built code objects read the struct at fixed offsets: the build breaks on the "
                       "assertion, or, where it is bypassed, kernels launch with shifted arguments.",
                action="Author must append the new fields at the end, or update the assertions and rebuild the "
                       "code objects that depend on the layout.",
                tag="verified", evidence=[Evidence(path, pin_line, pin_text.strip(), side="base")],
            )
