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
from .regex import lazy_re

COMMENT_PREFIXES = {"shell": ("#",), "config": ("#", "//"), "text": ()}


def code_lines(text: str, language: str, tree: ast.Module | None = None,
               wanted: set[int] | None = None) -> dict[int, str] | None:
    """1-based line → code text (comments removed); None when the text cannot be parsed.

    `tree` is the already-parsed Python module when the caller has one (parsing is the cost).
    `wanted`: the caller reads only these lines, so Python can often skip tokenizing the file."""
    if language == "python":
        if tree is not None and wanted is not None:
            plain = _python_without_tokens(text, tree, wanted)
            if plain is not None:
                return plain
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


# Line breaks `str.splitlines` honours but the parser does not: line numbers would disagree.
OTHER_BREAKS = lazy_re("[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _python_without_tokens(text: str, tree: ast.Module, wanted: set[int]) -> dict[int, str] | None:
    """`_python`'s answer for the `wanted` lines, from the tree alone: docstrings are known from the
    tree (their span blanked, as `_python` blanks their token), and outside a string literal `#`
    always starts a comment. None when tokenizing must decide (a docstring that is not one literal,
    or a `#` inside a string's span), which is exact because a `#` between two implicitly
    concatenated strings also lies inside such a span."""
    if OTHER_BREAKS.search(text):
        return None
    index = index_of(tree)
    lines = text.splitlines()
    docs: dict[int, list[tuple[int, int | None]]] = {}  # row → (start, end) character columns to blank
    for kind in (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef):
        for node in index.of_type(kind):
            first = node.body[0] if node.body else None
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                continue
            end = first.end_lineno or first.lineno
            rows = wanted.intersection(range(first.lineno, end + 1))
            if not rows:
                continue
            spans = _literal_span(lines, first)
            if spans is None:
                return None
            for row in rows:
                lo, hi = spans
                docs.setdefault(row, []).append((lo if row == first.lineno else 0, hi if row == end else None))
    hashed = {n for n in wanted if 0 < n <= len(lines) and "#" in lines[n - 1]}
    strings = _string_spans(index, hashed) if hashed else {}
    out = {}
    for n in wanted:
        if not 0 < n <= len(lines):
            continue
        line = lines[n - 1]
        if n in docs:
            line = _blank(line, docs[n])
        if n in hashed and "#" in line:
            cut = line.index("#")  # the first `#` outside a docstring
            try:
                at = len(lines[n - 1][:cut].encode("utf-8"))
            except UnicodeEncodeError:
                return None
            if any(lo <= at < hi for lo, hi in strings.get(n, ())):
                return None
            line = line[:cut]
        code = line.rstrip()
        if code.strip():
            out[n] = code
    return out


def _string_spans(index, rows: set[int]) -> dict[int, list[tuple[int, float]]]:
    """Per row of `rows`, the byte spans (AST columns are bytes) string literals cover on it."""
    strings: dict[int, list[tuple[int, float]]] = {}
    for node in index.of_type(ast.Constant) + index.of_type(ast.JoinedStr):
        if isinstance(node, ast.Constant) and not isinstance(node.value, (str, bytes)):
            continue
        end = node.end_lineno or node.lineno
        for row in rows.intersection(range(node.lineno, end + 1)):
            strings.setdefault(row, []).append((node.col_offset if row == node.lineno else 0,
                                                node.end_col_offset if row == end and node.end_col_offset is not None
                                                else float("inf")))
    return strings


def python_comments(text: str, tree: ast.Module) -> list[tuple[int, str]] | None:
    """`lang.python.comments(text)` read from the parsed tree instead of the tokenizer: outside a string
    literal a `#` starts a comment that runs to the end of its line. None when only tokenizing can tell
    (a `#` inside a literal's span, which may lie between implicitly concatenated pieces; line breaks the
    parser does not count)."""
    if OTHER_BREAKS.search(text):
        return None
    lines = text.splitlines()
    hashed = {n for n, line in enumerate(lines, 1) if "#" in line}
    strings = _string_spans(index_of(tree), hashed) if hashed else {}
    out = []
    for n in sorted(hashed):
        line = lines[n - 1]
        cut = line.index("#")
        try:
            at = len(line[:cut].encode("utf-8"))
        except UnicodeEncodeError:
            return None
        if any(lo <= at < hi for lo, hi in strings.get(n, ())):
            return None
        out.append((n, line[cut:].lstrip("#").strip()))
    return out


STRING_PREFIX = lazy_re(r"[rRuU]?")


def _literal_span(lines: list[str], stmt: ast.Expr) -> tuple[int, int] | None:
    """Character columns (start on the first line, end on the last) of a docstring that is a
    single string literal, as the tokenizer's one STRING token spans it; None for anything else
    (implicitly concatenated pieces, an escaped quote), which only tokenizing tells apart."""
    node = stmt.value
    first, last = node.lineno, node.end_lineno or node.lineno
    if node.end_col_offset is None or last > len(lines) or (stmt.lineno, stmt.col_offset) != (first, node.col_offset):
        return None  # (a parenthesised docstring: its token does not start the statement)
    try:
        head, tail = lines[first - 1].encode("utf-8"), lines[last - 1].encode("utf-8")
        lo = len(head[:node.col_offset].decode("utf-8"))
        hi = len(tail[:node.end_col_offset].decode("utf-8"))
    except UnicodeError:
        return None
    if first == last:
        literal = lines[first - 1][lo:hi]
    else:
        literal = "\n".join([lines[first - 1][lo:], *lines[first:last - 1], lines[last - 1][:hi]])
    body = literal[STRING_PREFIX.match(literal).end():]  # type: ignore[union-attr]
    quote = next((q for q in ('"""', "'''", '"', "'") if body.startswith(q)), None)
    if quote is None or len(body) < 2 * len(quote) or not body.endswith(quote) \
            or quote in body[len(quote):-len(quote)]:
        return None
    return lo, hi


def _blank(line: str, spans: list[tuple[int, int | None]]) -> str:
    chars = list(line)
    for lo, hi in spans:
        for c in range(lo, len(chars) if hi is None else min(hi, len(chars))):
            chars[c] = " "
    return "".join(chars)


def _cpp(text: str) -> dict[int, str]:
    data = bytearray(text.encode("utf-8"))
    for node in cpp.nodes_of_type(cpp.parse(text), "comment"):
        for i in range(node.start_byte, node.end_byte):
            if data[i] not in (10, 13):
                data[i] = 32
    return {i: line.rstrip() for i, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1) if line.strip()}
