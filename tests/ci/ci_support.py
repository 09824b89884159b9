"""Helpers for the CI-classification tests: the fake GitHub of tests/github, timestamps relative to
now (log retention is judged against the clock), and changed-file records."""
from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

GITHUB_TESTS = Path(__file__).resolve().parents[1] / "github"
if str(GITHUB_TESTS) not in sys.path:
    sys.path.insert(0, str(GITHUB_TESTS))

from fake_github import FakeGitHub  # noqa: E402

from pr_review.git.diff import ChangedFile  # noqa: E402

HEAD = "a" * 40
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def hours_ago(hours: float) -> str:
    return (NOW - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")


def changed(path: str, added: tuple[str, ...] = ("x = 1",), removed: tuple[str, ...] = (),
            status: str = "modified") -> ChangedFile:
    return ChangedFile(path, None, status, "python", added=[(i + 1, t) for i, t in enumerate(added)],
                       removed=[(i + 1, t) for i, t in enumerate(removed)], hunks=[(1, len(removed), 1, len(added))])


def log_text(*lines: str, at: str | None = None) -> str:
    """A job log as GitHub serves it: every line stamped, colour codes left in."""
    stamp = (at or hours_ago(1)).replace("Z", ".1234567Z")
    return "".join(f"{stamp} {line}\n" for line in lines)


def push_run(fake: FakeGitHub, job: str, conclusion: str, hours: float, **extra):
    """A default-branch push run of the CI workflow with one job."""
    run = fake.actions.add_run(head_sha=f"{int(hours * 10):040x}", event="push", head_branch="main",
                               created_at=hours_ago(hours), conclusion=conclusion, **extra)
    fake.actions.add_job(run, job, conclusion)
    return run
