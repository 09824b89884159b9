"""Which lines of a file are code, as opposed to comments, docstrings and blank lines."""
from __future__ import annotations

import ast
import io
import tokenize

from . import cpp

COMMENT_PREFIXES = {"shell": ("#",), "config": ("#", "//"), "text": ()}


def code_lines(text: str, language: str) -> set[int] | None:
    """1-based numbers of lines carrying code; None for prose files and unparsable text."""
    if language == "python":
        return _python(text)
    if language == "cpp":
        return _cpp(text)
    if language == "text":
        return set()
    prefixes = COMMENT_PREFIXES.get(language, ("#",))
    return {i for i, line in enumerate(text.splitlines(), 1)
            if line.strip() and not line.strip().startswith(prefixes)}


def _python(text: str) -> set[int] | None:
    prose: set[int] = set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                prose.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                            tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            for n in range(tok.start[0], tok.end[0] + 1):
                if n not in prose:
                    lines.add(n)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None
    return lines


def _cpp(text: str) -> set[int]:
    data = bytearray(text.encode("utf-8"))
    tree = cpp.parse(text)
    for node in cpp.walk(tree.root_node):
        if node.type == "comment":
            for i in range(node.start_byte, node.end_byte):
                if data[i] not in (10, 13):
                    data[i] = 32
    return {i for i, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1) if line.strip()}
