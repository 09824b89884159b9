"""fake-impl-mismatch, C++ side: a compiled op's C++ entry picks an output dtype by a condition the fake ignores.

The fixtures (tests/fixtures/rules/fake-impl-mismatch/*kernel-dtype*) hold the fire and clean cases through
the whole pipeline; these tests pin what the fixtures' (rule, path, line) cannot: the tag that says whether
the op → C++ binding was read whole, and the forms of a dtype choice the C++ reader understands.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pr_review.detectors.state import _kernel_dtype_choices
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review
from pr_review.repofacts import _jit_path

from test_fixtures_rules import FIXTURES, build_fixture_repo

FIRE = FIXTURES / "fake-impl-mismatch" / "fire-kernel-dtype-conditional-fake-stale"


def _findings(tmp_path: Path, delete: list[str]):
    repo = build_fixture_repo(FIRE, tmp_path / "repo", delete)
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter",
                                  pr=PRInfo(title="attn fp8")))
    return [f for f in report.all_findings if f.rule == "fake-impl-mismatch"]


def test_binding_read_through_the_jit_config_is_verified(tmp_path: Path) -> None:
    [finding] = _findings(tmp_path, [])
    assert finding.tag == "verified"
    assert "BFloat16" in finding.problem and "`is_fp8`" in finding.problem
    # the fake's allocation and the kernel's choice are both named
    assert ("aiter/ops/attn.py", 14) in {(e.path, e.line) for e in finding.evidence}
    assert ("csrc/py_itfs_ck/attn_fwd_kernels.cu", 16) in {(e.path, e.line) for e in finding.evidence}


def test_binding_by_name_alone_is_inferred(tmp_path: Path) -> None:
    # no optCompilerConfig.json in either tree: only the entry's name ties the op to the changed file
    case = tmp_path / "case"
    for side in ("base", "head"):
        for src in (FIRE / side).rglob("*"):
            if src.is_file() and src.name != "optCompilerConfig.json":
                dest = case / side / src.relative_to(FIRE / side)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(src.read_bytes())
    repo = build_fixture_repo(case, tmp_path / "repo", [])
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter",
                                  pr=PRInfo(title="attn fp8")))
    [finding] = [f for f in report.all_findings if f.rule == "fake-impl-mismatch"]
    assert finding.tag == "inferred" and finding.severity == "medium"
    assert finding.action.startswith("Reviewer should confirm")


KERNEL = """
std::vector<at::Tensor> attn_fwd(at::Tensor &q, const at::Tensor &k, std::optional<at::Tensor> out_)
{{
    auto opts = q.options();
{body}
    at::Tensor lse = torch::empty({{q.size(0)}}, opts.dtype(torch::kFloat32));
    return {{out, lse}};
}}
"""


@pytest.mark.parametrize("body, constant, condition", [
    # the input's arm first
    ("    auto t = q.dtype() != at::kFloat8_e4m3fn ? q.scalar_type() : at::kBFloat16;\n"
     "    at::Tensor out = at::empty({q.size(0)}, opts.dtype(t));", "BFloat16", "!(q.dtype() != at::kFloat8_e4m3fn)"),
    # a default, overridden under an if
    ("    at::ScalarType t = q.scalar_type();\n"
     "    if (use_fp32_out) { t = at::ScalarType::Float; }\n"
     "    auto out = torch::empty({q.size(0)}, opts.dtype(t));", "Float", "use_fp32_out"),
    # inline, through an options local
    ("    auto o = q.options().dtype(fp8 ? torch::kBFloat16 : q.scalar_type());\n"
     "    auto out = torch::empty({q.size(0)}, o);", "BFloat16", "fp8"),
])
def test_dtype_choices_read(body: str, constant: str, condition: str) -> None:
    text = KERNEL.format(body=body)
    changed = set(range(1, text.count("\n") + 2))
    [choice] = _kernel_dtype_choices(text, "attn_fwd", changed)
    assert (choice.output, choice.constant, choice.condition, choice.source, choice.source_index) == \
        (0, constant, condition, "q", 0)


@pytest.mark.parametrize("body", [
    "    auto out = torch::empty({q.size(0)}, opts.dtype(q.scalar_type()));",  # no condition
    "    auto out = torch::empty({q.size(0)}, opts.dtype(fp8 ? torch::kBFloat16 : torch::kHalf));",  # no input arm
    "    auto out = torch::empty({q.size(0)}, opts.dtype(fp8 ? torch::kBFloat16 : k.scalar_type()));\n"
    "    out = out_.value();",  # the caller's tensor on another path still counts as an allocation site: read
])
def test_dtype_choices_not_read(body: str) -> None:
    text = KERNEL.format(body=body)
    changed = set(range(1, text.count("\n") + 2))
    choices = _kernel_dtype_choices(text, "attn_fwd", changed)
    if "k.scalar_type()" in body:
        assert [(c.source, c.source_index) for c in choices] == [("k", 1)]
    else:
        assert choices == []


def test_choice_outside_the_changed_lines_is_not_reported() -> None:
    text = KERNEL.format(body="    auto out = torch::empty({q.size(0)}, opts.dtype(fp8 ? torch::kBFloat16 : q.scalar_type()));")
    assert _kernel_dtype_choices(text, "attn_fwd", {4}) == []  # the PR changed `auto opts`, not the choice


def test_jit_source_paths() -> None:
    assert _jit_path("f'{AITER_CSRC_DIR}/py_itfs_ck/mha_fwd_kernels.cu'") == "csrc/py_itfs_ck/mha_fwd_kernels.cu"
    assert _jit_path("f'{AITER_CSRC_DIR}/kernels/'") == "csrc/kernels/"
    assert _jit_path("f'{CK_DIR}/example/x.cpp'") is None  # a root not read: the binding is not read whole
    assert _jit_path(3) is None


def test_starred_return_has_no_visible_arity() -> None:
    # fla 5337b5ad7c: `return (*outputs[:4], x, y, *outputs[6:])` is 15 outputs, not 4
    import ast

    from pr_review.detectors.state import _return_shape
    fake = ast.parse("def f(a):\n    outputs = g(a)\n    return (*outputs[:4], a, a, *outputs[6:])\n").body[0]
    assert _return_shape(fake) is None


FAKE = """
def fake(q, k, out=None):
    dtype = q.dtype
{body}
    lse = torch.empty((q.size(0),), dtype=torch.float32, device=q.device)
    return [out_tensor, lse]
"""


@pytest.mark.parametrize("body, stale", [
    # aiter 8a4646e1f7 gen_mha_varlen_fwd_fake_tensor: a list return, the dtype through a local
    ("    if out is not None:\n        out_tensor = out\n    else:\n"
     "        out_tensor = torch.empty(q.shape, device=q.device, dtype=dtype)", True),
    ("    out_tensor = torch.empty_like(q) if out is None else out", False),  # an IfExp is not read: quiet
    ("    out_tensor = torch.empty_like(q)", True),
    # #1844's fix: the fake takes the kernel's condition
    ("    out_dtype = torch.bfloat16 if dtype == torch.float8_e4m3fnuz else dtype\n"
     "    out_tensor = torch.empty(q.shape, device=q.device, dtype=out_dtype)", False),
    ("    if q.dtype == torch.float8_e4m3fnuz:\n        out_tensor = torch.empty(q.shape, dtype=torch.bfloat16)\n"
     "    else:\n        out_tensor = torch.empty_like(q)", False),
    ("    out_tensor = out", False),  # only the caller's tensor
])
def test_stale_fake_allocations(body: str, stale: bool) -> None:
    import ast

    from pr_review.detectors.state import _stale_fake_allocations
    tree = ast.parse(FAKE.format(body=body))
    found = _stale_fake_allocations(tree, tree.body[0], 0)
    assert (found is not None) == stale
    if stale:
        assert found[2] == "q"
    assert _stale_fake_allocations(tree, tree.body[0], 1) is None  # lse is float32 on every path
