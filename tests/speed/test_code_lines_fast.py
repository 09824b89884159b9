"""The tokenizer-free answer for the lines a caller reads equals the tokenizer's, or defers to it."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pr_review.lang.code_lines import _python, _python_without_tokens, code_lines

TRICKY = '''"""Module docstring # not a comment."""
import os  # a comment

URL = "http://x/#anchor"  # the first # is in a string
NAME = f"{os.sep}#{1}"
PARTS = ("a"  # between two parts of one string
         "b")
MULTI = """line one
# inside a triple-quoted string
"""
café = "é"  # non-ASCII before the comment
# a comment line


def f(x):
    """Docstring
    # still the docstring
    """
    return x  # trailing
'''


def _compare(text: str, wanted: set[int], tree: ast.Module | None = None,
             full: dict[int, str] | None = None) -> bool:
    """Whether the tree alone decided the `wanted` lines, asserting it decided them as the tokenizer
    does; `tree` and `full` (the tokenizer's answer) are passed when one file is asked many times."""
    tree = ast.parse(text) if tree is None else tree
    fast = _python_without_tokens(text, tree, wanted)
    if fast is None:
        return False
    full = _python(text, tree) if full is None else full
    assert fast == {n: code for n, code in full.items() if n in wanted}
    return True


@pytest.mark.parametrize("line", range(1, TRICKY.count("\n") + 2))
def test_each_line_alone_matches_the_tokenizer(line):
    _compare(TRICKY, {line})


def test_ambiguous_lines_defer_to_the_tokenizer():
    lines = TRICKY.splitlines()
    defer = {i for i, text in enumerate(lines, 1) if text.startswith(("URL", "NAME", "PARTS"))}
    for line in defer:
        assert not _compare(TRICKY, {line}), lines[line - 1]
    decided = {i for i, text in enumerate(lines, 1) if text.startswith(("import os", "café", "# a comment", "    return"))}
    assert all(_compare(TRICKY, {line}) for line in decided)


def test_docstring_lines_are_decided_from_the_tree():
    lines = TRICKY.splitlines()
    docstring = {i for i, text in enumerate(lines, 1)
                 if text.startswith(('"""Module', '    """')) or "still the docstring" in text}
    assert len(docstring) == 4
    assert all(_compare(TRICKY, {line}) for line in docstring)
    assert _compare(TRICKY, docstring) and _python_without_tokens(TRICKY, ast.parse(TRICKY), docstring) == {}


@pytest.mark.parametrize("text", [
    'def f():\n    """a""" """b"""\n    return 1\n',  # two literals: only the first token is the docstring
    "class A:\n    'x' \\\n    'y'\n    z = 1\n",
    'def f():\n    ("doc")\n    x = 1\n',  # parenthesised: the statement starts at the parenthesis
    'def f():\n    """a \\""" b"""\n    x = 1\n',  # an escaped quote the literal's span cannot tell apart
])
def test_a_docstring_that_is_not_one_plain_literal_defers_to_the_tokenizer(text):
    lines = set(range(1, text.count("\n") + 1))
    assert not _compare(text, lines)
    for line in lines:
        _compare(text, {line})


@pytest.mark.parametrize("text", [
    'def f(): """d # x"""; y = 1  # c\n',
    'def g():\n    """é\n  # not\n  é"""  # c\n    return 1  # end\n',
    'def g():\n    r"""a\\b"""\n    return 1\n',
    "def h():\n    '''\n    x\n    '''\n    y = 1  # z\n",
])
def test_docstring_spans_blank_like_the_tokenizer(text):
    assert _compare(text, set(range(1, text.count("\n") + 1)))


def test_whole_files_of_this_repository_agree():
    root = Path(__file__).resolve().parents[2] / "src" / "pr_review"
    decided = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = set(range(1, text.count("\n") + 2))
        chunks = [set(range(start, start + 7)) & lines for start in range(1, len(lines) + 1, 7)]
        tree = ast.parse(text)  # once a file, not once a chunk: the parse and the tokenizing were the 6 minutes
        full = _python(text, tree)
        decided += sum(_compare(text, chunk, tree, full) for chunk in chunks)
    assert decided > 100  # most chunks are decided without tokenizing


def test_code_lines_takes_the_fast_path_only_when_asked():
    text = "x = 1  # one\n"
    tree = ast.parse(text)
    assert code_lines(text, "python", tree, {1}) == code_lines(text, "python", tree) == {1: "x = 1"}


@pytest.mark.parametrize("text", [
    "import os  # a comment\nx = 1\n# a comment line\n",
    'URL = "http://x/"  # after a string\ncafé = "é"  # non-ASCII before it\n',
    "def f(x):\n    return x  #   trailing   \n#\n##  doubled\n",
    'x = 1\ny = "#"  # a # in a string comes first\n',
    'PARTS = ("a"  # between two parts of one string\n         "b")\n',
    '"""Docstring # not a comment."""\n',
    "x = 1\x0c  # a form feed\n",
    "no_comment = True\n",
])
def test_comments_read_from_the_tree_are_the_tokenizers_or_defer_to_it(text):
    from pr_review.lang.code_lines import python_comments
    from pr_review.lang.python import comments

    fast = python_comments(text, ast.parse(text))
    if '"#"' in text or "between two parts" in text or "Docstring" in text or "\x0c" in text:
        assert fast is None  # a `#` inside a literal's span, or a break the parser does not count
    else:
        assert fast == comments(text)


def test_comments_of_whole_files_of_this_repository_agree():
    from pr_review.lang.code_lines import python_comments
    from pr_review.lang.python import comments

    root = Path(__file__).resolve().parents[2] / "src" / "pr_review"
    decided = 0
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        fast = python_comments(text, ast.parse(text))
        if fast is not None:
            assert fast == comments(text), path
            decided += 1
    assert decided > 20
