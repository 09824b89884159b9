"""The Actions side of the fake GitHub (fake_github.py registers it): workflow runs of every
attempt and their jobs, job logs behind a redirect to a separate storage origin, commit statuses,
other apps' check runs, the Actions job's own check run, branch commits and PR labels.

Fixtures are built complete and validated with githubkit's response models (GitHub's OpenAPI
description), so the action is tested against the shapes GitHub documents, not against what it
happens to read. List answers are paginated with a `Link` header and carry an `ETag`; a request
with a matching `If-None-Match` gets 304 with no body, as on GitHub.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import re
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from fake_github import ACTIONS_APP, Reject

try:
    from githubkit_schemas.latest import models as gk_models
except ImportError:
    gk_models = None

JSON = "application/json; charset=utf-8"
STAMP = "2026-03-01T10:00:00Z"


def _user(login: str, user_id: int = 1, kind: str = "User") -> dict[str, Any]:
    base = f"https://api.github.test/users/{login}"
    return {"login": login, "id": user_id, "node_id": f"U_{user_id}", "avatar_url": f"https://avatars.test/u/{user_id}",
            "gravatar_id": "", "url": base, "html_url": f"https://github.test/{login}", "followers_url": f"{base}/followers",
            "following_url": f"{base}/following{{/other_user}}", "gists_url": f"{base}/gists{{/gist_id}}",
            "starred_url": f"{base}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{base}/subscriptions",
            "organizations_url": f"{base}/orgs", "repos_url": f"{base}/repos", "events_url": f"{base}/events{{/privacy}}",
            "received_events_url": f"{base}/received_events", "type": kind, "site_admin": False}


def _repository(full_name: str, repo_id: int) -> dict[str, Any]:
    owner, name = full_name.split("/")
    api = f"https://api.github.test/repos/{full_name}"
    urls = {f"{key}_url": f"{api}/{key}" for key in (
        "archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits", "compare", "contents",
        "contributors", "deployments", "downloads", "events", "forks", "git_commits", "git_refs", "git_tags",
        "issue_comment", "issue_events", "issues", "keys", "labels", "languages", "merges", "milestones",
        "notifications", "pulls", "releases", "stargazers", "statuses", "subscribers", "subscription", "tags",
        "teams", "trees", "hooks")}
    return {"id": repo_id, "node_id": f"R_{repo_id}", "name": name, "full_name": full_name, "owner": _user(owner, repo_id),
            "private": False, "html_url": f"https://github.test/{full_name}", "description": None,
            "fork": owner != "acme", "url": api, **urls}


def _validate(model: str, data: dict[str, Any]) -> dict[str, Any]:
    if gk_models is not None:
        getattr(gk_models, model).model_validate(data)
    return data


class FakeActions:
    def __init__(self, server: Any):
        self.server = server
        self.runs: dict[int, dict[str, Any]] = {}
        self.jobs: dict[int, list[dict[str, Any]]] = {}  # run id → jobs of every attempt
        self.logs: dict[int, str | int] = {}  # job id → log text, or the status GitHub answers (404, 410)
        self.statuses: dict[str, list[dict[str, Any]]] = {}  # sha → newest first
        self.labels: dict[int, list[dict[str, Any]]] = {}
        self.commits: dict[str, list[dict[str, Any]]] = {}  # branch → newest first
        self.job_check_runs: set[int] = set()  # the Actions jobs' own check runs: GitHub refuses to let us edit them
        self.storage_requests_with_token = 0  # log downloads from storage that carried our token (must stay 0)
        self.validated = 0
        self._ids = itertools.count(7001)

    # -- fixtures ----------------------------------------------------------------------------
    def add_run(self, *, head_sha: str, workflow: str = "CI", path: str = ".github/workflows/ci.yml",
                workflow_id: int = 11, event: str = "pull_request", head_branch: str = "feature",
                head_repo: str = "acme/kernels", created_at: str = STAMP, status: str = "completed",
                conclusion: str | None = "failure", attempt: int = 1) -> dict[str, Any]:
        run_id = next(self._ids)
        full = f"{self.server.owner}/{self.server.repo}"
        api = f"https://api.github.test/repos/{full}/actions/runs/{run_id}"
        run = {
            "id": run_id, "name": workflow, "node_id": f"WFR_{run_id}", "check_suite_id": run_id + 1,
            "check_suite_node_id": f"CS_{run_id}", "head_branch": head_branch, "head_sha": head_sha, "path": path,
            "run_number": run_id % 1000, "run_attempt": attempt, "referenced_workflows": [], "event": event,
            "status": status, "conclusion": conclusion if status == "completed" else None,
            "workflow_id": workflow_id, "url": api, "html_url": f"https://github.test/{full}/actions/runs/{run_id}",
            "pull_requests": [], "created_at": created_at, "updated_at": created_at, "actor": _user("dev"),
            "triggering_actor": _user("dev"), "run_started_at": created_at, "jobs_url": f"{api}/jobs",
            "logs_url": f"{api}/logs", "check_suite_url": f"https://api.github.test/repos/{full}/check-suites/{run_id + 1}",
            "artifacts_url": f"{api}/artifacts", "cancel_url": f"{api}/cancel", "rerun_url": f"{api}/rerun",
            "previous_attempt_url": f"{api}/attempts/{attempt - 1}" if attempt > 1 else None,
            "workflow_url": f"https://api.github.test/repos/{full}/actions/workflows/{workflow_id}",
            "head_commit": {"id": head_sha, "tree_id": "f" * 40, "message": "commit", "timestamp": created_at,
                            "author": {"name": "dev", "email": "dev@example.invalid"},
                            "committer": {"name": "dev", "email": "dev@example.invalid"}},
            "repository": _repository(full, 1), "head_repository": _repository(head_repo, 2 if head_repo != full else 1),
            "head_repository_id": 2 if head_repo != full else 1, "display_title": "commit",
        }
        self.runs[run_id] = _validate("WorkflowRun", run)
        self.jobs[run_id] = []
        self.validated += 1
        return run

    def add_job(self, run: dict[str, Any], name: str, conclusion: str | None = "failure", *, status: str = "completed",
                attempt: int | None = None, failed_step: str = "Run tests", started_at: str | None = None,
                completed_at: str | None = None, log: str | int | None = None) -> dict[str, Any]:
        job_id = next(self._ids)
        full = f"{self.server.owner}/{self.server.repo}"
        started = started_at or run["created_at"]
        done = completed_at or started if status == "completed" else None
        steps = [{"name": "Set up job", "status": "completed", "conclusion": "success", "number": 1,
                  "started_at": started, "completed_at": started}]
        if status == "completed":
            steps.append({"name": failed_step, "status": "completed", "conclusion": conclusion, "number": 2,
                          "started_at": started, "completed_at": done})
        job = {
            "id": job_id, "run_id": run["id"], "run_url": run["url"], "run_attempt": attempt or run["run_attempt"],
            "node_id": f"CR_{job_id}", "head_sha": run["head_sha"],
            "url": f"https://api.github.test/repos/{full}/actions/jobs/{job_id}",
            "html_url": f"https://github.test/{full}/actions/runs/{run['id']}/job/{job_id}", "status": status,
            "conclusion": conclusion if status == "completed" else None, "created_at": started, "started_at": started,
            "completed_at": done, "name": name, "steps": steps,
            "check_run_url": f"https://api.github.test/repos/{full}/check-runs/{job_id}", "labels": ["ubuntu-latest"],
            "runner_id": 1, "runner_name": "runner-1", "runner_group_id": 1, "runner_group_name": "Default",
            "workflow_name": run["name"], "head_branch": run["head_branch"],
        }
        self.jobs[run["id"]].append(_validate("Job", job))
        self.validated += 1
        if log is not None:
            self.logs[job_id] = log
        return job

    def add_status(self, sha: str, context: str, state: str, description: str = "",
                   target_url: str = "https://readthedocs.test/builds/1") -> dict[str, Any]:
        status_id = next(self._ids)
        status = {"url": f"https://api.github.test/repos/{self.server.owner}/{self.server.repo}/statuses/{sha}",
                  "avatar_url": None, "id": status_id, "node_id": f"SC_{status_id}", "state": state,
                  "description": description, "target_url": target_url, "context": context, "created_at": STAMP,
                  "updated_at": STAMP, "creator": _user("readthedocs[bot]", 9, "Bot")}
        self.statuses.setdefault(sha, []).insert(0, _validate("Status", status))
        self.validated += 1
        return status

    def add_check_run(self, sha: str, name: str, conclusion: str | None, *, app: str = "buildkite",
                      title: str = "") -> dict[str, Any]:
        """A check run of another app (a CI service, a docs builder); `app="github-actions"` with
        `job=True` semantics is `add_job_check_run`."""
        run_id = next(self._ids)
        full = f"{self.server.owner}/{self.server.repo}"
        integration = {"id": 99, "slug": app, "node_id": "A_99", "owner": _user(app, 99, "Organization"),
                       "name": app, "description": "", "external_url": f"https://{app}.test",
                       "html_url": f"https://github.test/apps/{app}", "created_at": STAMP, "updated_at": STAMP,
                       "permissions": {"checks": "write"}, "events": []}
        run = {"id": run_id, "head_sha": sha, "node_id": f"CR_{run_id}", "external_id": str(uuid.uuid4()),
               "url": f"https://api.github.test/repos/{full}/check-runs/{run_id}",
               "html_url": f"https://github.test/{full}/runs/{run_id}", "details_url": f"https://{app}.test/{run_id}",
               "status": "completed" if conclusion else "in_progress", "conclusion": conclusion,
               "started_at": STAMP, "completed_at": STAMP if conclusion else None, "name": name,
               "output": {"title": title or None, "summary": None, "text": None, "annotations_count": 0,
                          "annotations_url": f"https://api.github.test/repos/{full}/check-runs/{run_id}/annotations"},
               "check_suite": {"id": run_id + 1}, "app": integration, "pull_requests": []}
        self.server.check_runs[run_id] = _validate("CheckRun", run)
        self.validated += 1
        return run

    def add_job_check_run(self, sha: str, name: str) -> dict[str, Any]:
        """The check run GitHub makes for the Actions job that runs this action: same app as ours,
        here the same name too, and not ours to complete."""
        run = self.add_check_run(sha, name, None, app="github-actions")
        run["app"] = {**run["app"], **ACTIONS_APP}
        self.job_check_runs.add(run["id"])
        return run

    def add_commit(self, branch: str, sha: str, date: str = STAMP) -> dict[str, Any]:
        full = f"{self.server.owner}/{self.server.repo}"
        person = {"name": "dev", "email": "dev@example.invalid", "date": date}
        commit = {"url": f"https://api.github.test/repos/{full}/commits/{sha}", "sha": sha, "node_id": f"C_{sha[:8]}",
                  "html_url": f"https://github.test/{full}/commit/{sha}",
                  "comments_url": f"https://api.github.test/repos/{full}/commits/{sha}/comments",
                  "commit": {"url": f"https://api.github.test/repos/{full}/git/commits/{sha}", "author": person,
                             "committer": person, "message": "commit", "comment_count": 0,
                             "tree": {"sha": "f" * 40, "url": f"https://api.github.test/repos/{full}/git/trees/{'f' * 40}"}},
                  "author": _user("dev"), "committer": _user("dev"), "parents": []}
        self.commits.setdefault(branch, []).insert(0, _validate("Commit", commit))
        self.validated += 1
        return commit

    def set_labels(self, number: int, names: list[str]) -> None:
        full = f"{self.server.owner}/{self.server.repo}"
        self.labels[number] = [_validate("Label", {
            "id": i, "node_id": f"L_{i}", "url": f"https://api.github.test/repos/{full}/labels/{name}", "name": name,
            "description": None, "color": "ededed", "default": False, "archived_at": None, "archived_by": None})
            for i, name in enumerate(names, 1)]

    # -- answers -------------------------------------------------------------------------------
    def answer(self, method: str, path: str, query: dict[str, str],
               headers: Any) -> tuple[int, bytes, str, dict[str, str]] | None:
        """(status, body, content type, headers) for an Actions-side request; None for the rest of the
        fake to route. Errors are raised as the fake's Reject."""
        if method == "GET" and (m := re.fullmatch(r"/_storage/logs/(\d+)", path)):
            # Log storage is another origin: GitHub's client must not send our token there.
            if headers.get("Authorization"):
                self.storage_requests_with_token += 1
            text = self.logs.get(int(m.group(1)))
            if not isinstance(text, str):
                raise Reject(404, "BlobNotFound")
            return 200, text.encode("utf-8"), "text/plain; charset=utf-8", {}
        prefix = f"{self.server.api_prefix}/repos/{self.server.owner}/{self.server.repo}"
        if method != "GET" or not path.startswith(prefix + "/"):
            return None
        rest = path[len(prefix):]
        if m := re.fullmatch(r"/actions/jobs/(\d+)/logs", rest):
            self.server._access(headers.get("Authorization", ""))
            log = self.logs.get(int(m.group(1)))
            if isinstance(log, int):
                raise Reject(log, "Server Error" if log == 410 else "Not Found")
            if log is None:
                raise Reject(404, "Not Found")
            port = self.server.url.split(":")[2].split("/")[0]
            return 302, b"", JSON, {"Location": f"http://localhost:{port}/_storage/logs/{m.group(1)}?sig=x"}
        if rest == "/actions/runs":
            items, key = self._runs(query), "workflow_runs"
        elif m := re.fullmatch(r"/actions/workflows/([^/]+)/runs", rest):
            wanted = m.group(1)
            items = [r for r in self._runs(query) if str(r["workflow_id"]) == wanted or r["path"].endswith("/" + wanted)]
            key = "workflow_runs"
        elif m := re.fullmatch(r"/actions/runs/(\d+)/jobs", rest):
            jobs = self.jobs.get(int(m.group(1)))
            if jobs is None:
                raise Reject(404, "Not Found")
            if query.get("filter", "latest") == "latest":
                last = max((j["run_attempt"] for j in jobs), default=1)
                jobs = [j for j in jobs if j["run_attempt"] == last]
            items, key = jobs, "jobs"
        elif m := re.fullmatch(r"/commits/([^/]+)/statuses", rest):
            items, key = self.statuses.get(m.group(1), []), None
        elif rest == "/commits":
            items, key = self.commits.get(query.get("sha", "main"), []), None
        elif m := re.fullmatch(r"/issues/(\d+)/labels", rest):
            items, key = self.labels.get(int(m.group(1)), []), None
        else:
            return None
        self.server._access(headers.get("Authorization", ""))
        return self._page(path, query, items, key, headers)

    def _runs(self, query: dict[str, str]) -> list[dict[str, Any]]:
        runs = sorted(self.runs.values(), key=lambda r: r["id"], reverse=True)
        for name in ("head_sha", "event"):
            if name in query:
                runs = [r for r in runs if r[name] == query[name]]
        if "branch" in query:
            runs = [r for r in runs if r["head_branch"] == query["branch"]]
        if "status" in query:
            runs = [r for r in runs if query["status"] in (r["status"], r["conclusion"])]
        if ".." in query.get("created", ""):
            start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in query["created"].split(".."))
            runs = [r for r in runs if start <= datetime.fromisoformat(r["created_at"].replace("Z", "+00:00")) <= end]
        return runs

    def _page(self, path: str, query: dict[str, str], items: list[Any], key: str | None,
              headers: Any) -> tuple[int, bytes, str, dict[str, str]]:
        page, per_page = int(query.get("page", 1)), min(int(query.get("per_page", 30)), 100)
        chunk = items[(page - 1) * per_page: page * per_page]
        payload: Any = {"total_count": len(items), key: chunk} if key else chunk
        body = json.dumps(payload).encode()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        extra = {"ETag": etag}
        if page * per_page < len(items):
            extra["Link"] = f'<{self.server.url}{path[len(self.server.api_prefix):]}?' \
                            f'{urlencode({**query, "page": page + 1})}>; rel="next"'
        if headers.get("If-None-Match") == etag:
            return 304, b"", JSON, extra
        return 200, body, JSON, extra
