"""Production scale from profile data: D9's 🔴 and dropped extents, and magic-constant's derivations."""
from __future__ import annotations

import ast
from pathlib import Path

import yaml

from pr_review.detectors.shapes import (LIMIT, AtHand, Scale, ShapeResolver, derivation, id_table_bound, numel,
                                       tensor_extent)
from pr_review.model import PRInfo
from pr_review.pipeline import ReviewRequest, review
from pr_review.profiles import load_profiles

from conftest import git
from test_fixtures_rules import FIXTURES, build_fixture_repo

PROFILES = load_profiles()


def _review_fixture(rule: str, case: str, tmp_path: Path, profile: str | None = None):
    path = FIXTURES / rule / case
    expect = yaml.safe_load((path / "expect.yml").read_text()) or {}
    tmp_path.mkdir(parents=True, exist_ok=True)
    repo = build_fixture_repo(path, tmp_path / "repo", [])
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None,
                                  profile=profile or expect.get("profile", "aiter"), base_tip=git(repo, "rev-parse", "main").strip(),
                                  pr=PRInfo(title="", body="")))
    return [f for f in report.all_findings if f.rule == rule]


def test_a_tensor_past_2g_at_production_scale_is_red_and_quotes_the_shape(tmp_path: Path) -> None:
    findings = _review_fixture("int32-index-overflow", "fire-production-scale-logits", tmp_path)
    assert findings and all(f.severity == "high" for f in findings)
    for f in findings:
        assert "max_num_batched_tokens=131072" in f.trigger and "vocab_size=163840" in f.trigger
        assert "Kimi-K2" in f.trigger


def test_without_a_shown_allocation_the_finding_stays_a_warning(tmp_path: Path) -> None:
    findings = _review_fixture("int32-index-overflow", "fire-row-index-times-stride", tmp_path)
    assert findings and all(f.severity == "medium" and not f.trigger for f in findings)


def test_id_tables_are_dropped_because_the_profile_caps_them(tmp_path: Path) -> None:
    assert not _review_fixture("int32-index-overflow", "clean-id-table-stored", tmp_path / "a")
    lines = {f.line for f in _review_fixture("int32-index-overflow", "clean-id-table-stored", tmp_path / "g", "generic")}
    assert lines == {15, 22}  # without the profile's figures nothing bounds the tables


def test_id_table_bound_is_quoted_from_the_profile() -> None:
    entries, why = id_table_bound(Scale(PROFILES["atom"]))
    assert entries == 1024 * 1048576 < LIMIT and "max_num_seqs" in why


def _scope(code: str) -> ast.FunctionDef:
    return ast.parse(code).body[0]  # type: ignore[return-value]


def test_shapes_follow_reshapes_unpacking_and_config_figures() -> None:
    variant = Scale(PROFILES["atom"]).variants[0]  # DeepSeek-V3
    func = _scope(
        "def f(cfg, x):\n"
        "    t = cfg.max_num_batched_tokens\n"
        "    a = torch.empty((t, cfg.num_attention_heads, cfg.kv_lora_rank + cfg.qk_rope_head_dim))\n"
        "    b = a.view(-1, cfg.kv_lora_rank + cfg.qk_rope_head_dim)\n"
        "    rows, width = b.shape\n"
        "    c = torch.zeros(rows, triton.cdiv(width, 64))\n"
        "    d = torch.empty_like(x)\n")
    resolver = ShapeResolver(func, variant)
    shape_of = {n.targets[0].id: n.value for n in func.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
    assert [d.value for d in resolver.shape(shape_of["a"])] == [131072, 128, 576]
    assert [d.value for d in resolver.shape(shape_of["b"])] == [131072 * 128, 576]
    assert [d.value for d in resolver.shape(shape_of["c"])] == [131072 * 128, 9]
    assert resolver.shape(shape_of["d"]) is None  # a parameter's shape is not shown
    assert numel(resolver.shape(shape_of["a"])).value > LIMIT


def test_extent_takes_the_largest_model_and_needs_every_dimension() -> None:
    scale = Scale(PROFILES["atom"])
    func = _scope("def f(config, n):\n    x = torch.empty(config.max_num_seqs, config.num_attention_heads)\n"
                  "    y = torch.empty(n, config.hidden_size)\n")
    extent = tensor_extent(scale, func, ast.Name(id="x"))
    assert extent.elements == 1024 * 128 and extent.model in ("DeepSeek-V3", "DeepSeek-V4")
    assert tensor_extent(scale, func, ast.Name(id="y")) is None


def test_a_profile_without_scale_attaches_nothing() -> None:
    assert not Scale(PROFILES["generic"])


def test_derivation_names_one_dimension_a_sum_or_a_product() -> None:
    hands = [AtHand(512, "self.kv_lora_rank", ""), AtHand(64, "self.qk_rope_head_dim", ""), AtHand(128, "cfg.n_heads", "")]
    assert derivation(576, hands)[0] == "`self.kv_lora_rank + self.qk_rope_head_dim`"
    assert derivation(8192, hands)[0] == "`self.qk_rope_head_dim * cfg.n_heads`"
    assert derivation(128, hands)[0] == "`cfg.n_heads`"
    assert derivation(1000, hands) is None


def test_magic_constant_message_names_the_derivation(tmp_path: Path) -> None:
    findings = _review_fixture("magic-constant", "fire-mla-cache-width", tmp_path)
    assert {f.line for f in findings} == {8, 11}
    for f in findings:
        assert "kv_lora_rank + " in f.problem and "qk_rope_head_dim`" in f.problem, f.problem


def test_shape_positions_exclude_values_and_divisors() -> None:
    from pr_review.detectors.shapes import _shape_literals

    def literals(code: str) -> list[int]:
        return [c.value for c in _shape_literals(ast.parse(code).body[0].value)]
    assert literals("torch.randint(0, 256, (n, 576))") == [576]  # low/high are values
    assert literals("torch.full((n, 576), 7)") == [576]  # the fill value is not a shape
    assert literals("x.new_empty((n, d // 128, 3 * 64))") == [3, 64]  # a divisor is a group size


def test_a_launcher_check_against_the_int32_range_caps_the_tensor() -> None:
    from pr_review.detectors.index_width import _int32_guarded
    tree = ast.parse("LIM = 2**31 - 1\n"
                     "def ok(x, w):\n    off = (x.shape[0] - 1) * x.stride(0) + 7\n    return off <= LIM\n"
                     "def ok2(y):\n    return y.stride(0) * y.shape[0] < torch.iinfo(torch.int32).max\n"
                     "def other(z):\n    return z.stride(0) < 4096\n")
    assert _int32_guarded(tree) == {"x", "y"}


def test_a_flag_that_picks_a_kernel_mode_is_not_a_cap() -> None:
    from pr_review.detectors.index_width import _int32_guarded
    tree = ast.parse("def launch(kv):\n    within_2gb = kv.shape[0] * kv.stride(0) * 2 <= 0x80000000\n"
                     "    kernel[(1,)](kv, kv.stride(0), WITHIN_2GB=within_2gb)\n")
    assert _int32_guarded(tree) == set()
