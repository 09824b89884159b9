"""`RepoFacts.is_script` finds a module's importers with one word search for every changed script of
the review, and answers as the importer pattern searched on its own would."""
from __future__ import annotations

import re

from pr_review.git import CatFile, Repo
from pr_review.profiles import load_profiles
from pr_review.repofacts import RepoFacts
from pr_review.source import Source

MAIN = "\n\nif __name__ == '__main__':\n    main()\n"
FILES = {
    "pkg/__init__.py": "",
    "pkg/gemm.py": "def main(): pass" + MAIN,  # imported below: library code
    "pkg/user.py": "from pkg.gemm import main\nimport pkg.moe_tool as t  # not moe\n",
    "pkg/moe.py": "def main(): pass" + MAIN,  # named only as part of a longer word or after a comment: a script
    "pkg/other.py": "x = 1  # from pkg import moe\nmoe = 2\n",
    "pkg/cli-tool.py": "def main(): pass" + MAIN,  # not a word: searched with the pattern itself
    "pkg/fused.py": "def main(): pass" + MAIN,
    "pkg/uses_fused.py": "from pkg import (\n    fused,\n)\nfrom pkg import other, fused as f\n",
    "tests/test_moe.py": "from pkg import moe\n",  # a test importing it does not make it library code
}


def _importer_files(source: Source, path: str) -> list[str]:
    """The importer search as one regex grep of its own (the question's definition)."""
    leaf = re.escape(path.rsplit("/", 1)[-1].removesuffix(".py"))
    pattern = (rf"^\s*(from\s+\S*\b{leaf}\s+import|import\s+\S*\b{leaf}\b|"
               rf"from\s+\S+\s+import\s+[^#]*\b{leaf}\b)")
    return [p for p, _, _ in source.repo.grep(pattern, source.head, ("*.py",), files_only=True)]


def test_scripts_of_a_review_are_searched_together_and_answer_as_alone(repo_factory, monkeypatch):
    repo = Repo.open(str(repo_factory({"README.md": "x\n"}, FILES)))
    catfile = CatFile(repo.root, 2 * 1024 * 1024)
    try:
        source = Source(repo, catfile, repo.resolve("main"), repo.resolve("pr"))
        facts = RepoFacts(load_profiles()["aiter"], source, list(FILES))
        searches = []
        real = repo.grep
        monkeypatch.setattr(repo, "grep", lambda *a, **k: searches.append(a) or real(*a, **k))
        answers = {p: facts.is_script(p) for p in ("pkg/gemm.py", "pkg/moe.py", "pkg/fused.py", "pkg/cli-tool.py")}
        word_searches = len(searches) - 1  # cli-tool's own pattern search
        monkeypatch.setattr(repo, "grep", real)
        for path, answer in answers.items():
            importers = [p for p in _importer_files(source, path) if p != path and facts.role(p) not in ("test", "benchmark")]
            assert answer == (not importers), path
        assert answers == {"pkg/gemm.py": False, "pkg/moe.py": True, "pkg/fused.py": False, "pkg/cli-tool.py": True}
        assert word_searches == 1
    finally:
        catfile.close()
