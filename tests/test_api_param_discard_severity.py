"""param-discard is 🔴 only when a caller's value is really lost: the parameter names something that decides
the output AND some call passes it. A knob no caller sets yet is a dead parameter to remove (⚠️)."""
from __future__ import annotations

from pr_review.pipeline import ReviewRequest, review

BASE = {
    "aiter/__init__.py": "",
    "aiter/ops/moe.py": "def make_mapping(gate, up, num_experts):\n    return [(gate, up, e) for e in range(num_experts)]\n",
    "aiter/models/gpt.py": "from aiter.ops.moe import make_mapping\n\n\ndef mapping(n):\n    return make_mapping('g', 'u', n)\n",
}
HEAD_DEF = "def make_mapping(gate, up, num_experts, has_bias=False):\n    return [(gate, up, e) for e in range(num_experts)]\n"


def _param_discard(repo_factory, head):
    repo = repo_factory(BASE, head)
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    return [f for f in report.all_findings if f.rule == "api-propagation-incomplete" and "has_bias" in f.problem]


def test_a_dead_knob_no_caller_sets_is_not_red(repo_factory):
    found = _param_discard(repo_factory, {"aiter/ops/moe.py": HEAD_DEF})
    assert [f.severity for f in found] == ["medium"]


def test_a_value_a_caller_passes_and_the_body_drops_is_red(repo_factory):
    caller = "from aiter.ops.moe import make_mapping\n\n\ndef mapping(n):\n    return make_mapping('g', 'u', n, has_bias=True)\n"
    found = _param_discard(repo_factory, {"aiter/ops/moe.py": HEAD_DEF, "aiter/models/gpt.py": caller})
    assert [f.severity for f in found] == ["high"]
