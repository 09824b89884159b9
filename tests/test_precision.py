"""Issue 8: only measured rules annotate, the verdict follows what is trustworthy, repository facts are read."""
from __future__ import annotations

import pytest

from pr_review.catalog import load_catalog
from pr_review.git import CatFile, Repo
from pr_review.model import Finding, PRInfo, Report, replace
from pr_review.pipeline import ReviewRequest, review
from pr_review.profiles import load_profiles
from pr_review.report.render import render_markdown
from pr_review.repofacts import RepoFacts
from pr_review.source import Source

STABLE_BAR = 0.85
MIN_READ = 10


def test_every_stable_rule_carries_the_measurement_that_earned_it():
    catalog = load_catalog()
    for rule in catalog.rules.values():
        assert rule.stage in ("stable", "preview"), rule.id
        if rule.stage != "stable":
            continue
        m = rule.measurement
        assert m, f"{rule.id} is stable with no measurement"
        assert m["read"] >= MIN_READ, f"{rule.id}: only {m['read']} findings read"
        assert m["true_findings"] / m["read"] >= STABLE_BAR, f"{rule.id}: {m['true_findings']}/{m['read']} true is under 85 %"
        assert m["corpus"] and m["date"], rule.id
        assert m.get("profiles"), f"{rule.id}: a shipped rule names the profiles its corpus measured"


def test_a_rule_annotates_only_under_the_profiles_its_measurement_covers():
    rule = load_catalog().rules["env-var-knob"]
    measured = dict(rule.measurement, profiles=["aiter", "atom"])
    stable_on_rocm = replace(rule, stage="stable", measurement=measured)
    assert stable_on_rocm.annotates_in("aiter") and stable_on_rocm.annotates_in("atom")
    assert not stable_on_rocm.annotates_in("generic") and not stable_on_rocm.annotates_in("vllm")
    # A repository's own rule, measured on that repository, names no profile and annotates wherever it applies.
    own = replace(rule, stage="stable", measurement={k: v for k, v in measured.items() if k != "profiles"})
    assert own.annotates_in("generic")
    assert not replace(rule, stage="preview").annotates_in("aiter")


def _report(findings: list[Finding]) -> Report:
    return Report(schema=1, engine_version="t", repo="r", profile="aiter", base_ref="main", base_sha="a",
                  merge_base="a", head_sha="b", pr=PRInfo(), summary=[], runtime_surface=True,
                  runtime_reason="", stale=None, findings=findings, checklist=[], core_files=[], ci=[],
                  not_checked=[], notes=[], stats={}, timings={})


@pytest.mark.parametrize("findings, verdict", [
    ([], "LGTM"),
    ([Finding("r", "a.py", 1, "p", severity="medium", tag="inferred")], "LGTM"),
    ([Finding("r", "a.py", 1, "p", severity="low", tag="verified")], "LGTM"),
    ([Finding("r", "a.py", 1, "p", severity="medium", tag="verified")], "NEEDS WORK"),
    ([Finding("r", "a.py", 1, "p", severity="high", tag="inferred", trigger="M=1")], "BLOCK"),
])
def test_verdict_moves_only_on_trustworthy_findings(findings, verdict):
    assert _report(findings).verdict == verdict


def test_preview_findings_feed_the_checklist_but_not_the_annotations_or_verdict(repo_factory):
    repo = repo_factory({"aiter/__init__.py": "", "aiter/ops/act.py": "def act(x):\n    return x\n"},
                        {"aiter/ops/act.py": "def act(x):\n    # FIXME: fp8 input is not supported yet\n"
                                             "    return x\n"})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    catalog = load_catalog()
    assert catalog.rules["incomplete-code"].stage == "preview"
    assert [f.rule for f in report.preview_findings] == ["incomplete-code"]
    assert "incomplete-code" not in {f.rule for f in report.findings}
    assert report.verdict == "LGTM"
    item = next(c for c in report.checklist if c.rule == "incomplete-code")
    assert item.verdict == "FIRE"
    data = report.to_dict()
    assert data["findings"] == [] and data["preview_findings"][0]["rule"] == "incomplete-code"
    # With nothing annotated, the summary still points the reader at the preview finding.
    assert "1 finding(s) of unmeasured (preview) rules are marked **FIRE**" in render_markdown(report)
    assert "1 条尚未经测量的（preview）规则的发现" in render_markdown(report, language="zh")


def test_a_todo_is_quoted_whole(repo_factory):
    repo = repo_factory({"aiter/ops/act.py": "def act(x, kind):\n    return x\n"},
                        {"aiter/ops/act.py": "def act(x, kind):\n    # TODO(situv2): shared with the new kernels.\n"
                                             "    # Situv2 now runs as silu.\n    return x.silu()\n"})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    note = next(f for f in report.all_findings if f.rule == "incomplete-code")
    assert "shared with the new kernels. Situv2 now runs as silu." in note.problem
    assert (note.line, note.end_line) == (2, 3)


def test_description_rules_stay_undecided_without_a_description(repo_factory):
    repo = repo_factory({"aiter/ops/rms.py": "def rms(x):\n    return x\n"},
                        {"aiter/ops/rms.py": "def rms(x):\n    return x * 2\n"})
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter",
                                  pr=PRInfo(title="Make rmsnorm 2x faster")))
    assert not [f for f in report.all_findings if f.path == ""]
    perf = next(c for c in report.checklist if c.rule == "perf-claim-no-numbers")
    assert perf.verdict == "OPEN" and "no description" in perf.reason


@pytest.fixture
def facts(repo_factory):
    repo_dir = repo_factory({
        "aiter/__init__.py": "",
        "aiter/jit/core.py": "import os\n" + "".join(
            f'AITER_CONFIG_{n} = os.getenv("AITER_CONFIG_{n}", "x.csv")\n' for n in ("A", "B", "C")),
        "aiter/ops/gemm.py": "def gemm(x):\n    return x\n\n\nif __name__ == '__main__':\n    gemm(1)\n",
        "aiter/ops/user.py": "from aiter.ops.gemm import gemm\n",
        "csrc/tune/gemm_tune.py": "import argparse\n",
        "csrc/cli_tool.py": "import sys\n\nif __name__ == '__main__':\n    sys.exit(0)\n",
        "op_tests/op_benchmarks/bench_gemm.py": "",
        "op_tests/test_gemm.py": "",
        "docs/examples/demo.py": "",
        ".github/scripts/prebuild.py": "",
        "aiter/ops/triton/gluon/gfx1250/moe.py": "",
    }, {"README.md": "x\n"})
    repo = Repo.open(str(repo_dir))
    base = repo.text("rev-parse", "main").strip()
    head = repo.text("rev-parse", "pr").strip()
    catfile = CatFile(repo.root, 2 * 1024 * 1024)
    yield RepoFacts(load_profiles()["aiter"], Source(repo, catfile, base, head))
    catfile.close()


def test_repofacts_tells_library_code_from_tooling(facts):
    assert facts.is_library("aiter/ops/gemm.py")  # a __main__ block, but imported by the package
    assert facts.is_library("csrc/kernels/gemm.cu")
    assert facts.role("op_tests/op_benchmarks/bench_gemm.py") == "benchmark"  # measures, does not check
    assert facts.role("op_tests/test_gemm.py") == "test"
    for path in ("csrc/tune/gemm_tune.py", "csrc/cli_tool.py", "docs/examples/demo.py", ".github/scripts/prebuild.py"):
        assert facts.is_tooling(path), path


def test_repofacts_reads_the_config_registry_and_arch_directories(facts):
    assert facts.registered_family("aiter/jit/core.py", "AITER_CONFIG_FHMOE") == "AITER_CONFIG_"
    assert facts.registered_family("aiter/jit/core.py", "AITER_MOE_FORCE_BF16") is None
    assert facts.registered_family("aiter/ops/gemm.py", "AITER_CONFIG_FHMOE") is None
    assert facts.arch_of("aiter/ops/triton/gluon/gfx1250/moe.py") == "gfx1250"
    assert facts.arch_of("aiter/ops/flydsl/grouped_moe_gfx1250.py") == "gfx1250"
    assert facts.arch_of("aiter/ops/moe.py") is None


def test_fp32_references_are_read_as_policy_where_the_tests_routinely_upcast(repo_factory):
    upcasting = "import torch\n\n\ndef test_x():\n    x = torch.ones(4, dtype=torch.bfloat16)\n" \
                "    assert torch.allclose(x.float(), x.float())\n"
    plain = "def test_y():\n    assert 1 == 1\n"
    base = {f"op_tests/test_u{n}.py": upcasting for n in range(2)} | {f"op_tests/test_p{n}.py": plain for n in range(4)}
    base |= {f"tests/test_p{n}.py": plain for n in range(4)} | {"tests/test_u.py": upcasting}
    repo_dir = repo_factory(base, {"README.md": "x\n"})
    repo = Repo.open(str(repo_dir))
    catfile = CatFile(repo.root, 2 * 1024 * 1024)
    facts = RepoFacts(load_profiles()["aiter"], Source(repo, catfile, repo.text("rev-parse", "main").strip(),
                                                       repo.text("rev-parse", "pr").strip()))
    assert facts.upcast_references_are_the_norm("op_tests/test_new.py")  # 2 of 6
    assert not facts.upcast_references_are_the_norm("tests/test_new.py")  # 1 of 5
    catfile.close()


def test_a_main_only_test_that_ci_runs_as_a_script_is_a_note(tmp_path):
    from test_fixtures_rules import FIXTURES, build_fixture_repo

    repo = build_fixture_repo(FIXTURES / "uncollectable-test" / "fire-note-when-ci-runs-it-as-a-script",
                              tmp_path / "repo", [])
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    note = next(f for f in report.all_findings if f.rule == "uncollectable-test")
    assert (note.severity, note.tag) == ("low", "inferred")
    assert "aiter_test.sh" in note.problem


def test_a_repository_can_opt_into_preview_annotations(repo_factory):
    before = {"aiter/__init__.py": "", "aiter/ops/act.py": "def act(x):\n    return x\n"}
    after = {"aiter/ops/act.py": "def act(x):\n    # FIXME: fp8 input is not supported yet\n    return x\n"}
    opted = repo_factory({**before, ".github/pr-review.yml": "preview: true\n"}, after)
    report = review(ReviewRequest(repo_dir=str(opted), base="main", head="pr", remote=None, profile="aiter"))
    assert [f.rule for f in report.findings] == ["incomplete-code"] and report.verdict == "NEEDS WORK"
    wrong = repo_factory({**before, ".github/pr-review.yml": "preview: yes-please\n"}, after)
    report = review(ReviewRequest(repo_dir=str(wrong), base="main", head="pr", remote=None, profile="aiter"))
    assert not report.findings and any("preview: must be true or false" in n for n in report.notes)


def test_an_arch_gate_that_selects_an_arch_only_kernel_family_is_a_note(tmp_path):
    from test_fixtures_rules import FIXTURES, build_fixture_repo

    repo = build_fixture_repo(FIXTURES / "arch-literal-in-dispatch" / "fire-note-gate-selects-an-arch-only-kernel-family",
                              tmp_path / "repo", [])
    report = review(ReviewRequest(repo_dir=str(repo), base="main", head="pr", remote=None, profile="aiter"))
    note = next(f for f in report.all_findings if f.rule == "arch-literal-in-dispatch")
    assert (note.severity, note.tag) == ("low", "inferred") and "gfx1250-only directory" in note.problem
