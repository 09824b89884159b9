"""Which lines of a file are code, and their text with comments blanked out.

Comments, docstrings and blank lines are prose; a line `x = 1  # why` is code whose code text is
`x = 1`, so a diff that only edits comments reduces to nothing (aiter#4062).
"""
from __future__ import annotations

import ast
import tokenize

from . import Unparsable, cpp
from .index import index_of
from .python import tokens

COMMENT_PREFIXES = {"shell": ("#",), "config": ("#", "//"), "text": ()}


def code_lines(text: str, language: str, tree: ast.Module | None = None) -> dict[int, str] | None:
    """1-based line → code text (comments removed); None when the text cannot be parsed.

    `tree` is the already-parsed Python module when the caller has one (parsing is the cost)."""
    if language == "python":
        return _python(text, tree)
    if language == "cpp":
        try:
            return _cpp(text)
        except Unparsable:
            return None
    if language == "text":
        return {}
    prefixes = COMMENT_PREFIXES.get(language, ("#",))
    return {i: line for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.strip().startswith(prefixes)}


def _python(text: str, tree: ast.Module | None) -> dict[int, str] | None:
    if tree is None:
        return None
    index = index_of(tree)
    docstrings: set[tuple[int, int]] = set()
    for kind in (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef):
        for node in index.of_type(kind):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstrings.add((first.lineno, first.col_offset))
    prose: dict[int, list[tuple[int, int | None]]] = {}  # row → (start, end) columns to blank; None: to the end
    try:
        for tok in tokens(text):
            if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and tok.start in docstrings):
                (srow, scol), (erow, ecol) = tok.start, tok.end
                for row in range(srow, erow + 1):
                    prose.setdefault(row, []).append((scol if row == srow else 0, ecol if row == erow else None))
    except Unparsable:
        return None
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        code = _blank(line, prose[i]).rstrip() if i in prose else line.rstrip()
        if code.strip():
            out[i] = code
    return out


def _blank(line: str, spans: list[tuple[int, int | None]]) -> str:
    chars = list(line)
    for lo, hi in spans:
        for c in range(lo, len(chars) if hi is None else min(hi, len(chars))):
            chars[c] = " "
    return "".join(chars)


def _cpp(text: str) -> dict[int, str]:
    data = bytearray(text.encode("utf-8"))
    for node in cpp.walk(cpp.parse(text).root_node):
        if node.type == "comment":
            for i in range(node.start_byte, node.end_byte):
                if data[i] not in (10, 13):
                    data[i] = 32
    return {i: line.rstrip() for i, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1) if line.strip()}
