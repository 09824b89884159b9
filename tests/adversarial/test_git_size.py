"""Size caps hold (issue 9, class 9): a file over the size cap contributes no line to any stage,
diff included, and the lines one review reads from the diff are capped, the rest listed."""
from __future__ import annotations

from pr_review.git import Repo
from pr_review.git.diff import read_changes
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review

FLAGGED = "import sys\nsys.path.append('/x')\n"
PADDING = "x = 1  # generated table row, padded to make the file large\n"


def test_a_file_over_the_cap_contributes_no_line(repo_factory):
    big = FLAGGED + PADDING * (5 * 1024 * 1024 // len(PADDING))  # 5 MB, over the default 2 MB cap
    repo = repo_factory({"aiter/jit/core.py": "X = 1\n", "aiter/old_big.py": big},
                        {"aiter/big.py": big, "aiter/old_big.py": big + "y = 2\n", "aiter/ops/small.py": "Y = 1\n"})
    files = {f.path: f for f in read_changes(Repo(repo), "main", "pr", 2 * 1024 * 1024)}
    for path in ("aiter/big.py", "aiter/old_big.py"):
        assert files[path].added == [] and files[path].removed == [] and files[path].hunks == []
        assert "cap" in (files[path].skipped or "")
    assert files["aiter/ops/small.py"].added == [(1, "Y = 1")]
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, pr=PRInfo(title="Tables")))
    assert "+1/−0 lines" in report.summary[0]  # only small.py's line was read
    assert {"aiter/big.py", "aiter/old_big.py"} <= {n.path for n in report.not_checked}
    assert not [f for f in report.all_findings if f.path in ("aiter/big.py", "aiter/old_big.py")]


def test_the_lines_one_review_reads_are_capped(repo_factory):
    repo = repo_factory({"a.py": "x = 1\n"}, {
        "small.py": "a = 1\n" * 10,
        "medium.py": "b = 1\n" * 30,
        "huge.py": "c = 1\n" * 100,  # would take the reading past the budget: left out whole
        "a.py": "x = 2\n",  # modified: one line removed, one added
    })
    files = {f.path: f for f in read_changes(Repo(repo), "main", "pr", 2 * 1024 * 1024, max_lines=50)}
    assert len(files["small.py"].added) == 10 and len(files["medium.py"].added) == 30
    assert files["a.py"].added == [(1, "x = 2")] and files["a.py"].removed == [(1, "x = 1")]
    assert files["huge.py"].added == [] and "50" in (files["huge.py"].skipped or "")
    assert files["huge.py"].status == "added" and files["huge.py"].language == "python"

