"""Data tests for rules/profiles/*.yml: schema, regexes, rule ids and the seeds' facts.

These tests read only the YAML files and the JSON schemas in this repository.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[1]
PROFILES_DIR = ROOT / "rules" / "profiles"
SCHEMA_DIR = ROOT / "rules" / "schema"
NAMES = ["aiter", "atom", "vllm", "generic"]

# Every rule of the catalog (design.md §5's concepts are a subset, checked by test_catalog_data.py): a
# PR type may call for a rule measured apart from the concept it was split from.
CONCEPTS = {yaml.safe_load(p.read_text())["id"] for p in (ROOT / "rules" / "catalog").rglob("*.yml")}


GROUPS = {
    "coverage", "bypass", "arch-dtype", "state", "sync", "resources", "streams", "perf-evidence",
    "housekeeping", "triton", "flydsl", "description", "structure", "process",
}

# Condition keys whose values are regexes (a string or a list of strings).
REGEX_KEYS = {"path", "all_paths", "new_path", "changed_path", "added", "deleted", "title", "not_added"}
# Keys of a tier question's `structural` hint that hold regexes.
STRUCTURAL_REGEX_KEYS = {"pattern", "line", "importers", "search", "applies_to"}


# --------------------------------------------------------------------------- fixtures


def _load_yaml(path: Path):
    with path.open(encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _load_json(path: Path):
    with path.open(encoding="utf-8") as fh:
        return json.load(fh)


PROFILES = {name: _load_yaml(PROFILES_DIR / f"{name}.yml") for name in NAMES}
PROFILE_SCHEMA = _load_json(SCHEMA_DIR / "profile.schema.json")
FAMILIES_SCHEMA = _load_json(SCHEMA_DIR / "families.schema.json")
CONDITION_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$ref": "#/$defs/condition",
    "$defs": FAMILIES_SCHEMA["$defs"],
}


def _as_list(value):
    return value if isinstance(value, list) else [value]


def _condition_regexes(cond: dict):
    """Yield every regex string in a `when:` condition, recursively."""
    for key, value in cond.items():
        if key in REGEX_KEYS:
            yield from _as_list(value)
        elif key == "added_in":
            yield from _as_list(value["path"])
            yield from _as_list(value["line"])
        elif key == "any":
            for sub in value:
                yield from _condition_regexes(sub)


def _all_regexes(profile: dict):
    """(where, regex) for every regex-valued field of a profile."""
    runtime = profile.get("runtime", {})
    for key in ("static", "test"):
        for rx in runtime.get(key, []):
            yield f"runtime.{key}", rx
    for row in profile.get("tiers", []):
        if row.get("regex"):
            yield "tiers", row["path"]
    for q in profile.get("tier_questions", []):
        for key, value in (q.get("structural") or {}).items():
            if key in STRUCTURAL_REGEX_KEYS:
                for rx in _as_list(value):
                    yield f"tier_questions.{q['id']}.{key}", rx
    for pt in profile.get("pr_types", []):
        for rx in _condition_regexes(pt["when"]):
            yield f"pr_types.{pt['id']}", rx
    rel = profile.get("relevance", {})
    for key in ("markers", "paths"):
        for rx in rel.get(key, []):
            yield f"relevance.{key}", rx
    for rx in profile.get("test_dirs", []):
        yield "test_dirs", rx
    for sig in profile.get("ci_infra_signatures", []):
        yield "ci_infra_signatures", sig["pattern"]


# --------------------------------------------------------------------------- helpers
# Small reference readings of the profile data; they document the contract the engine
# implements (first matching tier row wins; regexes are searched in the path).


def tier_row(profile: dict, path: str):
    for row in profile["tiers"]:
        if row.get("regex"):
            if re.search(row["path"], path):
                return row
        elif row["path"] == path:
            return row
    return None


def tier_of(profile: dict, path: str):
    row = tier_row(profile, path)
    return row["tier"] if row else None


def is_static(profile: dict, path: str) -> bool:
    return any(re.search(rx, path) for rx in profile["runtime"].get("static", []))


def is_test(profile: dict, path: str) -> bool:
    return any(re.search(rx, path) for rx in profile["runtime"].get("test", []))


def ci_runs(profile: dict, path: str) -> bool:
    return any(re.search(rx, path) for rx in profile["test_dirs"])


def infra_reason(profile: dict, line: str):
    for sig in profile.get("ci_infra_signatures", []):
        if re.search(sig["pattern"], line):
            return sig["reason"]
    return None


def _rx_any(value, text: str, flags: int = 0) -> bool:
    return any(re.search(rx, text, flags) for rx in _as_list(value))


def holds(cond: dict, diff: dict) -> bool:
    """Evaluate a condition the way families.schema.json describes it.

    diff: {"files": {path: {"status": "added"|"modified"|..., "added": [...], "deleted": [...]}},
           "title": str}
    """
    files = diff.get("files", {})
    added = [(p, line) for p, f in files.items() for line in f.get("added", [])]
    deleted = [line for f in files.values() for line in f.get("deleted", [])]
    for key, value in cond.items():
        if key == "path":
            ok = any(_rx_any(value, p) for p in files)
        elif key == "all_paths":
            ok = bool(files) and all(_rx_any(value, p) for p in files)
        elif key == "new_path":
            ok = any(_rx_any(value, p) for p, f in files.items() if f.get("status") == "added")
        elif key == "changed_path":
            ok = any(
                _rx_any(value, p)
                for p, f in files.items()
                if f.get("status") != "added" and (f.get("added") or f.get("deleted"))
            )
        elif key == "added":
            ok = any(_rx_any(value, line) for _, line in added)
        elif key == "deleted":
            ok = any(_rx_any(value, line) for line in deleted)
        elif key == "added_in":
            ok = any(_rx_any(value["path"], p) and _rx_any(value["line"], line) for p, line in added)
        elif key == "title":
            ok = _rx_any(value, diff.get("title", ""), re.IGNORECASE)
        elif key == "not_added":
            ok = not any(_rx_any(value, line) for _, line in added)
        elif key == "top_dirs_at_least":
            ok = len({p.split("/", 1)[0] for p in files}) >= value
        elif key == "any":
            ok = any(holds(sub, diff) for sub in value)
        else:  # pragma: no cover - the schema test rejects unknown keys
            raise AssertionError(f"unknown condition key {key}")
        if not ok:
            return False
    return True


def fired(profile: dict, diff: dict) -> set[str]:
    return {pt["id"] for pt in profile.get("pr_types", []) if holds(pt["when"], diff)}


def _diff(title: str = "", **files) -> dict:
    """_diff("t", **{"a/b.py": ("modified", ["+line"], ["-line"])})"""
    out = {}
    for path, (status, add, dele) in files.items():
        out[path] = {"status": status, "added": list(add), "deleted": list(dele)}
    return {"title": title, "files": out}


# --------------------------------------------------------------------------- schema


def test_schemas_are_valid_json_schema():
    Draft202012Validator.check_schema(PROFILE_SCHEMA)
    Draft202012Validator.check_schema(CONDITION_SCHEMA)


@pytest.mark.parametrize("name", NAMES)
def test_profile_validates_against_schema(name):
    errors = sorted(Draft202012Validator(PROFILE_SCHEMA).iter_errors(PROFILES[name]), key=str)
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


@pytest.mark.parametrize("name", NAMES)
def test_profile_name_matches_file(name):
    assert PROFILES[name]["name"] == name


@pytest.mark.parametrize("name", NAMES)
def test_every_when_is_a_family_condition(name):
    validator = Draft202012Validator(CONDITION_SCHEMA)
    for pt in PROFILES[name].get("pr_types", []):
        errors = list(validator.iter_errors(pt["when"]))
        assert not errors, f"{name}:{pt['id']}: " + "; ".join(e.message for e in errors)


@pytest.mark.parametrize("name", NAMES)
def test_all_regexes_compile(name):
    seen = 0
    for where, rx in _all_regexes(PROFILES[name]):
        assert isinstance(rx, str) and rx, f"{name}:{where}: empty regex"
        try:
            re.compile(rx)
        except re.error as exc:  # pragma: no cover - reported as failure
            pytest.fail(f"{name}:{where}: {rx!r} does not compile: {exc}")
        seen += 1
    assert seen > 0


@pytest.mark.parametrize("name", NAMES)
def test_pr_type_rules_are_catalog_concepts(name):
    for pt in PROFILES[name].get("pr_types", []):
        assert pt["rules"], f"{name}:{pt['id']} names no rule"
        unknown = set(pt["rules"]) - CONCEPTS
        assert not unknown, f"{name}:{pt['id']}: unknown rule ids {sorted(unknown)}"
        assert len(set(pt["rules"])) == len(pt["rules"]), f"{name}:{pt['id']}: duplicate rule id"


@pytest.mark.parametrize("name", NAMES)
def test_ids_are_unique(name):
    p = PROFILES[name]
    for key in ("pr_types", "tier_questions"):
        ids = [x["id"] for x in p.get(key, [])]
        assert len(ids) == len(set(ids)), f"{name}.{key}: duplicate ids"
    paths = [row["path"] for row in p.get("tiers", [])]
    assert len(paths) == len(set(paths)), f"{name}.tiers: duplicate rows"


# --------------------------------------------------------------------------- identity


def test_markers_and_fallbacks():
    assert PROFILES["aiter"]["markers"] == ["aiter/jit/core.py"]
    assert PROFILES["atom"]["markers"] == ["atom/model_engine/"]
    assert PROFILES["vllm"]["markers"] == ["vllm/platforms/rocm.py"]
    assert PROFILES["generic"]["markers"] == []
    assert PROFILES["vllm"]["code_fallback"] == "aiter"
    assert PROFILES["generic"]["code_fallback"] == "aiter"
    assert "code_fallback" not in PROFILES["aiter"]


# --------------------------------------------------------------------------- tiers


@pytest.mark.parametrize(
    "name,path,tier",
    [
        ("aiter", "aiter/jit/core.py", 1),
        ("aiter", "aiter/__init__.py", 1),
        ("aiter", "aiter/fused_moe.py", 2),
        ("aiter", "aiter/mla.py", 2),
        ("aiter", "aiter/tuned_gemm.py", 2),
        ("aiter", "aiter/ops/mha.py", 2),
        ("aiter", "aiter/ops/attention.py", 2),
        ("aiter", "aiter/ops/gemm_op_a8w8.py", 2),
        ("aiter", "aiter/ops/moe_op.py", 2),
        ("aiter", "aiter/ops/quant.py", 2),
        ("aiter", "aiter/ops/rope.py", 3),  # a single op's wrapper
        ("aiter", "aiter/ops/triton/attention/mla_decode.py", 3),
        ("aiter", "csrc/kernels/topk.cu", 3),
        ("aiter", "csrc/include/aiter_hip_common.h", None),  # left to the header fan-in question
        ("atom", "atom/model_engine/model_runner.py", 1),
        ("atom", "atom/config.py", 1),
        ("atom", "atom/models/deepseek_v2.py", 1),
        ("atom", "atom/model_ops/moe.py", 2),
        ("atom", "atom/model_engine/scheduler.py", 2),
        ("atom", "atom/model_ops/attention_mla.py", 2),
        ("atom", "atom/model_ops/attentions/aiter_mla.py", 2),
        ("atom", "atom/model_ops/linear.py", 2),
        ("atom", "atom/model_ops/attention_mha.py", 2),
        ("atom", "atom/model_ops/layernorm.py", 2),
        ("atom", "atom/models/deepseek_v4.py", 2),
        ("atom", "atom/plugin/vllm/model_wrapper.py", 3),
        ("atom", "atom/plugin/sglang/deepseek_v4_bridge.py", 3),
        ("atom", "atom/models/qwen3.py", None),  # left to the questions
        ("vllm", "vllm/v1/attention/backends/rocm_attn.py", 1),
        ("vllm", "vllm/v1/attention/backends/rocm_aiter_fa.py", 1),
        ("vllm", "vllm/v1/attention/backends/rocm_aiter_unified_attn.py", 1),
        ("vllm", "vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py", 1),
        ("vllm", "vllm/model_executor/kernels/linear/scaled_mm/aiter.py", 1),
        ("vllm", "vllm/model_executor/layers/fused_moe/experts/rocm_aiter_moe.py", 1),
        ("vllm", "vllm/platforms/rocm.py", 2),
        ("vllm", "vllm/_aiter_ops.py", 2),
        ("vllm", "vllm/kernels/aiter_ops.py", 2),
        ("vllm", "requirements/rocm.txt", 3),
        ("vllm", "requirements/kv_connectors_rocm.txt", 3),
        ("vllm", ".buildkite/ci_config_rocm.yaml", 3),
        ("vllm", "docker/Dockerfile.rocm_base", 3),
        ("vllm", "vllm/model_executor/layers/fused_moe/configs/E=8,N=7168,device_name=AMD_Instinct_MI300X.json", 3),
        ("vllm", "vllm/v1/attention/backends/flash_attn.py", None),
    ],
)
def test_seed_tier_rows(name, path, tier):
    assert tier_of(PROFILES[name], path) == tier


def test_tier_table_details():
    aiter = PROFILES["aiter"]
    core = tier_row(aiter, "aiter/jit/core.py")
    assert core["commits"] == 182 and core["blast_radius"] and core["failure_mode"] and core["special"]
    init = tier_row(aiter, "aiter/__init__.py")
    assert "try/except" in init["special"]
    dsv2 = tier_row(PROFILES["atom"], "atom/models/deepseek_v2.py")
    for family in ("V2", "V3", "V3-0324", "Kimi"):
        assert family in dsv2["special"]
    runner = tier_row(PROFILES["atom"], "atom/model_engine/model_runner.py")
    assert "cudagraph" in runner["special"]
    for name in ("aiter", "atom"):
        for row in PROFILES[name]["tiers"]:
            if not row.get("regex"):
                assert row.get("blast_radius") and row.get("failure_mode"), f"{name}:{row['path']}"


def test_atom_plugin_bridges_are_tier3_high_visibility():
    atom = PROFILES["atom"]
    for path in (
        "atom/plugin/vllm/deepseek_v4_bridge.py",
        "atom/plugin/sglang/deepseek_v4_bridge.py",
        "atom/plugin/sglang/models/kimi_k25.py",
        "atom/plugin/rtpllm/models/glm5.py",
        "atom/plugin/register.py",
    ):
        row = tier_row(atom, path)
        assert row and row["tier"] == 3 and row.get("high_visibility") is True, path
    assert not tier_row(atom, "atom/model_ops/moe.py").get("high_visibility")


def test_tier_questions():
    def ids(name):
        return [q["id"] for q in PROFILES[name]["tier_questions"]]

    assert ids("atom") == ["Q1", "Q2", "Q3", "Q4"]
    assert ids("aiter")[:3] == ["Q1", "Q2", "Q3"]
    assert ids("vllm") == ["Q1", "Q2", "Q3"]

    def q(name, qid):
        return next(x for x in PROFILES[name]["tier_questions"] if x["id"] == qid)

    assert q("aiter", "Q1")["tier"] == 1 and q("aiter", "Q1")["structural"]["kind"] == "import-chain"
    assert q("aiter", "Q1")["structural"]["package"] == "aiter"
    assert q("aiter", "Q2")["tier"] == 2 and q("aiter", "Q3")["tier"] == 2
    fanin = [x for x in PROFILES["aiter"]["tier_questions"] if (x.get("structural") or {}).get("kind") == "header-fanin"]
    assert fanin and fanin[0]["tier"] == 2 and fanin[0]["structural"]["min"] == 10
    assert q("atom", "Q1")["tier"] == 1 and q("atom", "Q2")["tier"] == 1
    assert q("atom", "Q2")["structural"] == {"kind": "subclass-count", "min": 3, "search": "^atom/models/"}
    assert q("atom", "Q3")["tier"] == 2
    assert q("atom", "Q4")["tier"] == 3 and q("atom", "Q4")["structural"]["kind"] == "plugin-bridge"
    assert [q("vllm", i)["tier"] for i in ("Q1", "Q2", "Q3")] == [1, 2, 2]


@pytest.mark.parametrize("name", ["aiter", "atom", "vllm"])
def test_tier_checks_cover_tier1_and_tier2(name):
    checks = PROFILES[name]["tier_checks"]
    assert set(checks) == {"tier1", "tier2"}
    assert len(checks["tier1"]) >= 3 and len(checks["tier2"]) >= 3


def test_header_fanin():
    aiter = PROFILES["aiter"]
    assert aiter["header_fanin_tier2"] == 10
    assert aiter["header_fanin_exclude"] == ["rocm_ops.hpp"]


# --------------------------------------------------------------------------- runtime surface


@pytest.mark.parametrize(
    "name,path,static",
    [
        ("aiter", "README.md", True),
        ("aiter", "docs/api/gemm.rst", True),
        ("aiter", ".claude/skills/review-pr/SKILL.md", True),
        ("aiter", ".github/workflows/aiter-test.yaml", True),
        ("aiter", ".github/scripts/split_tests.sh", True),
        ("aiter", "LICENSE", True),
        ("aiter", "aiter/configs/a8w8_blockscale_tuned_gemm.csv", False),
        ("aiter", "aiter/jit/optCompilerConfig.json", False),
        ("aiter", "aiter/jit/core.py", False),
        ("aiter", "csrc/kernels/topk.cu", False),
        ("aiter", "requirements.txt", False),
        ("aiter", "3rdparty/composable_kernel", False),
        ("atom", ".claude/commands/add-model.md", True),
        ("atom", ".readthedocs.yaml", True),
        ("atom", "docs/sphinx/requirements.txt", True),
        ("atom", "recipes/atom_vllm/Kimi-K2.md", True),
        ("atom", "atom/model_engine/model_runner.py", False),
        ("atom", "atom/plugin/vllm/vllm-version.env", False),
        ("vllm", ".buildkite/ci_config_rocm.yaml", True),
        ("vllm", "docs/getting_started/installation/gpu.rocm.inc.md", True),
        ("vllm", "requirements/rocm.txt", False),
        ("vllm", "CMakeLists.txt", False),
        ("vllm", "vllm/platforms/rocm.py", False),
        ("generic", "doc/index.rst", True),
        ("generic", "notes/todo.txt", True),
        ("generic", "requirements-dev.txt", False),
        ("generic", "src/lib.rs", False),
    ],
)
def test_runtime_static(name, path, static):
    assert is_static(PROFILES[name], path) is static


@pytest.mark.parametrize(
    "name,path,test",
    [
        ("aiter", "op_tests/test_mha.py", True),
        ("aiter", "aiter/ops/mha.py", False),
        ("atom", "tests/test_envs.py", True),
        ("atom", "atom/utils/envs.py", False),
        ("vllm", "tests/kernels/test_rocm_attention.py", True),
        ("generic", "pkg/tests/test_x.py", True),
        ("generic", "pkg/x.py", False),
    ],
)
def test_runtime_test(name, path, test):
    assert is_test(PROFILES[name], path) is test


# --------------------------------------------------------------------------- CI facts


@pytest.mark.parametrize(
    "name,path,runs",
    [
        # aiter-test.yaml: split_tests.sh --test-type aiter scans op_tests/ at depth 1.
        ("aiter", "op_tests/test_mha.py", True),
        # triton-test.yaml: split_tests.sh --test-type triton scans op_tests/triton_tests/ recursively.
        ("aiter", "op_tests/triton_tests/attention/test_mla_decode.py", True),
        ("aiter", "op_tests/flydsl_tests/test_kernel.py", False),
        ("aiter", "op_tests/multigpu_tests/test_allreduce.py", False),  # main branch only
        ("aiter", "op_tests/tuning_tests/test_new.py", False),
        ("aiter", "op_tests/opus/device/test_new.py", False),
        # ATOM pre-checks.yaml -> run_unit_tests.sh: pytest tests/ minus plugin/ and the server test.
        ("atom", "tests/test_block_pool.py", True),
        ("atom", "tests/model_ops/test_linear.py", True),
        ("atom", "tests/plugin/test_vllm_register.py", False),
        ("atom", "tests/entrypoints/test_openai_server.py", False),
        ("atom", "tests/entrypoints/test_protocol.py", True),
        ("vllm", "tests/kernels/test_x.py", True),
        ("generic", "tests/test_x.py", True),
    ],
)
def test_test_dirs(name, path, runs):
    assert ci_runs(PROFILES[name], path) is runs


def test_downstream_labels():
    aiter = PROFILES["aiter"]["downstream_labels"]
    for label in ("ci:atom", "ci:sglang", "ci:vllm", "ci:all"):
        assert label in aiter
    assert "ci:triton-300x" not in aiter  # widens aiter's own tests, not a downstream
    atom = PROFILES["atom"]["downstream_labels"]
    assert set(atom) == {"ci:full", "ci:atom", "ci:vllm", "ci:sglang"}


def test_env():
    assert PROFILES["aiter"]["env"]["prefixes"] == ["AITER_"]
    assert PROFILES["atom"]["env"] == {"prefixes": ["ATOM_"], "registry": ["atom/utils/envs.py"]}
    assert PROFILES["vllm"]["env"] == {"prefixes": ["VLLM_"], "registry": ["vllm/envs.py"]}


@pytest.mark.parametrize("name", ["aiter", "atom", "vllm"])
def test_shared_infra_signatures_everywhere(name):
    shared = {s["pattern"] for s in PROFILES["generic"]["ci_infra_signatures"]}
    mine = {s["pattern"] for s in PROFILES[name]["ci_infra_signatures"]}
    assert shared <= mine


@pytest.mark.parametrize(
    "name,line",
    [
        ("aiter", "Failed to read pre-checks status after 60 attempts. Exiting workflow."),
        ("aiter", "##[error]The action 'Wait for Checks workflow' has timed out after 60 minutes."),
        ("aiter", "::error::Expected exactly one Aiter wheel artifact, found 0"),
        ("aiter", "ERROR: pip's dependency resolver does not currently take into account all the packages that are installed."),
        ("atom", "docs/readthedocs.com:atom — Read the Docs build failed!"),
        ("atom", "Failed to read Pre Checkin status after 30 attempts. Exiting workflow."),
        ("vllm", "Exited with status -1 (agent lost)"),
        ("generic", "The self-hosted runner: box308 lost communication with the server."),
        ("generic", "OSError: [Errno 28] No space left on device"),
        ("generic", "ERROR: HTTP error 503 while getting https://files.pythonhosted.org/packages/x.whl"),
        ("generic", "Error response from daemon: received unexpected HTTP status: 502 Bad Gateway"),
        ("generic", "API rate limit exceeded for installation ID 123."),
        ("generic", "##[error]The job running on runner r1 has exceeded the maximum execution time of 360 minutes."),
        ("generic", "curl: (6) Could not resolve host: github.com"),
        ("generic", "RuntimeError: No HIP GPUs are available; hipErrorNoDevice"),
    ],
)
def test_infra_signatures_match(name, line):
    assert infra_reason(PROFILES[name], line)


@pytest.mark.parametrize(
    "line",
    [
        "AssertionError: Tensor-likes are not close! Mismatched elements: 12 / 4096",
        "assert response.status_code == 200, got status code 500",
        "E   ImportError: cannot import name 'fused_moe_v2' from 'aiter'",
        "FAILED op_tests/test_mha.py::test_mha[dtype0-512-128] - RuntimeError: HIP error: invalid argument",
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB",
    ],
)
@pytest.mark.parametrize("name", NAMES)
def test_infra_signatures_leave_code_failures_alone(name, line):
    assert infra_reason(PROFILES[name], line) is None


# --------------------------------------------------------------------------- PR types


def test_aiter_has_no_pr_types():
    assert PROFILES["aiter"]["pr_types"] == []


def test_atom_pr_types_cover_the_seed_table():
    ids = {pt["id"] for pt in PROFILES["atom"]["pr_types"]}
    assert ids >= {
        "perf", "aiter-usage", "api-signature", "new-routing-value", "model-integration",
        "dispatch-change", "cudagraph", "plugin-interface", "config-tuning", "bug-fix",
        "fp8-quant", "weight-variant", "async-stream", "conditional-binding", "compile-op",
        "index-arithmetic", "kernel-call", "invariant-removed",
    }
    rules = {pt["id"]: set(pt["rules"]) for pt in PROFILES["atom"]["pr_types"]}
    assert {"perf-claim-no-numbers", "perf-hidden-recurring-cost"} <= rules["perf"]
    assert "plugin-bridge-stale" in rules["plugin-interface"]
    assert "plugin-bridge-stale" in rules["api-signature"]
    assert "cudagraph-capture-break" in rules["cudagraph"]
    assert "bugfix-without-test" in rules["bug-fix"]
    assert "weight-variant-double-pin" in rules["weight-variant"]


def test_vllm_pr_types_cover_the_seed_table():
    rules = {pt["id"]: set(pt["rules"]) for pt in PROFILES["vllm"]["pr_types"]}
    assert set(rules) == {
        "aiter-op", "attention-backend", "moe-quant", "mori-comm", "env-platform",
        "compile-custom-op", "build-ci-docker", "any",
    }
    assert {"sibling-variant-unfixed", "aiter-usage-unlinked", "int32-index-overflow"} <= rules["aiter-op"]
    assert {"default-swap-without-rollback", "env-var-knob"} <= rules["env-platform"]
    assert {"fake-impl-missing", "fake-impl-mismatch"} <= rules["compile-custom-op"]
    assert "downstream-ci-skipped" in rules["build-ci-docker"]


@pytest.mark.parametrize(
    "name,diff,expected",
    [
        ("atom", _diff("[Perf] fuse allreduce+rmsnorm", **{"atom/model_ops/layernorm.py": ("modified", ["x = 1"], [])}), {"perf"}),
        ("atom", _diff("Fix Kimi decode crash", **{"atom/models/deepseek_v2.py": ("modified", ["    y = 2"], ["    y = 1"])}), {"bug-fix", "model-integration"}),
        ("atom", _diff("plugin", **{"atom/plugin/sglang/deepseek_v4_bridge.py": ("modified", ["a = b"], [])}), {"plugin-interface"}),
        ("atom", _diff("x", **{"atom/model_ops/moe.py": ("modified", ["from aiter import fused_moe"], [])}), {"aiter-usage"}),
        ("atom", _diff("x", **{"atom/model_ops/moe.py": ("modified", ["    w_preshuffled = shuffle(w)"], [])}), {"weight-variant"}),
        ("atom", _diff("x", **{"atom/model_ops/linear.py": ("modified", ["def forward(self, x, scale):"], ["def forward(self, x):"])}), {"api-signature"}),
        ("atom", _diff("x", **{"atom/model_ops/linear.py": ("modified", [], ["    assert x.is_contiguous()"])}), {"invariant-removed"}),
        ("atom", _diff("x", **{"atom/model_ops/linear.py": ("modified", ["    elif dtype == torch.bfloat16:", "        out = a"], [])}), {"conditional-binding", "dispatch-change"}),
        ("atom", _diff("docs", **{"docs/index.md": ("modified", ["hello"], [])}), set()),
        ("vllm", _diff("x", **{"vllm/envs.py": ("modified", ["    \"VLLM_ROCM_USE_AITER_X\": lambda: True,"], [])}), {"env-platform", "any"}),
        ("vllm", _diff("x", **{"vllm/v1/attention/backends/rocm_attn.py": ("modified", ["x = 1"], [])}), {"attention-backend", "any"}),
        ("vllm", _diff("x", **{"requirements/rocm.txt": ("modified", ["amd-aiter==0.2"], [])}), {"build-ci-docker", "any"}),
        ("generic", _diff("Speed up parser", **{"src/p.py": ("modified", ["x"], [])}), {"perf"}),
        ("generic", _diff("Add tests", **{"tests/test_p.py": ("added", ["def test_a(): pass"], [])}), {"tests-only"}),
        ("generic", _diff("Bump deps", **{"pyproject.toml": ("modified", ["numpy>=2"], [])}), {"new-dependency"}),
    ],
)
def test_pr_types_fire_on_examples(name, diff, expected):
    assert fired(PROFILES[name], diff) == expected


# --------------------------------------------------------------------------- vLLM relevance gate

SEED_MARKER_WORDS = [
    "rocm", "amd", "hip", "aiter", "mori", "gfx9", "mi300", "mi350", "mi355",
    "mxfp", "fp8", "rccl", "hipblaslt", "hipgraph",
]


def _relevant_text(text: str) -> bool:
    return any(re.search(rx, text) for rx in PROFILES["vllm"]["relevance"]["markers"])


@pytest.mark.parametrize("word", SEED_MARKER_WORDS)
def test_relevance_markers_contain_seed_words(word):
    assert _relevant_text(word)
    assert _relevant_text(word.upper())
    assert _relevant_text(f"[{word}] tweak")


@pytest.mark.parametrize(
    "text",
    ["shipping a waiter memorizes the relationship", "[Bugfix] CUDA graph padding for flashinfer"],
)
def test_relevance_markers_ignore_lookalikes(text):
    assert not _relevant_text(text)


@pytest.mark.parametrize(
    "path",
    [
        "vllm/platforms/rocm.py",
        "vllm/_aiter_ops.py",
        "vllm/v1/attention/backends/rocm_aiter_fa.py",
        "vllm/v1/attention/backends/mla/rocm_aiter_mla.py",
        "vllm/model_executor/models/deepseek/amd/fused.py",
        "requirements/rocm.txt",
        "requirements/kv_connectors_rocm.txt",
        ".buildkite/ci_config_rocm.yaml",
        "docker/Dockerfile.rocm",
        "docker/Dockerfile.rocm_base",
        "csrc/rocm/attention.cu",
        "vllm/distributed/kv_transfer/kv_connector/v1/moriio/moriio_connector.py",
    ],
)
def test_relevance_paths_cover_seed_paths(path):
    assert any(re.search(rx, path) for rx in PROFILES["vllm"]["relevance"]["paths"])


def test_relevance_light_groups():
    rel = PROFILES["vllm"]["relevance"]
    assert rel["light_rules_groups"] == ["housekeeping", "description"]
    assert set(rel["light_rules_groups"]) <= GROUPS
    for name in ("aiter", "atom", "generic"):
        assert "relevance" not in PROFILES[name]
