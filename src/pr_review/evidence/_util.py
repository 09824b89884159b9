"""Small helpers shared by evidence collectors: diff positions, blob kinds, test-file shapes."""
from __future__ import annotations

import ast

from ..git.diff import ChangedFile
from ..lang import one_line
from ..source import Side, Source
from ..lang.regex import lazy_re

TEST_BASENAME = lazy_re(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")


def head_position(f: ChangedFile, base_line: int) -> int:
    """The head-side line where a deleted base line used to be: the first line that replaced it, else the
    first line after the deletion point."""
    offset = 0
    for base_start, base_len, head_start, head_len in f.hunks:
        if base_line < base_start:
            break
        if base_line < base_start + max(base_len, 1):
            removed = {n for n, _ in f.removed if base_start <= n < base_start + base_len}
            added = {n for n, _ in f.added if head_start <= n < head_start + head_len}
            context_before = sum(1 for n in range(base_start, base_line) if n not in removed)
            head_context = [n for n in range(head_start, head_start + head_len) if n not in added]
            prev_ctx = head_context[context_before - 1] if 0 < context_before <= len(head_context) else head_start - 1
            next_ctx = head_context[context_before] if context_before < len(head_context) else head_start + head_len
            between = sorted(n for n in added if prev_ctx < n < next_ctx)
            return max(1, between[0] if between else next_ctx)
        offset = (head_start + head_len) - (base_start + base_len)
    return max(1, base_line + offset)


def replacement_block(f: ChangedFile, base_line: int) -> list[int]:
    """The head lines the PR added where a deleted base line stood (empty for a pure deletion)."""
    for base_start, base_len, head_start, head_len in f.hunks:
        if base_start <= base_line < base_start + max(base_len, 1):
            removed = {n for n, _ in f.removed if base_start <= n < base_start + base_len}
            added = {n for n, _ in f.added if head_start <= n < head_start + head_len}
            context_before = sum(1 for n in range(base_start, base_line) if n not in removed)
            head_context = [n for n in range(head_start, head_start + head_len) if n not in added]
            prev_ctx = head_context[context_before - 1] if 0 < context_before <= len(head_context) else head_start - 1
            next_ctx = head_context[context_before] if context_before < len(head_context) else head_start + head_len
            return sorted(n for n in added if prev_ctx < n < next_ctx)
    return []


def blob_kind(source: Source, path: str, side: Side = "head") -> str | None:
    """'blob', 'tree' or None (absent), without recording an unreadable file as not checked."""
    blob = source.catfile.read(source.rev(side), path)
    if blob.text is not None:
        return "blob"
    if blob.reason.startswith("is a tree"):
        return "tree"
    if blob.reason == "not present at this revision" or blob.reason.startswith("path contains"):
        return None
    return "blob"  # present but not text (too large, binary)


def is_test_file(path: str) -> bool:
    """A file pytest would collect by its default name patterns."""
    return bool(TEST_BASENAME.search(path))


def collectable_tests(tree: ast.Module, prefixes: tuple[str, ...] = ("test",),
                      class_prefixes: tuple[str, ...] = ("Test",)) -> list[ast.AST]:
    """Functions and methods pytest collects by name from a module (the default `test*` / `Test*`)."""
    out: list[ast.AST] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith(prefixes):
            out.append(node)
        elif isinstance(node, ast.ClassDef):
            is_testcase = any(_base_name(b).endswith("TestCase") for b in node.bases)
            if not (node.name.startswith(class_prefixes) or is_testcase):
                continue
            if any(isinstance(s, ast.FunctionDef) and s.name == "__init__" for s in node.body) and not is_testcase:
                continue  # pytest skips classes with a constructor
            out.extend(s for s in node.body
                       if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name.startswith(prefixes))
    return out


def _base_name(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def short(text: str, limit: int = 110) -> str:
    return one_line(text, limit)
