"""`pr-review ci --repo OWNER/NAME --pr N`: review a pull request with its CI classified, from a
workstation — for an old PR whose CI a maintainer wants explained. The token comes from
GITHUB_TOKEN, the API from GITHUB_API_URL; the PR's commits are fetched into a local clone
(`--checkout`, default the current directory) as the action fetches them.
"""
from __future__ import annotations

import os
import re

from ..git import GitError
from ..github.client import GitHubClient, GitHubError
from ..github.event import Event, UserError, prepare_checkout, resolve_target
from ..model import Report, record, replace
from ..pipeline import review
from . import CIRequest
from .collect import Selection

REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*/[A-Za-z0-9._-]+")
DEFAULT_API_URL = "https://api.github.com"


class CIUsageError(Exception):
    """Unusable arguments or environment, said in one line."""


@record(frozen=True)
class CIArgs:
    repo: str
    pr: int
    checkout: str = "."
    workflows: tuple[str, ...] = ()
    window_hours: int = 48
    profile: str | None = None
    notify_owners: bool = False


def classify_pr(args: CIArgs, environ: dict[str, str] | None = None) -> Report:
    environ = dict(os.environ) if environ is None else environ
    if not REPO.fullmatch(args.repo):
        raise CIUsageError(f"--repo {args.repo}: expected OWNER/NAME, like ROCm/aiter")
    if args.pr <= 0:
        raise CIUsageError(f"--pr {args.pr}: not a pull-request number")
    if args.window_hours <= 0:
        raise CIUsageError(f"--window-hours {args.window_hours}: must be a positive number of hours")
    token = environ.get("GITHUB_TOKEN", "").strip()
    if not token:
        raise CIUsageError("GITHUB_TOKEN is not set: the CI classification reads runs, jobs and logs through the API")
    owner, name = args.repo.split("/", 1)
    client = GitHubClient(environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token, owner, name)
    try:
        target = resolve_target(Event("workflow_dispatch", {}), args.pr, lambda: client)
        request, notes = prepare_checkout(target, args.checkout, profile=args.profile, repo_name=args.repo)
    except (UserError, GitError) as exc:
        raise CIUsageError(str(exc)) from exc
    except GitHubError as exc:
        raise CIUsageError(f"{exc} (is GITHUB_TOKEN allowed to read {args.repo}?)") from exc
    request = replace(request, ci=CIRequest(client, target.number, target.base_ref, Selection(args.workflows),
                                            window_hours=args.window_hours, notify_owners=args.notify_owners,
                                            labels=tuple(target.info.labels)))
    report = review(request)
    report.notes.extend(notes)
    return report
