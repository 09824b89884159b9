"""Issue 11 item 13: the derivation gaps — a fake's body, an allocation on the forward path and a
numeric shape literal each call for their rule, and code without them does not."""
from __future__ import annotations

import pytest

from pr_review.catalog import load_catalog
from pr_review.derivation import Facts, derive
from pr_review.profiles import load_profiles


def _derived(profile: str, path: str, line: str) -> set[str]:
    facts = Facts(paths=[path], new_paths=[], changed_paths=[path], added=[(path, 10, line)], deleted=[],
                  title="")
    prof = load_profiles()[profile]
    _, checklist = derive(facts, load_catalog(), prof, prof.code_fallback, runtime_surface=True)
    return {item.rule for item in checklist}


@pytest.mark.parametrize("profile, path, line, rule", [
    ("aiter", "aiter/ops/norm.py", "    return torch.empty_like(x, dtype=dtypes.fp8)", "fake-impl-mismatch"),
    ("atom", "atom/model_ops/attention_mla.py", "        o = torch.empty((num_tokens, self.num_heads, 512), dtype=q.dtype)",
     "cudagraph-capture-break"),
    ("aiter", "aiter/ops/triton/moe/fused.py", "    out = x.view(-1, 7168)", "magic-constant"),
])
def test_a_gap_now_derives_its_rule(profile, path, line, rule):
    assert rule in _derived(profile, path, line)


@pytest.mark.parametrize("profile, path, line, rule", [
    ("aiter", "aiter/ops/norm.py", "    return out", "fake-impl-mismatch"),
    ("atom", "atom/model_ops/attention_mla.py", "        o = self.o_proj(attn)", "cudagraph-capture-break"),
    ("aiter", "aiter/ops/triton/moe/fused.py", "    out = x.view(-1, hidden_size)", "magic-constant"),
])
def test_code_without_the_construct_does_not(profile, path, line, rule):
    assert rule not in _derived(profile, path, line)
