"""Parsing PR files (issue 9, classes 1 and 10): no parser warning is ever printed (a file named
`::error::x.py` would turn it into a workflow command), and a file no parser can finish costs that
file, listed as not checked, never the review."""
from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

# An invalid escape: DeprecationWarning on 3.11, SyntaxWarning on 3.12+, both printed to stderr
# beginning with the file name when not captured.
BAD_ESCAPE = "import os\nPATTERN = '\\d+'\nos.environ['X'] = '1'\n"
# A syspath mutation the hygiene detector reports: proof the review went on past the bad files.
FLAGGED = "import sys\nsys.path.append('/x')\n"

# Inputs on which `ast.parse` itself fails with something other than SyntaxError, or succeeds with
# a tree too deep for the recursive walks of the detectors (`ast.unparse`, NodeVisitor).
UNPARSABLE = {
    "deep_unary.py": "x = " + "-" * 100_000 + "1\n",  # MemoryError in the parser
    "long_sum.py": "x = " + "+".join(["a"] * 5_000) + "\n",  # RecursionError building the tree
    "deep_tree.py": "x = " + "+".join(["a"] * 700) + "\n",  # parses; ast.unparse would recurse too deep
    "parens.py": "(" * 100_000 + "\n",  # SyntaxError: too many nested parentheses
    # ValueError (3.11) / SyntaxError (3.12): a null byte past the 8,000 bytes git and cat-file
    # look at to call a file binary, so it is read as text
    "late_nul.py": "x = 1\n" * 2_000 + "\0\n",
}


def _review(repo):
    return review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None,
                                pr=PRInfo(title="Add helpers")))


def test_parsing_a_pr_file_emits_no_warning(repo_factory):
    repo = repo_factory({"aiter/jit/core.py": "X = 1\n"},
                        {"::error::x.py": BAD_ESCAPE, "aiter/ops/sp.py": FLAGGED})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = _review(repo)
    assert [str(w.message) for w in caught] == []
    assert any(f.rule == "syspath-mutation" for f in report.all_findings)


def test_cli_stderr_carries_no_line_from_the_python_parser(repo_factory):
    """The runner executes `::command::` lines on stderr too; warnings are on by default here."""
    repo = repo_factory({"aiter/jit/core.py": "X = 1\n"}, {"::error::x.py": BAD_ESCAPE})
    proc = subprocess.run([sys.executable, "-W", "always", "-m", "pr_review", "review", "--repo", str(repo),
                           "--base", "main", "--head", "pr", "--format", "json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "invalid escape" not in proc.stderr
    assert not [line for line in proc.stderr.splitlines() if line.lstrip().startswith("::")]


@pytest.mark.parametrize("name", sorted(UNPARSABLE))
def test_a_file_no_parser_can_finish_costs_one_file(repo_factory, name):
    repo = repo_factory({"aiter/jit/core.py": "X = 1\n"},
                        {f"aiter/ops/{name}": UNPARSABLE[name], "aiter/ops/sp.py": FLAGGED})
    report = _review(repo)
    reasons = {n.path: n.reason for n in report.not_checked}
    assert f"aiter/ops/{name}" in reasons, reasons
    assert "Python" in reasons[f"aiter/ops/{name}"] or "nested" in reasons[f"aiter/ops/{name}"]
    assert any(f.rule == "syspath-mutation" and f.path == "aiter/ops/sp.py" for f in report.all_findings)
    assert not [n for n in report.notes if "failed and was skipped" in n], report.notes
