"""Issue 11 item 13: the derivation gaps — a fake's body, an allocation on the forward path and a
numeric shape literal each call for their rule, and code without them does not."""
from __future__ import annotations

import pytest

from pr_review.catalog import load_catalog
from pr_review.derivation import Facts, derive
from pr_review.pipeline import ReviewRequest, review
from pr_review.profiles import load_profiles


def _derived(profile: str, path: str, line: str) -> set[str]:
    facts = Facts(paths=[path], new_paths=[], changed_paths=[path], added=[(path, 10, line)], deleted=[],
                  title="")
    prof = load_profiles()[profile]
    _, checklist = derive(facts, load_catalog(), prof, prof.code_fallback, runtime_surface=True)
    return {item.rule for item in checklist}


@pytest.mark.parametrize("profile, path, line, rule", [
    ("aiter", "aiter/ops/norm.py", "    return torch.empty_like(x, dtype=dtypes.fp8)", "fake-impl-mismatch"),
    # any allocation in model/op code (the helpers a forward calls have no telling name)
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


# --- a fake's body, decided from the tree triage parsed (family fake-impl-edited) ---------------------

MHA = '''import torch
from aiter.jit.core import compile_ops


def mha_fwd_fake(q, k, v, out=None):
    if out is None:
        out = torch.empty_like(q, dtype=q.dtype)
    return out


@compile_ops("module_mha_fwd", fc_name="mha_fwd", gen_fake=mha_fwd_fake)
def mha_fwd(q, k, v, out=None):
    dtype = q.dtype
    return out


def varlen_out(q):
    return torch.empty(q.shape[0], 128, dtype=q.dtype, device=q.device)


@compile_ops("module_mha_varlen", gen_fake=varlen_out)
def mha_varlen_fwd(q, k, v):
    ...


@torch.library.register_fake("aiter::rope")
def _(x, cos):
    return torch.empty_like(x, dtype=x.dtype)


@torch.library.impl_abstract("aiter::norm")
def norm_shape(x):
    return x.new_empty(x.shape, dtype=x.dtype)


@quant_op.register_fake
def _quant(x):
    return torch.empty_like(x, dtype=x.dtype)


def trace_rms(x):
    return torch.empty_like(x, dtype=x.dtype)


direct_register_custom_op("rms", op_func=mha_fwd, fake_impl=trace_rms)


def wrapper(q, k, v):
    meta = mha_fwd_fake(q, k, v)
    return meta.dtype


def build_connector_meta(q):
    return {"dtype": q.dtype}
'''


def _family_evidence(repo_factory, profile: str, rule: str, family: str, base: str, head: str,
                     path: str) -> list[str] | None:
    """The evidence with which `family` calls for `rule` on a PR turning `base` into `head` at `path`, or
    None when it did not fire (and then `rule` is not called for by it)."""
    repo = repo_factory({f"{profile}/__init__.py": "", path: base}, {path: head})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile=profile))
    item = next((i for i in report.checklist if i.rule == rule), None)
    if item is None or family not in item.families:
        return None
    return item.derived_by


def _fake_family(repo_factory, head: str, path: str = "aiter/ops/mha.py", base: str = MHA) -> list[str] | None:
    return _family_evidence(repo_factory, "aiter", "fake-impl-mismatch", "fake-impl-edited", base, head, path)


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("old, new", [
    # by name: aiter#1459's shape, an output dtype changed inside `def mha_fwd_fake`
    ("        out = torch.empty_like(q, dtype=q.dtype)", "        out = torch.empty_like(q, dtype=torch.bfloat16)"),
    # named by `gen_fake=` of @compile_ops, under a name that says nothing
    ("    return torch.empty(q.shape[0], 128, dtype=q.dtype,", "    return torch.empty(q.shape[0], 256, dtype=q.dtype,"),
    # decorated @torch.library.register_fake / @impl_abstract / @op.register_fake
    ("    return torch.empty_like(x, dtype=x.dtype)\n\n\n@torch.library.impl_abstract",
     "    return torch.empty_like(x, dtype=torch.float32)\n\n\n@torch.library.impl_abstract"),
    ("    return x.new_empty(x.shape, dtype=x.dtype)", "    return x.new_empty(x.shape[:-1], dtype=x.dtype)"),
    ("def _quant(x):\n    return torch.empty_like(x, dtype=x.dtype)", "def _quant(x):\n    return torch.empty_like(x, dtype=torch.int8)"),
    # named by `fake_impl=` of direct_register_custom_op
    ("def trace_rms(x):\n    return torch.empty_like(x, dtype=x.dtype)", "def trace_rms(x):\n    return torch.empty_like(x, dtype=torch.bfloat16)"),
])
def test_an_edit_inside_a_fake_derives_fake_impl_mismatch(repo_factory, old, new):
    assert MHA.count(old) == 1
    head = MHA.replace(old, new)
    n = _line(head, next(line for line in new.splitlines() if line not in old.splitlines()))
    assert _fake_family(repo_factory, head) == [f"aiter/ops/mha.py:{n}: {head.splitlines()[n - 1].strip()}"]


def test_a_line_removed_from_a_fake_derives_it_with_the_base_line(repo_factory):
    removed = "    if out is None:\n        out = torch.empty_like(q, dtype=q.dtype)\n"
    head = MHA.replace(removed, "")
    assert _fake_family(repo_factory, head) == [f"deleted aiter/ops/mha.py:{_line(MHA, 'if out is None')}: if out is None:"]


@pytest.mark.parametrize("old, new, path", [
    # the real op changes beside its untouched fake
    ("    dtype = q.dtype\n", "    dtype = torch.bfloat16\n", "aiter/ops/mha.py"),
    # a function that only calls a fake
    ("    return meta.dtype", "    return meta.dtype.itemsize", "aiter/ops/mha.py"),
    # `*_meta` that builds metadata, not a meta kernel
    ('    return {"dtype": q.dtype}', '    return {"dtype": q.dtype, "n": 1}', "aiter/ops/mha.py"),
    # a test double with a fake's name
    ("        out = torch.empty_like(q, dtype=q.dtype)", "        out = torch.empty_like(q, dtype=torch.bfloat16)",
     "op_tests/test_mha.py"),
])
def test_an_edit_outside_a_fake_does_not(repo_factory, old, new, path):
    assert MHA.count(old) == 1
    assert _fake_family(repo_factory, MHA.replace(old, new), path) is None


# --- an allocation inside a forward or a custom op, decided from the tree (family forward-allocation) ---

ATTN = '''import torch
from torch import nn
from atom.utils.custom_register import direct_register_custom_op
from atom.utils.decorators import torch_compile_guard


class MLAAttention(nn.Module):
    def __init__(self, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.register_buffer("workspace", torch.zeros(1024))

    def forward(self, q, kv):
        num_tokens = q.shape[0]
        o = self.o_proj(q)
        return o

    def forward_hip(self, q, kv):
        return self._forward_decode(q, kv)

    def _forward_decode(self, q, kv):
        logits = q @ kv
        return logits

    def load_weights(self, weights):
        scale = weights["scale"]
        self.scale = scale


@torch_compile_guard(gen_fake=None)
def fused_rms_quant(x, weight):
    y = x * weight
    return y


def _apply_attn_res_op(prefix_sum, block_residual):
    out = prefix_sum + block_residual
    return out


def _apply_attn_res_op_fake(prefix_sum, block_residual):
    return prefix_sum


direct_register_custom_op(op_name="attn_res", op_func=_apply_attn_res_op, fake_impl=_apply_attn_res_op_fake)
'''


# outside model_ops/, models/, layers/, attention/, ops/: only the tree can say it is on the forward path
BACKEND = "atom/plugin/sglang/attention_backend/mla_backend.py"


def _forward_family(repo_factory, head: str, path: str = BACKEND, base: str = ATTN) -> list[str] | None:
    return _family_evidence(repo_factory, "atom", "cudagraph-capture-break", "forward-allocation", base, head, path)


@pytest.mark.parametrize("after, added", [
    # a model's forward (the ATOM MLA shape: a per-call output buffer)
    ("        num_tokens = q.shape[0]\n",
     "        o_buf = torch.empty((num_tokens, self.num_heads, 512), dtype=q.dtype, device=q.device)\n"),
    # a CustomOp forward_* and a helper it runs (`_forward_decode`)
    ("    def forward_hip(self, q, kv):\n", "        tmp = q.new_empty(q.shape)\n"),
    ("        logits = q @ kv\n", "        lse = torch.zeros(q.shape[0], dtype=torch.float32, device=q.device)\n"),
    # a custom op: decorated @torch_compile_guard, or handed to direct_register_custom_op as op_func=
    ("    y = x * weight\n", "    out = torch.empty_like(x)\n"),
    ("    out = prefix_sum + block_residual\n", "    buf = torch.full((4,), 0.0, device=prefix_sum.device)\n"),
])
def test_an_allocation_added_on_the_forward_path_derives_cudagraph_capture_break(repo_factory, after, added):
    assert ATTN.count(after) == 1
    head = ATTN.replace(after, after + added)
    n = _line(head, added.strip())
    assert _forward_family(repo_factory, head) == [f"{BACKEND}:{n}: {added.strip()}"]


@pytest.mark.parametrize("old, new, path", [
    # an allocation in __init__ (a buffer made once, before any capture) or in weight loading
    ('        self.register_buffer("workspace", torch.zeros(1024))',
     '        self.register_buffer("workspace", torch.zeros(2048))', BACKEND),
    ('        self.scale = scale', '        self.scale = torch.empty_like(scale).copy_(scale)', BACKEND),
    # a fake implementation (named by fake_impl=, traced, never captured)
    ("    return prefix_sum\n", "    return torch.empty_like(prefix_sum)\n", BACKEND),
    # an edit on the forward path that allocates nothing
    ("        o = self.o_proj(q)", "        o = self.o_proj(q).contiguous()", BACKEND),
    # a test's forward
    ("        num_tokens = q.shape[0]", "        num_tokens = torch.empty(q.shape[0])", "tests/test_attention_mla.py"),
])
def test_an_allocation_off_the_forward_path_does_not(repo_factory, old, new, path):
    assert ATTN.count(old) == 1
    assert _forward_family(repo_factory, ATTN.replace(old, new), path) is None


def test_an_allocation_removed_from_a_forward_does_not(repo_factory):
    base = ATTN.replace("        o = self.o_proj(q)\n", "        o = torch.empty_like(q)\n        o = self.o_proj(q)\n")
    assert _forward_family(repo_factory, ATTN, base=base) is None
