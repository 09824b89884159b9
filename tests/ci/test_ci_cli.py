"""`pr-review ci`: an old PR's CI classified from a workstation, in every output format; unusable
arguments exit 2 with one line."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from ci_support import hours_ago, log_text
from gh_fixtures import fake, upstream  # noqa: F401 - pytest fixtures

from pr_review import cli


@pytest.fixture
def workstation(upstream, fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A maintainer's clone of main, a PR #7 on the fake GitHub whose CI failed, and a token."""
    clone = sys.modules["gh_upstream"].checkout(upstream, tmp_path / "clone", upstream.main_sha,
                                                 "refs/remotes/origin/main")
    fake.add_pull(7, head_sha=upstream.pr_head, base_sha=upstream.base_sha, title="Speed up quant",
                  state="closed", merged=True)
    run = fake.actions.add_run(head_sha=upstream.pr_head, created_at=hours_ago(3))
    fake.actions.add_job(run, "test (3.12)", log=log_text("aiter/ops/quant.py:9: E   AssertionError"))
    main = fake.actions.add_run(head_sha="c" * 40, event="push", head_branch="main", created_at=hours_ago(6),
                                conclusion="failure")
    fake.actions.add_job(main, "test (3.12)", "failure")
    monkeypatch.setenv("GITHUB_TOKEN", "read-token")
    monkeypatch.setenv("GITHUB_API_URL", fake.url)
    return clone


@pytest.mark.parametrize("fmt,expected", [("text", "[baseline]"), ("markdown", "baseline (main fails too)"),
                                          ("json", '"classification": "baseline"')])
def test_every_format_shows_the_classification(workstation: Path, fmt: str, expected: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["ci", "--repo", "acme/kernels", "--pr", "7", "--checkout", str(workstation), "--format", fmt])
    out = capsys.readouterr().out
    assert code == 0 and expected in out
    assert ("test \\(3.12\\)" if fmt == "markdown" else "test (3.12)") in out
    if fmt == "json":
        assert json.loads(out)["ci"][0]["evidence"].endswith("1 of 1 run(s) in the ±48 h window")


def test_sarif_output_is_still_sarif(workstation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ci", "--repo", "acme/kernels", "--pr", "7", "--checkout", str(workstation),
                     "--format", "sarif"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "2.1.0"


@pytest.mark.parametrize("argv,message", [
    (["--repo", "kernels", "--pr", "7"], "--repo kernels: expected OWNER/NAME"),
    (["--repo", "acme/kernels", "--pr", "0"], "--pr 0: not a pull-request number"),
    (["--repo", "acme/kernels", "--pr", "99"], "pull request #99 does not exist in acme/kernels"),
    (["--repo", "acme/kernels", "--pr", "7", "--window-hours", "0"], "--window-hours 0"),
])
def test_unusable_arguments_exit_2_with_one_line(workstation: Path, argv: list[str], message: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ci", *argv, "--checkout", str(workstation)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_missing_token_is_said(workstation: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("GITHUB_TOKEN")
    assert cli.main(["ci", "--repo", "acme/kernels", "--pr", "7", "--checkout", str(workstation)]) == 2
    assert "GITHUB_TOKEN is not set" in capsys.readouterr().err


def test_the_chinese_summary_has_the_table(workstation: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["ci", "--repo", "acme/kernels", "--pr", "7", "--checkout", str(workstation),
                     "--format", "markdown", "--language", "zh"]) == 0
    out = capsys.readouterr().out
    assert "CI 失败分类" in out and "基线（主干同样失败）" in out and "| 任务 | 工作流 |" in out
