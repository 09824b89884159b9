"""The action run in-process, the way the runner runs its step: one workspace and event, run as often
as a test likes, with the runner's GITHUB_* variables, file commands and INPUT_* variables."""
from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest
from fake_github import FakeGitHub
from gh_support import finding, parse_outputs, sample_report
from gh_upstream import Upstream, checkout

from pr_review.github import action_main
from pr_review.github import client as client_module


@dataclass
class Run:
    code: int
    stdout: str
    outputs: dict[str, str]
    summary: str


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "BACKOFF_SECONDS", (0.0, 0.0))
    monkeypatch.setattr(client_module, "MUTATION_SPACING_SECONDS", 0.0)


class Action:
    """One workspace and event, run as often as a test likes."""

    def __init__(self, tmp_path: Path, upstream: Upstream, fake: FakeGitHub):
        self.tmp = tmp_path
        self.fake = fake
        self.upstream = upstream
        self.workspace = checkout(upstream, tmp_path / "ws", upstream.merge_sha, "refs/remotes/pull/7/merge")
        self.event = self.pull_request()
        self.inputs = {"INPUT_GITHUB_TOKEN": "write-token", "INPUT_CHECK_NAME": "PR review (advisory)",
                       "INPUT_MAX_ANNOTATIONS": "200", "INPUT_LANGUAGE": "en"}
        self.event_name = "pull_request"
        self.runs = 0

    def pull_request(self, action: str = "opened", fork: bool = False, title: str = "Speed up quant", **extra):
        return {"action": action, **extra, "pull_request": {
            "number": 7, "title": title, "body": "Faster.", "state": "open", "merged": False,
            "html_url": "https://github.test/acme/kernels/pull/7", "user": {"login": "dev"}, "labels": [],
            "head": {"sha": self.upstream.pr_head, "ref": "feature",
                     "repo": {"full_name": "someone/kernels" if fork else "acme/kernels"}},
            "base": {"sha": self.upstream.base_sha, "ref": "main", "repo": {"full_name": "acme/kernels"}}}}

    def __call__(self, **inputs: str) -> Run:
        self.runs += 1
        step = self.tmp / f"step{self.runs}"
        step.mkdir()
        (step / "event.json").write_text(json.dumps(self.event))
        (step / "output").touch()  # the runner creates both files before the step
        (step / "summary").touch()
        env = {"GITHUB_EVENT_NAME": self.event_name, "GITHUB_EVENT_PATH": str(step / "event.json"),
               "GITHUB_REPOSITORY": "acme/kernels", "GITHUB_API_URL": self.fake.url,
               "GITHUB_SERVER_URL": "https://github.test", "GITHUB_WORKSPACE": str(self.workspace),
               "GITHUB_OUTPUT": str(step / "output"), "GITHUB_STEP_SUMMARY": str(step / "summary"),
               "RUNNER_TEMP": str(step / "tmp"), **self.inputs, **inputs}
        out = io.StringIO()
        # The step's process environment: the runner's variables and the inputs, nothing of the
        # environment the tests themselves run in (which may be a GitHub Actions job).
        outer = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "RUNNER_"))}
        with mock.patch.dict(os.environ, {**outer, **env}, clear=True):
            code = action_main.main(out)
        read = lambda name: (step / name).read_text(encoding="utf-8")  # noqa: E731
        return Run(code, out.getvalue(), parse_outputs(read("output")), read("summary"))


@pytest.fixture
def action(tmp_path: Path, upstream: Upstream, fake: FakeGitHub) -> Action:
    return Action(tmp_path, upstream, fake)


def report_of(run: Run) -> dict:
    return json.loads(Path(run.outputs["report-path"]).read_text())


def on_files(run: Run) -> list[dict]:
    """The findings that carry a file (those about the PR description have none and are not annotated)."""
    return [f for f in report_of(run)["findings"] if f["path"]]


def fixed_review(action: Action, monkeypatch: pytest.MonkeyPatch, count: int = 3) -> None:
    """Replace the engine with a fixed review of the PR head holding `count` findings on files: tests of
    publishing need findings to post, whatever the detectors find today."""
    def review(request):
        report = sample_report()
        report.head_sha = action.upstream.pr_head
        report.findings = [finding(n) for n in range(count)]
        return report

    monkeypatch.setattr(action_main, "review", review)
