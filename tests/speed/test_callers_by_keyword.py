"""A check that reads only calls passing a removed parameter by keyword parses only the calling files
whose text names that parameter: the calls it finds are those a parse of every calling file finds."""
from __future__ import annotations

from pathlib import Path

from conftest import make_repo

from pr_review.detectors import api
from pr_review.detectors.base import ReviewInput
from pr_review.git import CatFile, Repo
from pr_review.git.diff import read_changes
from pr_review.model import PRInfo
from pr_review.profiles import load_profiles
from pr_review.source import Source

LIB = "def scale(x, beta=1.0):\n    return x * beta\n"
CALLERS = {
    "passes.py": "from lib import scale\n\ny = scale(2,\n          beta=3)\n",
    "positional.py": "from lib import scale\n\ny = scale(2, 3)\n",
    "unicode.py": "from lib import scale\n\ny = scale(2, \uff42eta=3)\n",  # NFKC: the parser reads `beta`
    "broken.py": "from lib import scale\n\ny = scale(2,\n",
}


def _review(tmp_path: Path) -> ReviewInput:
    root = make_repo(tmp_path / "repo", {"lib.py": LIB, **CALLERS}, {"lib.py": "def scale(x):\n    return x\n"})
    repo = Repo.open(root)
    source = Source(repo, CatFile(repo, 1_000_000), repo.resolve("main"), repo.resolve("pr"))
    files = read_changes(repo, source.base, source.head, 1_000_000)
    return ReviewInput(files=files, profile=load_profiles()["generic"], pr=PRInfo(title="x"), source=source)


def test_only_files_naming_the_keyword_are_parsed_and_their_calls_are_all_found(tmp_path: Path, monkeypatch):
    review = _review(tmp_path)
    every, _ = api._callers(review, {"scale"})
    parsed: list[str] = []
    real = review.source._parse
    monkeypatch.setattr(review.source, "_parse", lambda path, side: parsed.append(path) or real(path, side))
    named, _ = api._callers(review, {"scale"}, keywords={"beta"})
    assert sorted(parsed) == ["passes.py", "unicode.py"]  # not the positional caller, nor the broken one
    passing = [(c.path, c.node.lineno) for c in every["scale"] if any(k.arg == "beta" for k in c.node.keywords)]
    assert passing == [(c.path, c.node.lineno) for c in named["scale"]
                       if any(k.arg == "beta" for k in c.node.keywords)] == [("passes.py", 3), ("unicode.py", 3)]


def test_a_removed_keyword_still_passed_is_reported(tmp_path: Path):
    review = _review(tmp_path)
    removals, _ = api._removals(review)
    findings = list(api._param_removed(review, removals, {"scale": {"lib.py"}}))
    assert [f.rule for f in findings] == ["removed-api-still-used"]
    assert "passes.py:3" in findings[0].problem
