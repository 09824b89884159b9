"""Every review reports what each stage, detector and evidence collector cost."""
from __future__ import annotations

import json
from pathlib import Path

from conftest import make_repo

from pr_review.cli import main
from pr_review.detectors import all_detectors
from pr_review.evidence import COLLECTORS

BASE = {"aiter/ops/gemm.py": "def gemm(x):\n    return x\n"}
HEAD = {"aiter/ops/gemm.py": "import os\n\ndef gemm(x, scale=1.0):\n    if os.environ.get('AITER_FAST'):\n        return x\n    return x\n"}


def _review(tmp_path: Path, *extra: str) -> str:
    repo = make_repo(tmp_path / "repo", BASE, HEAD)
    out = tmp_path / "out"
    assert main(["review", "--repo", str(repo), "--base", "main", "--head", "pr", "--remote", "none",
                 "--output", str(out), *extra]) == 0
    return out.read_text(encoding="utf-8")


def test_json_report_times_stages_detectors_and_collectors(tmp_path: Path):
    report = json.loads(_review(tmp_path, "--format", "json"))
    assert {"context", "diff", "triage", "derivation", "evidence", "detectors", "gate"} <= set(report["timings"])
    steps = report["step_timings"]
    detectors = {d.name for d in all_detectors()}
    assert steps["detectors"] and set(steps["detectors"]) <= detectors
    assert "env-var-knob" in steps["detectors"]  # a detector whose rule applies to this PR ran and was timed
    assert set(steps["evidence"]) == set(COLLECTORS)
    assert all(isinstance(s, float) and s >= 0 for step in steps.values() for s in step.values())


def test_verbose_text_lists_timings_and_plain_text_does_not(tmp_path: Path):
    verbose = _review(tmp_path / "v", "--verbose")
    assert "Timings (s): context " in verbose
    assert "  detectors: " in verbose and "  evidence: " in verbose
    assert "Timings (s)" not in _review(tmp_path / "plain")
