"""YAML from the reviewed repository is bounded (issue 9, class 8): an alias bomb, a self-referencing
alias, deep nesting or a huge file in a PR's workflow, the base config or a repository rule
directory costs that file, never the review, the runner's memory or minutes of time. And a config
whose values have the wrong type gets a message and defaults (class 13's config half).

The bombs run in a child process with an address-space limit, so that on a loader without bounds
they end in a MemoryError (or a crash) of the child instead of taking the machine down."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pr_review.config import parse_config

from conftest import make_repo

MEMORY_LIMIT = 2 << 30  # bytes of address space for the child
PEAK_LIMIT_MB = 600  # a review of these small repositories peaks far below; a bomb far above

# 9 levels of 9 aliases: about 300 bytes that expand to 9**9 (387 million) strings.
ALIAS_BOMB = "".join(
    ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n']
    + [f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)])
SELF_ALIAS = "a: &a [x, *a]\n"
DEEP = "a: " + "[" * 200_000 + "]" * 200_000 + "\n"

WORKFLOW = ("on: [pull_request]\n{bomb}jobs:\n  test:\n    runs-on: ubuntu-latest\n    if: {condition}\n"
            "    steps:\n      - run: pytest tests/\n")
AITER = {"aiter/jit/core.py": "import os\n", "tests/test_old.py": "def test_old():\n    assert True\n"}
NEW_TEST = {"tests/test_new.py": "def test_new():\n    assert 1 + 1 == 2\n"}

CHILD = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review
report = review(ReviewRequest(repo_dir=sys.argv[1], base="main", head="pr", remote=None, pr=PRInfo(title="t")))
print(json.dumps({{"notes": report.notes, "profile": report.profile,
                  "not_checked": {{n.path: n.reason for n in report.not_checked}},
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def review_in_child(repo: Path) -> dict:
    """The review of `repo` (main..pr) in a memory-limited child; fails the test if the child fails."""
    result = subprocess.run([sys.executable, "-c", CHILD.format(limit=MEMORY_LIMIT), str(repo)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"the review died ({result.returncode}): {result.stderr[-2000:]}"
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["peak_mb"] < PEAK_LIMIT_MB, outcome
    return outcome


@pytest.mark.parametrize("bomb, condition, word", [(ALIAS_BOMB, "*l8", "alias"), (DEEP, "'true'", "nest")],
                         ids=["alias-bomb", "deep-nesting"])
def test_bombs_in_a_pr_workflow(tmp_path, bomb, condition, word):
    """ci_coverage reads the head side's workflows to see whether CI runs the PR's new test."""
    workflow = WORKFLOW.format(bomb=bomb, condition=condition)
    repo = make_repo(tmp_path / "repo", AITER, {**NEW_TEST, ".github/workflows/ci.yml": workflow})
    outcome = review_in_child(repo)
    assert word in outcome["not_checked"][".github/workflows/ci.yml"]


@pytest.mark.parametrize("bomb, word", [
    (ALIAS_BOMB + "profile: *l8\n", "alias"),
    (SELF_ALIAS, "alias"),
    (DEEP, "nest"),
    ("a: " + "x" * 1_500_000 + "\n", "large"),  # under the 2 MB file cap, over the YAML cap
], ids=["alias-bomb", "self-alias", "deep-nesting", "large"])
def test_bombs_in_the_base_config(tmp_path, bomb, word):
    repo = make_repo(tmp_path / "repo", {**AITER, ".github/pr-review.yml": bomb}, NEW_TEST)
    outcome = review_in_child(repo)
    assert outcome["profile"] == "aiter"
    message = next(n for n in outcome["notes"] if n.startswith(".github/pr-review.yml"))
    assert word in message and "using defaults" in message


def test_alias_bomb_in_a_repository_rule_dir(tmp_path):
    config = "rule_dirs: [review-rules]\n"
    repo = make_repo(tmp_path / "repo", {**AITER, ".github/pr-review.yml": config,
                                         "review-rules/bomb.yml": ALIAS_BOMB + "id: bomb\nsummary: *l8\n"}, NEW_TEST)
    outcome = review_in_child(repo)
    note = next(n for n in outcome["notes"] if n.startswith("repository rules not loaded"))
    assert "alias" in note and note.split(": ")[1] == "review-rules/bomb.yml"  # the repository's path


def test_ordinary_anchors_still_load():
    """Anchors a workflow or config may use for real (a shared list, a merge key) are read as before."""
    from pr_review.rulesdata import load_untrusted_yaml

    text = ("base: &base {runs-on: ubuntu-latest, env: {A: '1'}}\n"
            "jobs:\n  a: {<<: *base, steps: [{run: pytest tests/}]}\n  b: {<<: *base, needs: a}\n")
    data = load_untrusted_yaml(text)
    assert data["jobs"]["a"]["runs-on"] == "ubuntu-latest" and data["jobs"]["b"]["needs"] == "a"


KNOWN = {"syspath-mutation"}
PROFILES = {"aiter", "atom", "vllm", "generic"}


@pytest.mark.parametrize("text, word", [
    ("profile: [aiter]\n", "profile"),
    ("profile: {name: aiter}\n", "profile"),
    ("profile: 3\n", "profile"),
    ("severity: [high]\n", "severity"),
    ("severity: {syspath-mutation: [high]}\n", "severity"),
    ("disable: {syspath-mutation: true}\n", "disable"),
    ("exclude: [[a]]\n", "exclude"),
    ("rule_dirs: 7\n", "rule_dirs"),
    ("1: x\nfoo: y\n", "unknown key '1'"),  # keys of mixed types still sort into messages
])
def test_config_values_of_the_wrong_type(text, word):
    config = parse_config(text, "cfg", KNOWN, PROFILES)
    assert config.profile is None and not config.severity and not config.disable and not config.exclude
    assert any(word in m for m in config.messages), config.messages


def test_config_of_the_right_type_still_applies():
    config = parse_config("profile: vllm\nseverity: {syspath-mutation: low}\nexclude: [third_party/*]\n",
                          "cfg", KNOWN, PROFILES)
    assert (config.profile, config.severity, config.exclude, config.messages) == \
        ("vllm", {"syspath-mutation": "low"}, ("third_party/*",), ())
