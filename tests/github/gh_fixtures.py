"""Fixtures for the GitHub and end-to-end tests, imported by the modules that use them.

No conftest.py here: a second `conftest` module would shadow tests/conftest.py for `from conftest import`.
"""
from __future__ import annotations

import copy
from typing import Iterator

import pytest
from fake_github import FakeGitHub
from gh_upstream import Upstream, build_upstream, checkout

from pr_review.model import PRInfo, Report
from pr_review.pipeline import ReviewRequest, review


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    server = FakeGitHub().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    return build_upstream(tmp_path_factory.mktemp("upstream"))


@pytest.fixture(scope="session")
def reviewed(upstream: Upstream, tmp_path_factory: pytest.TempPathFactory) -> Report:
    workspace = checkout(upstream, tmp_path_factory.mktemp("ws") / "repo", upstream.pr_head, "refs/remotes/pull/7/head")
    report = review(ReviewRequest(
        repo_dir=str(workspace), base=upstream.base_sha, head=upstream.pr_head, repo_name="acme/kernels",
        pr=PRInfo(number=7, title="[perf] Speed up quant </details> for @aiter-team", author="dev", state="open",
                  labels=["perf"], body="Makes quant faster."),
    ))
    # Publishing is tested on findings of every kind, whatever stage their rules have earned.
    report.findings, report.preview_findings = report.all_findings, []
    report.timings = {name: 0.01 for name in report.timings}  # stable snapshots
    report.engine_version = "0.0.0-test"
    report.base_ref = "main"
    return report


@pytest.fixture
def report(reviewed: Report) -> Report:
    """The review of PR #7 (the demo's defects), fresh for each test to mutate."""
    return copy.deepcopy(reviewed)
