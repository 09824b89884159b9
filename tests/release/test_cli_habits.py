"""CLI habits of ruff and semgrep: --fail-on opts into a failing exit, --format github prints escaped workflow
commands, -q prints findings only, RUNNER_DEBUG=1 turns on the verbose output."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pr_review.cli import failing_exit, render_github
from pr_review.demo import build_demo_repo
from pr_review.model import Finding


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    return build_demo_repo(tmp_path_factory.mktemp("cli"))


def run(demo: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "RUNNER_DEBUG"} | env
    return subprocess.run([sys.executable, "-m", "pr_review", "review", "--repo", str(demo), "--base", "main",
                           "--head", "pr", *args], capture_output=True, text=True, timeout=120, env=environ)


def finding(severity: str) -> Finding:
    return Finding(rule="env-var-knob", path="a.py", line=1, problem="p", severity=severity)  # type: ignore[arg-type]


@pytest.mark.parametrize("severities, fail_on, code", [
    ([], "low", 0), (["low"], None, 0), (["low"], "low", 1), (["low"], "medium", 0),
    (["medium"], "medium", 1), (["medium"], "high", 0), (["high"], "high", 1), (["low", "high"], "medium", 1),
])
def test_fail_on_is_opt_in_and_counts_that_severity_and_above(severities, fail_on, code) -> None:
    assert failing_exit([finding(s) for s in severities], fail_on) == code


def test_the_exit_code_follows_fail_on(demo: Path) -> None:
    quiet = run(demo, "-q")
    assert quiet.returncode == 0  # advisory by default, whatever was found
    findings = quiet.stdout.splitlines()
    assert findings and all(line.startswith("aiter/") for line in findings)  # -q: findings only
    assert run(demo, "-q", "--fail-on", "low").returncode == 1


def test_format_github_prints_workflow_commands_that_reach_the_runner(demo: Path) -> None:
    proc = run(demo, "--format", "github")
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines
    assert all(line.startswith(("::error ", "::warning ", "::notice ")) for line in lines)
    assert lines[-1].startswith("::notice title=pr-review::") and "(advisory)" in lines[-1]
    assert all("\n" not in line and "%0A" in line for line in lines[:-1])  # messages escaped onto one line


def test_render_github_keeps_to_the_runners_limit_and_says_what_was_left_out() -> None:
    from pr_review.model import Report

    class Many:  # the fields render_github reads from a Report
        findings = [finding("medium") for _ in range(13)]
        verdict = "NEEDS WORK"
        counts = Report.counts

    text = render_github(Many())
    assert text.count("::warning ") == 10 and "3 more not annotated" in text


def test_runner_debug_turns_on_verbose_output(demo: Path) -> None:
    assert "Timings (s):" not in run(demo).stdout
    assert "Timings (s):" in run(demo, RUNNER_DEBUG="1").stdout
