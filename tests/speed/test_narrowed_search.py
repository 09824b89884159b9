"""A regex search narrowed to the files holding its required literals answers as git grep does
over the whole tree: the same hits, in the same order."""
from __future__ import annotations

from pathlib import Path

import pytest

import pr_review.source as source_module
from pr_review.git import CatFile, Repo
from pr_review.source import NEVER_TEXT, Source, required_literals


@pytest.mark.parametrize("pattern, literals", [
    (r"^\s*def torch_compile_guard\s*\(", ["torch_compile_guard"]),
    (r"^\s*(async\s+)?def (build_rows|compile_stage1)\s*\(", ["build_rows", "compile_stage1"]),
    (r"(\bAITER_CONFIG\s*\()|(\bAITER_CONFIG_FILE\s*\()", ["AITER_CONFIG", "AITER_CONFIG_FILE"]),
    (r"abcdef?", ["abcde"]),  # the quantified character may be absent
    (r"abcdefgh{2,3}", ["abcdefg"]),
    (r"a{2}bcdefg", ["bcdefg"]),
    (r"x{10000}", None),  # an interval's counts are not text
    (r"[[:alpha:]abcdefg]xy", None),  # a bracket expression's characters are not text
    (r"[]abcdefg]", None),
    (r"(abcdefg|x)yz", None),  # an alternative with no literal
    (r"(abcdefg|uvwxyz)?q", None),  # an optional group
    (r"grouped_moe|moe", None),
    (r"\bfoo\b", None),  # shorter than MIN_LITERAL
    (r"(abc", None),  # unbalanced
    (r"^\s*(from\s+\S*\bview\-screen\s+import|import\s+\S*\bview\-screen\b)", ["screen", "screen"]),
])
def test_required_literals(pattern: str, literals: list[str] | None):
    assert required_literals(pattern) == literals


FILES = {
    "a.py": "def build_rows(x):\n    return x\n\n    def compile_stage1 (y):\n        pass\n",
    "b.py": "# build_rows is documented here\nvalue = build_rows(1)\n",
    "c.py": "async def compile_stage1():\n    AITER_CONFIG('x')\n",
    "d.txt": "def build_rows(\n",
    "e/f.py": "x = AITER_CONFIG_FILE ( 1 )\n",
}
PATTERNS = [r"^\s*(async\s+)?def (build_rows|compile_stage1)\s*\(", r"(\bAITER_CONFIG\s*\()|(\bAITER_CONFIG_FILE\s*\()",
            r"\bbuild_rows\s*\(", r"^\s*def nowhere_at_all\s*\(", r"build_rows|value"]


@pytest.mark.parametrize("limit", [300, 1])  # narrowed, and too many files to narrow: the whole tree
def test_a_narrowed_search_answers_as_the_whole_tree_search(tmp_path: Path, monkeypatch, limit: int):
    from conftest import make_repo

    monkeypatch.setattr(source_module, "MAX_NARROWED_FILES", limit)
    repo = Repo.open(make_repo(tmp_path / "repo", {}, FILES))
    head, base = repo.resolve("pr"), repo.resolve("main")
    source = Source(repo, CatFile(repo, 1_000_000), base, head)
    for pattern in PATTERNS:
        for pathspecs, kw in (((), {}), (("*.py",), {}), ((), {"files_only": True}), (("e",), {})):
            assert source.grep(pattern, "head", pathspecs, **kw) == repo.grep(pattern, head, (*pathspecs, *NEVER_TEXT), **kw)
    assert [p for p, _, _ in source.grep(PATTERNS[0], "head")] == ["a.py", "a.py", "c.py", "d.txt"]
