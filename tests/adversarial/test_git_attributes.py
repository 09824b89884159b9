"""A PR-added `.gitattributes` must not change how the review reads files (issue 9, class 2):
attributes come from no file the PR controls, for the diff, `git grep` and every other read."""
from __future__ import annotations

import pytest

from pr_review.git import Repo
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

FLAGGED = "import sys\nsys.path.append('/x')\n"

# Each hides the PR's code from a git that honours the checkout's attributes: `-diff` and `binary`
# make the diff and `git grep -I` treat every file as binary; `merge=ours` would hide conflicts
# from the staleness check; an undefined filter/textconv driver must not matter either.
HIDING = {
    "no_diff": "* -diff\n",
    "binary": "* binary\n",
    "drivers": "*.py diff=nosuch filter=nosuch merge=ours -text eol=crlf\n",
}


@pytest.mark.parametrize("attributes", sorted(HIDING))
def test_pr_added_gitattributes_hides_nothing(repo_factory, attributes):
    repo = repo_factory({"aiter/jit/core.py": "X = 1\n"},
                        {".gitattributes": HIDING[attributes], "aiter/ops/sp.py": FLAGGED})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None,
                                  pr=PRInfo(title="Add a loader")))
    assert not [n for n in report.not_checked if n.path == "aiter/ops/sp.py"], report.not_checked
    assert any(f.rule == "syspath-mutation" and f.path == "aiter/ops/sp.py" and f.line == 2
               for f in report.all_findings)


def test_grep_over_a_tree_ignores_the_checkouts_attributes(repo_factory):
    # The checkout (work tree and index) holds the PR's `* binary`, as in the action.
    repo = repo_factory({"a.py": "x = 1\n"}, {".gitattributes": "* binary\n", "b.py": FLAGGED})
    hits = Repo(repo).grep("sys.path", "pr", fixed=True)
    assert ("b.py", 2, "sys.path.append('/x')") in hits


def test_attributes_in_the_base_tree_do_not_hide_the_pr_either(repo_factory):
    # A base that marks files binary (or a PR that changed it earlier) must not hide a later PR's code.
    repo = repo_factory({".gitattributes": "*.py -diff\n", "aiter/jit/core.py": "X = 1\n"},
                        {"aiter/ops/sp.py": FLAGGED})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None))
    assert any(f.rule == "syspath-mutation" and f.path == "aiter/ops/sp.py" for f in report.all_findings)
