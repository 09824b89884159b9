"""A strict stand-in for the GitHub REST API on 127.0.0.1, serving exactly the endpoints the action uses.

It rejects what GitHub rejects (more than 50 annotations in a request, an unknown annotation level,
start_line > end_line, columns across lines, a missing or unknown head_sha, over-long summary, text
or annotation title, writes with a read-only token) and more than GitHub does (unknown keys), so a
sloppy payload fails here first. When githubkit is installed, request bodies are also validated
against the models it generates from GitHub's OpenAPI description. Faults are injected per request
pattern: an error status (5xx, 422 on a lookup, secondary rate limits with Retry-After), a raw body
(truncated JSON, an HTML page, an array where an object belongs) and a trickle (the answer sent one
byte at a time, which stops by itself once the body is out or the client hangs up).
"""
from __future__ import annotations

import importlib.util
import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlsplit

try:  # test dependency: githubkit>=0.16,<0.17 with hishel<2
    from githubkit_schemas.latest import models as gk_models
    from pydantic import ValidationError as PydanticValidationError
except ImportError:  # the hand-written checks below still apply
    gk_models = None

ACTIONS_APP = {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"}
LEVELS = {"notice", "warning", "failure"}
STATUSES = {"queued", "in_progress", "completed"}
CONCLUSIONS = {"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
RUN_KEYS = {"name", "head_sha", "details_url", "external_id", "status", "started_at", "conclusion",
            "completed_at", "output", "actions"}
OUTPUT_KEYS = {"title", "summary", "text", "annotations", "images"}
ANNOTATION_KEYS = {"path", "start_line", "end_line", "start_column", "end_column", "annotation_level",
                   "message", "title", "raw_details"}


class Reject(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class Raw(Exception):
    """An answer sent as given: `body` verbatim, optionally one byte every `trickle` seconds."""

    def __init__(self, status: int, body: bytes, content_type: str, trickle: float | None):
        super().__init__(status)
        self.status, self.body, self.content_type, self.trickle = status, body, content_type, trickle


@dataclass
class Fault:
    status: int
    method: str | None
    path: re.Pattern[str] | None
    times: int | None  # None: every matching request
    headers: dict[str, str]
    message: str
    body: bytes | None = None  # sent verbatim instead of {"message": …}
    content_type: str = "application/json; charset=utf-8"
    trickle: float | None = None  # seconds between the bytes of the body

    def matches(self, method: str, path: str) -> bool:
        return (self.times is None or self.times > 0) and (self.method in (None, method)) and (
            self.path is None or bool(self.path.search(path)))


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int


@dataclass
class FakeGitHub:
    owner: str = "acme"
    repo: str = "kernels"
    api_prefix: str = ""  # "/api/v3" for a GitHub Enterprise Server layout
    known_sha: Callable[[str], bool] = lambda sha: bool(re.fullmatch(r"[0-9a-f]{40}", sha))
    tokens: dict[str, str] = field(default_factory=lambda: {"write-token": "write", "read-token": "read"})
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    check_runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    annotations: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    log: list[Logged] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    validated_with_githubkit: int = 0
    hung_up: int = 0  # trickled answers the client stopped reading before their end
    url: str = ""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next_id = 1000
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                fake._handle(self, "GET")

            def do_POST(self) -> None:  # noqa: N802
                fake._handle(self, "POST")

            def do_PATCH(self) -> None:  # noqa: N802
                fake._handle(self, "PATCH")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}{self.api_prefix}"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

        self.actions = _fake_actions().FakeActions(self)

    def start(self) -> "FakeGitHub":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # -- test controls -------------------------------------------------------------------
    def inject(self, status: int, *, method: str | None = None, path: str | None = None, times: int | None = None,
               headers: dict[str, str] | None = None, message: str = "Server Error", body: bytes | None = None,
               content_type: str = "application/json; charset=utf-8", trickle: float | None = None) -> None:
        self.faults.append(Fault(status, method, re.compile(path) if path else None, times, headers or {}, message,
                                 body, content_type, trickle))

    def add_pull(self, number: int, *, head_sha: str, base_sha: str, base_ref: str = "main", head_ref: str = "feature",
                 head_owner: str | None = None, title: str = "", body: str = "", state: str = "open",
                 merged: bool = False, labels: tuple[str, ...] = (), author: str = "octocat") -> dict[str, Any]:
        full = f"{self.owner}/{self.repo}"
        head_owner = head_owner or self.owner
        pull = {
            "number": number, "title": title, "body": body, "state": state, "merged": merged,
            "merged_at": "2026-01-02T03:04:05Z" if merged else None, "draft": False,
            "html_url": f"https://github.test/{full}/pull/{number}", "user": {"login": author},
            "labels": [{"name": name} for name in labels],
            "head": {"sha": head_sha, "ref": head_ref, "label": f"{head_owner}:{head_ref}",
                     "repo": {"full_name": f"{head_owner}/{self.repo}"}},
            "base": {"sha": base_sha, "ref": base_ref, "label": f"{self.owner}:{base_ref}",
                     "repo": {"full_name": full}},
        }
        self.pulls[number] = pull
        return pull

    def requests(self, method: str | None = None, path: str = "") -> list[Logged]:
        return [r for r in self.log if (method is None or r.method == method) and path in r.path]

    # -- dispatch -----------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        split = urlsplit(handler.path)
        path = unquote(split.path)
        query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body: Any = None
        status, payload, headers = 200, None, {}
        try:
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError as exc:
                    raise Reject(400, "Problems parsing JSON") from exc
            with self._lock:
                for fault in self.faults:
                    if fault.matches(method, path):
                        if fault.times is not None:
                            fault.times -= 1
                        if fault.body is not None:
                            raise Raw(fault.status, fault.body, fault.content_type, fault.trickle)
                        raise Reject(fault.status, fault.message, fault.headers)
                answer = self.actions.answer(method, path, query, handler.headers)  # fake_actions.py
                if answer is None:
                    access = self._access(handler.headers.get("Authorization", ""))
                    status, payload = self._route(method, path, query, body, access)
                    answer = status, json.dumps(payload).encode(), "application/json; charset=utf-8", {}
            raw_answer, headers = Raw(*answer[:3], None), answer[3]
        except Reject as exc:
            raw_answer = Raw(exc.status, json.dumps({"message": exc.message, "documentation_url":
                                                     "https://docs.github.com/rest"}).encode(),
                             "application/json; charset=utf-8", None)
            headers = exc.headers
        except Raw as exc:
            raw_answer = exc
        with self._lock:
            self.log.append(Logged(method, path, query, body, raw_answer.status))
        handler.send_response(raw_answer.status)
        handler.send_header("Content-Type", raw_answer.content_type)
        handler.send_header("Content-Length", str(len(raw_answer.body)))
        for key, value in {"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "999", **headers}.items():
            handler.send_header(key, value)
        handler.end_headers()
        if raw_answer.trickle is None:
            handler.wfile.write(raw_answer.body)
            return
        try:
            for index in range(len(raw_answer.body)):
                handler.wfile.write(raw_answer.body[index:index + 1])
                handler.wfile.flush()
                time.sleep(raw_answer.trickle)
        except OSError:  # the client gave up and closed the connection
            with self._lock:
                self.hung_up += 1

    def _access(self, authorization: str) -> str:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() not in ("token", "bearer") or token not in self.tokens:
            raise Reject(401, "Bad credentials")
        return self.tokens[token]

    def _route(self, method: str, path: str, query: dict[str, str], body: Any, access: str) -> tuple[int, Any]:
        prefix = f"{self.api_prefix}/repos/{self.owner}/{self.repo}"
        if not path.startswith(prefix + "/"):
            raise Reject(404, "Not Found")
        rest = path[len(prefix):]
        if method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)", rest)):
            pull = self.pulls.get(int(m.group(1)))
            if pull is None:
                raise Reject(404, "Not Found")
            return 200, pull
        if method == "GET" and rest == "/pulls":
            return 200, self._list_pulls(query)
        if method == "GET" and (m := re.fullmatch(r"/branches/(.+)", rest)):
            if m.group(1) not in self.branches:
                raise Reject(404, "Branch not found")
            return 200, {"name": m.group(1), "commit": {"sha": self.branches[m.group(1)]}}
        if method == "GET" and (m := re.fullmatch(r"/commits/([^/]+)/check-runs", rest)):
            return 200, self._list_check_runs(m.group(1), query)
        if method == "POST" and rest == "/check-runs":
            return 201, self._create(body, access)
        if method == "PATCH" and (m := re.fullmatch(r"/check-runs/(\d+)", rest)):
            return 200, self._update(int(m.group(1)), body, access)
        raise Reject(404, "Not Found")

    # -- endpoints ----------------------------------------------------------------------
    def _list_pulls(self, query: dict[str, str]) -> list[dict[str, Any]]:
        state = query.get("state", "open")
        found = [p for p in self.pulls.values() if state == "all" or p["state"] == state]
        if "head" in query:
            found = [p for p in found if p["head"]["label"] == query["head"]]
        page, per_page = int(query.get("page", 1)), int(query.get("per_page", 30))
        return found[(page - 1) * per_page: page * per_page]

    def _list_check_runs(self, ref: str, query: dict[str, str]) -> dict[str, Any]:
        runs = sorted((r for r in self.check_runs.values() if r["head_sha"] == ref), key=lambda r: -r["id"])
        if "check_name" in query:
            runs = [r for r in runs if r["name"] == query["check_name"]]
        if query.get("filter", "latest") == "latest":
            seen: set[str] = set()
            runs = [r for r in runs if not (r["name"] in seen or seen.add(r["name"]))]
        return {"total_count": len(runs), "check_runs": runs}

    def _create(self, body: Any, access: str) -> dict[str, Any]:
        if access != "write":
            raise Reject(403, "Resource not accessible by integration")
        if not isinstance(body, dict):
            raise Reject(400, "Problems parsing JSON")
        self._check_keys(body, RUN_KEYS, "check run")
        for key in ("name", "head_sha"):
            if not body.get(key):
                raise Reject(422, f"Invalid request.\n\n\"{key}\" wasn't supplied.")
        if not self.known_sha(body["head_sha"]):
            raise Reject(422, f"No commit found for SHA: {body['head_sha']}")
        self._check_run_fields(body)
        self._githubkit(body, ("ReposOwnerRepoCheckRunsPostBodyOneof0", "ReposOwnerRepoCheckRunsPostBodyOneof1"))
        self._next_id += 1
        run_id = self._next_id
        run = {"id": run_id, "name": body["name"], "head_sha": body["head_sha"], "external_id": "",
               "status": "queued", "conclusion": None, "app": ACTIONS_APP,
               "html_url": f"https://github.test/{self.owner}/{self.repo}/runs/{run_id}",
               "output": {"title": None, "summary": None, "text": None, "annotations_count": 0}}
        self.check_runs[run_id] = run
        self.annotations[run_id] = []
        self._apply(run, body)
        return run

    def _update(self, run_id: int, body: Any, access: str) -> dict[str, Any]:
        if access != "write":
            raise Reject(403, "Resource not accessible by integration")
        run = self.check_runs.get(run_id)
        if run is None:
            raise Reject(404, "Not Found")
        if run_id in self.actions.job_check_runs:  # the Actions job's own run belongs to the workflow, not to us
            raise Reject(403, "Resource not accessible by integration")
        if not isinstance(body, dict):
            raise Reject(400, "Problems parsing JSON")
        self._check_keys(body, RUN_KEYS - {"head_sha"}, "check run update")
        self._check_run_fields(body)
        self._githubkit(body, ("ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof0",
                               "ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof1"))
        self._apply(run, body)
        return run

    def _apply(self, run: dict[str, Any], body: dict[str, Any]) -> None:
        for key in ("name", "external_id", "status"):
            if key in body:
                run[key] = body[key]
        if "conclusion" in body:
            run["conclusion"], run["status"] = body["conclusion"], "completed"
        output = body.get("output")
        if output:
            for key in ("title", "summary", "text"):
                if key in output:
                    run["output"][key] = output[key]
            self.annotations[run["id"]].extend(output.get("annotations") or [])
            run["output"]["annotations_count"] = len(self.annotations[run["id"]])

    # -- validation ---------------------------------------------------------------------
    @staticmethod
    def _check_keys(data: dict[str, Any], allowed: set[str], what: str) -> None:
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise Reject(422, f"Invalid request.\n\n{', '.join(unknown)} are not permitted keys of a {what}.")

    def _check_run_fields(self, body: dict[str, Any]) -> None:
        status = body.get("status")
        if status is not None and status not in STATUSES:
            raise Reject(422, f"Invalid request.\n\n{status!r} is not a member of {sorted(STATUSES)}.")
        if "conclusion" in body and body["conclusion"] not in CONCLUSIONS:
            raise Reject(422, f"Invalid request.\n\n{body['conclusion']!r} is not a valid conclusion.")
        if (status == "completed" or body.get("completed_at")) and not body.get("conclusion"):
            raise Reject(422, "Invalid request.\n\nconclusion is required when status is completed.")
        output = body.get("output")
        if output is None:
            return
        if not isinstance(output, dict):
            raise Reject(422, "Invalid request.\n\nFor 'properties/output', it is not an object.")
        self._check_keys(output, OUTPUT_KEYS, "check run output")
        for key in ("title", "summary"):
            if not isinstance(output.get(key), str):
                raise Reject(422, f"Invalid request.\n\n\"{key}\" wasn't supplied.")
        for key in ("summary", "text"):
            if len(output.get(key) or "") > 65535:
                raise Reject(422, "Invalid request.\n\nOnly 65535 characters are allowed; "
                                  f"{len(output[key])} were supplied.")
        annotations = output.get("annotations") or []
        if len(annotations) > 50:
            raise Reject(422, "Invalid request.\n\nNo more than 50 items are allowed; "
                              f"{len(annotations)} were supplied.")
        for item in annotations:
            self._check_annotation(item)

    def _check_annotation(self, item: Any) -> None:
        if not isinstance(item, dict):
            raise Reject(422, "Invalid request.\n\nAn annotation is not an object.")
        self._check_keys(item, ANNOTATION_KEYS, "annotation")
        for key in ("path", "start_line", "end_line", "annotation_level", "message"):
            if key not in item:
                raise Reject(422, f"Invalid request.\n\n\"{key}\" wasn't supplied.")
        if not isinstance(item["path"], str) or not item["path"] or item["path"].startswith(("/", "./")):
            raise Reject(422, f"Invalid request.\n\npath {item['path']!r} is not a repository path.")
        for key in ("start_line", "end_line", "start_column", "end_column"):
            if key in item and (not isinstance(item[key], int) or isinstance(item[key], bool) or item[key] < 1):
                raise Reject(422, f"Invalid request.\n\n{key} must be a positive integer.")
        if item["start_line"] > item["end_line"]:
            raise Reject(422, "Invalid request.\n\nstart_line must be less than or equal to end_line.")
        if ("start_column" in item or "end_column" in item) and item["start_line"] != item["end_line"]:
            raise Reject(422, "Invalid request.\n\nstart_column and end_column are only allowed on a single line.")
        if item["annotation_level"] not in LEVELS:
            raise Reject(422, f"Invalid request.\n\n{item['annotation_level']!r} is not a member of {sorted(LEVELS)}.")
        if len(item["message"].encode()) > 64 * 1024 or len((item.get("raw_details") or "").encode()) > 64 * 1024:
            raise Reject(422, "Invalid request.\n\nThe maximum size of message and raw_details is 64 KB.")
        if len(item.get("title") or "") > 255:
            raise Reject(422, "Invalid request.\n\nAnnotation title is too long (maximum is 255 characters).")

    def _githubkit(self, body: dict[str, Any], model_names: tuple[str, ...]) -> None:
        if gk_models is None:
            return
        errors = []
        for name in model_names:
            try:
                getattr(gk_models, name).model_validate(body)
            except PydanticValidationError as exc:
                errors.append(str(exc).splitlines()[0])
            else:
                self.validated_with_githubkit += 1
                return
        raise Reject(422, "Invalid request (githubkit models).\n\n" + "; ".join(errors))


def _fake_actions() -> Any:
    """fake_actions.py (runs, jobs, logs, statuses, labels), loaded from beside this file however this
    module itself was loaded; it imports this module's classes."""
    if "fake_actions" not in sys.modules:
        spec = importlib.util.spec_from_file_location("fake_actions", Path(__file__).with_name("fake_actions.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules["fake_actions"] = module
        spec.loader.exec_module(module)
    return sys.modules["fake_actions"]
