"""Helpers shared by the GitHub tests: snapshots and synthetic findings."""
from __future__ import annotations

import os
from pathlib import Path

from pr_review.model import ChecklistItem, CIVerdict, CoreFile, Evidence, Finding, NotChecked, PRInfo, Report

SNAPSHOTS = Path(__file__).parent / "snapshots"


def snapshot(name: str, text: str) -> None:
    """Compare with tests/github/snapshots/<name>; UPDATE_SNAPSHOTS=1 (re)writes it."""
    path = SNAPSHOTS / name
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"snapshot {name} is missing; run with UPDATE_SNAPSHOTS=1 to create it"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; rerun with UPDATE_SNAPSHOTS=1 if intended"


def finding(n: int, severity: str = "medium", **extra) -> Finding:
    """A complete, fingerprinted finding as the engine's gate leaves it; `extra` overrides any field."""
    fields = {"rule": "incomplete-code", "path": f"aiter/ops/op_{n:03}.py", "line": n + 1,
              "problem": f"Problem number {n} in `op_{n}`.",
              "impact": "Callers hit it.", "action": "Author must fix it.", "severity": severity,
              "title": f"Finding {n}", "code": "HK7", "line_text": f"line {n}", **extra}
    f = Finding(**fields)
    f.fingerprint = f.compute_fingerprint()
    return f


def parse_outputs(text: str) -> dict[str, str]:
    """The runner's reading of $GITHUB_OUTPUT: `name=value` or `name<<DELIM` … `DELIM`."""
    outputs, lines = {}, text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            outputs[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if line:
            name, value = line.split("=", 1)
            outputs[name] = value
        i += 1
    return outputs


def sample_report() -> Report:
    """A fixed review touching every part of the templates, independent of what the detectors find today."""
    findings = [
        finding(1, "high", path="aiter/ops/quant.py", line=12, title="Scale dtype ignored on the fast path",
                rule="api-propagation-incomplete", code="B6", trigger="`per_token_quant(x, scale_dtype=torch.float16)`",
                problem="`scale_dtype` is accepted but the fast path returns `amax` unconverted.",
                action="Author must convert `amax` to `scale_dtype` on both paths.",
                evidence=[Evidence("aiter/ops/quant.py", 14, "return x / amax, amax")]),
        finding(2, "medium", path="aiter/ops/quant.py", line=8, title="New environment-variable knob",
                rule="env-var-knob", code="HK9", tag="verified", notes=["Read once at import time."],
                problem="New environment knob `AITER_QUANT_FAST_PATH` is read here."),
        finding(3, "medium", path="", line=None, title="Performance claim with no measured numbers",
                rule="perf-claim-no-numbers", code="P1", tag="inferred", anchor="pr",
                problem="The title claims a speed-up but the description gives no number."),
        finding(4, "low", path="aiter/configs/tuned_gemm.csv", line=None, title="Tuning rows without a source",
                rule="unrelated-files", code="HK2", anchor="file", problem="Rows added with no tuning log."),
    ]
    findings[1].new = True
    return Report(
        schema=1, engine_version="0.0.0-test", repo="acme/kernels", profile="aiter", base_ref="main",
        base_sha="1" * 40, merge_base="1" * 40, head_sha="2" * 40,
        pr=PRInfo(number=7, title="[perf] Speed up quant </details> for @aiter-team", author="dev", state="open",
                  labels=["perf", "ci:atom"], url="https://github.test/acme/kernels/pull/7"),
        summary=["2 file(s) (2 modified), +15/−0 lines.", "Touches `aiter/ops` (1), `aiter/configs` (1)."],
        runtime_surface=True, runtime_reason="1 file(s) change runtime code",
        stale="The PR no longer merges cleanly onto the base tip 333333333333 (conflicts in aiter/ops/quant.py).",
        findings=findings,
        checklist=[ChecklistItem("env-var-knob", "HK9", "New environment-variable knob", ["housekeeping"],
                                 ["aiter/ops/quant.py:8: os.environ.get(\"AITER_QUANT_FAST_PATH\")"], "FIRE",
                                 "aiter/ops/quant.py:8"),
                   ChecklistItem("contiguity-unchecked", "D8", "Tensor handed to a kernel without a contiguity check",
                                 ["state"], ["aiter/ops/quant.py"], "CLEAR",
                                 "detector contiguity read aiter/ops/quant.py and found no instance")],
        core_files=[CoreFile("aiter/ops/quant.py", 2, "GAP", "changes `per_token_quant`; no test exercises it")],
        ci=[CIVerdict("test (3.12)", "failure", "baseline", "main fails the same job in run 41")],
        not_checked=[NotChecked("aiter/configs/blob.bin", "binary file")],
        notes=["git: fetched 1111111 from origin"], stats={"files": 2}, timings={"context": 0.01, "diff": 0.02},
        relevance="fully",
    )
