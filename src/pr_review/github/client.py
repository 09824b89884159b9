"""A small, synchronous wrapper over ghapi 2.x with bounded retries.

ghapi 2.x is async unless built with `sync=True`, reads its base URL from `GH_HOST` (never
`GITHUB_API_URL`, so GitHub Enterprise needs `gh_host=`), and retries only failed connects:
rate limits (403/429 with `Retry-After` or an exhausted quota) and 5xx are handled here.

Every call has an overall deadline from request to the answer's last byte: httpx's timeouts are per
read, so an answer trickled a byte at a time would otherwise hold the job for as long as it lasts.
Answers are decoded here and checked against the shapes in `shapes`; what is not JSON of the
expected shape (a proxy's HTML page, a cut-off body) is a GitHubError like any failed request.
"""
from __future__ import annotations

import email.utils
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx2
from fasttransport.errors import APIError
from ghapi.core import GhApi

from . import shapes

RETRY_STATUSES = {500, 502, 503, 504}
MAX_ATTEMPTS = 3  # per call: the first try and two retries
BACKOFF_SECONDS = (1.0, 2.0)  # between attempts when GitHub gives no Retry-After
MAX_WAIT_SECONDS = 60.0  # a longer Retry-After or quota reset is not worth holding the job for
TOTAL_WAIT_SECONDS = 120.0  # all retries of one run together
MUTATION_SPACING_SECONDS = 1.0  # GitHub asks for about a second between content-creating requests
REQUEST_TIMEOUT_SECONDS = 30.0  # connect, and each read
CALL_DEADLINE_SECONDS = 60.0  # one call, from the request to the last byte of the answer


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
    call_deadline: float | None = None  # seconds; None: CALL_DEADLINE_SECONDS
    budget_ends: float | None = None  # on `clock`: the action's time budget; no call or retry outlasts it
    _last_mutation: float | None = field(default=None, repr=False)
    _etags: dict[Any, tuple[str, list[Any], int | None]] = field(default_factory=dict, repr=False)
    _api: GhApi = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._api = GhApi(owner=self.owner, repo=self.repo, token=self.token or None,
                          authenticate=bool(self.token), gh_host=self.api_url.rstrip("/"),
                          timeout=REQUEST_TIMEOUT_SECONDS, sync=True)
        self._api.transport.retries = 0  # ghapi would retry failed connects on its own; all retrying is here
        # One connection pool for all calls (ghapi opens a client per request otherwise), which a call
        # past its deadline closes so that its abandoned read ends.
        self._api.transport.client = httpx2.Client(timeout=REQUEST_TIMEOUT_SECONDS, follow_redirects=True)

    # -- endpoints ---------------------------------------------------------------------------
    def pull(self, number: int) -> dict[str, Any]:
        return self._call("pulls.get", shape=shapes.PULL_REQUEST, pull_number=number)

    def pulls_with_head(self, head: str) -> list[dict[str, Any]]:
        """Open PRs whose head is `owner:branch` (workflow_run of a fork has no `pull_requests`)."""
        return self._call("pulls.list", shape=shapes.PULL_REQUESTS, head=head, state="open", per_page=100)

    def branch(self, name: str) -> dict[str, Any]:
        return self._call("repos.get_branch", shape=shapes.BRANCH, branch=name)

    def check_runs_for_ref(self, ref: str, name: str) -> list[dict[str, Any]]:
        # `all`, not `latest`: the Actions job running us has a run of the same name that may be newer.
        answer = self._call("checks.list_for_ref", shape=shapes.CHECK_RUNS, ref=ref, check_name=name,
                            filter="all", per_page=100)
        return answer["check_runs"]

    def create_check_run(self, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("checks.create", mutating=True, shape=shapes.CHECK_RUN, **body)

    def update_check_run(self, run_id: int, body: dict[str, Any]) -> dict[str, Any]:
        return self._call("checks.update", mutating=True, shape=shapes.CHECK_RUN, check_run_id=run_id, **body)

    # -- CI classification: Actions runs, jobs, logs, and the commit's other checks ------------
    def list_page(self, operation: str, key: str | None, **params: Any) -> tuple[list[Any], int | None]:
        """One page of a list endpoint: its items (under `key` when GitHub wraps the array) and the
        next page's number from the `Link` header (None on the last page). Conditional: an answer
        GitHub says is unchanged (304, free of quota) is served from the previous one."""
        cache_key = (operation, tuple(sorted((k, str(v)) for k, v in params.items())))
        cached = self._etags.get(cache_key)
        try:
            response = self._call(operation, headers_={"If-None-Match": cached[0]} if cached else {},
                                  raw_=True, **params)
        except GitHubError as exc:
            if exc.status == 304 and cached is not None:
                return cached[1], cached[2]
            raise
        data = _decoded(operation, response, shapes.listing(key))
        items = list((data.get(key) if key else data) or [])
        next_url = response.links.get("next", {}).get("url")
        next_page = httpx2.URL(next_url).params.get("page") if next_url else None
        page = int(next_page) if next_page and next_page.isdigit() else None
        if response.headers.get("etag"):
            self._etags[cache_key] = (response.headers["etag"], items, page)
        return items, page

    def job_log(self, job_id: int, *, max_bytes: int, seconds: float) -> tuple[str, bool]:
        """The job's plain-text log (GitHub answers with a redirect to short-lived storage; httpx drops
        the token on the cross-origin hop), streamed and cut at `max_bytes` or after `seconds`;
        returns (text, whether it was cut). 404 and 410 (expired) raise GitHubError with that status."""
        operation = "actions.download_job_logs_for_workflow_run"
        if self.down is not None:
            raise GitHubError(operation, self.down.status, f"skipped, GitHub was unavailable earlier ({self.down.detail})",
                              unavailable=True)
        url = f"{self.api_url.rstrip('/')}/repos/{self.owner}/{self.repo}/actions/jobs/{job_id}/logs"
        deadline = self.clock() + seconds
        chunks, size, cut = [], 0, False
        timeout = httpx2.Timeout(min(seconds, REQUEST_TIMEOUT_SECONDS))
        try:
            with httpx2.Client(timeout=timeout, follow_redirects=True) as http, \
                    http.stream("GET", url, headers=self._api.headers) as response:
                if response.status_code >= 400:
                    status = response.status_code
                    raise GitHubError(operation, status, response.reason_phrase or "request failed",
                                      unavailable=status in RETRY_STATUSES or status == 429)
                for chunk in response.iter_bytes():
                    chunks.append(chunk[:max_bytes - size])
                    size += len(chunks[-1])
                    if size >= max_bytes or self.clock() > deadline:
                        cut = True
                        break
        except httpx2.HTTPError as exc:  # connect failure or timeout: this log is not read, the rest goes on
            raise GitHubError(operation, None, _one_line(str(exc) or type(exc).__name__)) from exc
        return b"".join(chunks).decode("utf-8", "replace"), cut

    # -- transport -------------------------------------------------------------------------
    def _call(self, operation: str, *, mutating: bool = False, shape: dict[str, Any] | None = None,
              raw_: bool = False, **params: Any) -> Any:
        """The decoded answer, checked against `shape`; with `raw_`, the response itself."""
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
                response = self._before_deadline(operation, lambda: func(**params, raw_=True))
            except APIError as exc:
                error, wait = self._classify(operation, exc, attempt)
            else:
                return response if raw_ else _decoded(operation, response, shape)
            if wait is None or attempt == MAX_ATTEMPTS or self.waited + wait > TOTAL_WAIT_SECONDS or (
                    self.budget_ends is not None and self.clock() + wait >= self.budget_ends):
                if error.unavailable:
                    self.down = error
                raise error
            self.waited += wait
            self.sleep(wait)

    def _before_deadline(self, operation: str, send: Callable[[], httpx2.Response]) -> httpx2.Response:
        """`send()`, given up on once the call deadline passes. The request runs on a worker thread, the
        only way to bound a read that keeps receiving a byte now and then; GitHub then counts as down."""
        deadline = CALL_DEADLINE_SECONDS if self.call_deadline is None else self.call_deadline
        if self.budget_ends is not None:
            deadline = min(deadline, self.budget_ends - self.clock())
            if deadline <= 0:
                raise GitHubError(operation, None, "not sent: the action's time budget is spent", unavailable=True)
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(send())
            except BaseException as exc:  # handed to the caller below
                outcome.append(exc)

        worker = threading.Thread(target=run, name=f"GitHub {operation}", daemon=True)
        worker.start()
        worker.join(deadline)
        if not outcome:
            self._api.transport.client.close()
            self.down = GitHubError(operation, None, f"no complete answer within {deadline:g} s", unavailable=True)
            raise self.down
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

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


def _decoded(operation: str, response: httpx2.Response, shape: dict[str, Any] | None) -> Any:
    """The JSON body of a successful answer, or a GitHubError saying how it is malformed."""
    status = response.status_code
    content_type = response.headers.get("content-type", "")
    if "json" not in content_type.lower():
        raise GitHubError(operation, status, f"malformed answer: {_one_line(content_type) or 'no content type'} "
                          "instead of JSON")
    try:
        data = json.loads(response.content)
    except ValueError as exc:
        raise GitHubError(operation, status, f"malformed answer: the JSON is cut short or invalid ({exc})") from exc
    wrong = shapes.problem(data, shape) if shape is not None else None
    if wrong:
        raise GitHubError(operation, status, f"malformed answer: {wrong}")
    return data


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:300]
