"""A small, synchronous wrapper over ghapi 2.x with bounded retries.

ghapi 2.x is async unless built with `sync=True`, reads its base URL from `GH_HOST` (never
`GITHUB_API_URL`, so GitHub Enterprise needs `gh_host=`), and retries only failed connects:
rate limits (403/429 with `Retry-After` or an exhausted quota) and 5xx are handled here.
"""
from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from fasttransport.errors import APIError
from ghapi.core import GhApi

RETRY_STATUSES = {500, 502, 503, 504}
MAX_ATTEMPTS = 3  # per call: the first try and two retries
BACKOFF_SECONDS = (1.0, 2.0)  # between attempts when GitHub gives no Retry-After
MAX_WAIT_SECONDS = 60.0  # a longer Retry-After or quota reset is not worth holding the job for
TOTAL_WAIT_SECONDS = 120.0  # all retries of one run together
MUTATION_SPACING_SECONDS = 1.0  # GitHub asks for about a second between content-creating requests
REQUEST_TIMEOUT_SECONDS = 30.0


class GitHubError(Exception):
    """A GitHub request failed for good; `status` is None when no HTTP answer came back."""

    def __init__(self, operation: str, status: int | None, message: str, *, unavailable: bool = False):
        self.operation = operation
        self.status = status
        self.detail = message
        self.unavailable = unavailable  # GitHub down, unreachable or rate-limiting us
        where = f"HTTP {status}" if status else "no answer"
        super().__init__(f"GitHub {operation} failed ({where}): {message}")

    @property
    def forbidden(self) -> bool:
        """The token may not do this (a fork PR's read-only token, missing `permissions:`)."""
        return self.status in (401, 403) and not self.unavailable


@dataclass
class GitHubClient:
    """The endpoints the action uses, for one repository, with retries and a request log."""

    api_url: str
    token: str
    owner: str
    repo: str
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], float] = time.time
    waited: float = 0.0
    down: GitHubError | None = None  # once GitHub is judged down, later calls fail without retrying
    _last_mutation: float | None = field(default=None, repr=False)
    _api: GhApi = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._api = GhApi(owner=self.owner, repo=self.repo, token=self.token or None,
                          authenticate=bool(self.token), gh_host=self.api_url.rstrip("/"),
                          timeout=REQUEST_TIMEOUT_SECONDS, sync=True)
        self._api.transport.retries = 0  # ghapi would retry failed connects on its own; all retrying is here

    # -- endpoints ---------------------------------------------------------------------------
    def pull(self, number: int) -> Any:
        return self._call("pulls.get", pull_number=number)

    def pulls_with_head(self, head: str) -> list[Any]:
        """Open PRs whose head is `owner:branch` (workflow_run of a fork has no `pull_requests`)."""
        return list(self._call("pulls.list", head=head, state="open", per_page=100))

    def branch(self, name: str) -> Any:
        return self._call("repos.get_branch", branch=name)

    def check_runs_for_ref(self, ref: str, name: str) -> list[Any]:
        answer = self._call("checks.list_for_ref", ref=ref, check_name=name, filter="latest", per_page=100)
        return list(answer.get("check_runs") or [])

    def create_check_run(self, body: dict[str, Any]) -> Any:
        return self._call("checks.create", mutating=True, **body)

    def update_check_run(self, run_id: int, body: dict[str, Any]) -> Any:
        return self._call("checks.update", mutating=True, check_run_id=run_id, **body)

    # -- transport -------------------------------------------------------------------------
    def _call(self, operation: str, *, mutating: bool = False, **params: Any) -> Any:
        if self.down is not None:
            raise GitHubError(operation, self.down.status,
                              f"skipped, GitHub was unavailable earlier ({self.down.detail})", unavailable=True)
        group, name = operation.split(".")
        func = getattr(getattr(self._api, group), name)
        attempt = 0
        while True:
            attempt += 1
            if mutating:
                self._space_mutation()
            try:
                return func(**params)
            except APIError as exc:
                error, wait = self._classify(operation, exc, attempt)
            if wait is None or attempt == MAX_ATTEMPTS or self.waited + wait > TOTAL_WAIT_SECONDS:
                if error.unavailable:
                    self.down = error
                raise error
            self.waited += wait
            self.sleep(wait)

    def _space_mutation(self) -> None:
        now = self.clock()
        if self._last_mutation is not None:
            gap = MUTATION_SPACING_SECONDS - (now - self._last_mutation)
            if gap > 0:
                self.sleep(gap)
                now = self.clock()
        self._last_mutation = now

    def _classify(self, operation: str, exc: APIError, attempt: int) -> tuple[GitHubError, float | None]:
        """The error to raise if we stop now, and how long to wait before retrying (None: do not retry)."""
        status = exc.status_code
        headers = exc.response.headers if exc.response is not None else {}
        message = _one_line(exc.message or exc.error_type or "request failed")
        if status is None:  # connect error or timeout; ghapi already retried connects twice
            return GitHubError(operation, None, message, unavailable=True), self._backoff(attempt)
        rate_limited = status == 429 or (status == 403 and (
            "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0" or "rate limit" in message.lower()))
        if rate_limited:
            wait = self._rate_limit_wait(headers)
            if wait is not None and wait > MAX_WAIT_SECONDS:
                note = f"rate limited for another {wait:.0f}s, longer than this action waits"
                return GitHubError(operation, status, f"{message} ({note})", unavailable=True), None
            return GitHubError(operation, status, message, unavailable=True), (
                wait if wait is not None else self._backoff(attempt))
        if status in RETRY_STATUSES:
            return GitHubError(operation, status, message, unavailable=True), self._backoff(attempt)
        return GitHubError(operation, status, message), None

    def _rate_limit_wait(self, headers: Any) -> float | None:
        retry_after = headers.get("retry-after")
        if retry_after:
            if retry_after.strip().isdigit():
                return float(retry_after)
            try:  # the HTTP-date form
                return max(0.0, email.utils.parsedate_to_datetime(retry_after).timestamp() - self.wall_clock())
            except (TypeError, ValueError):
                return None
        reset = headers.get("x-ratelimit-reset")
        if headers.get("x-ratelimit-remaining") == "0" and reset and reset.isdigit():
            return max(0.0, float(reset) - self.wall_clock())
        return None

    @staticmethod
    def _backoff(attempt: int) -> float:
        return BACKOFF_SECONDS[min(attempt, len(BACKOFF_SECONDS)) - 1]


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]
