"""The shapes of what GitHub hands us — API answers and event files — as JSON Schemas.

Both are input we do not control (a proxy's HTML page, a cut-off body, a hand-written event file),
so each is checked once where it enters, and the code after that reads fields without guessing.
Only the fields the action reads are described; anything else GitHub sends is ignored.
"""
from __future__ import annotations

from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

SHA = {"type": "string", "pattern": "^[0-9a-f]{40}$"}
TEXT_OR_NULL = {"type": ["string", "null"]}
REPO = {"type": ["object", "null"], "properties": {"full_name": {"type": "string"}}}  # null: the fork is gone
BRANCH_END = {"type": "object", "required": ["sha", "ref"],
              "properties": {"sha": SHA, "ref": {"type": "string"}, "label": TEXT_OR_NULL, "repo": REPO}}

PULL_REQUEST = {
    "type": "object", "required": ["number", "head", "base"],
    "properties": {
        "number": {"type": "integer", "minimum": 1},
        "title": TEXT_OR_NULL, "body": TEXT_OR_NULL, "state": TEXT_OR_NULL, "html_url": TEXT_OR_NULL,
        "merged": {"type": ["boolean", "null"]}, "merged_at": TEXT_OR_NULL,
        "user": {"type": ["object", "null"], "properties": {"login": {"type": "string"}}},
        "labels": {"type": ["array", "null"],
                   "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "head": BRANCH_END, "base": BRANCH_END,
    },
}
PULL_REQUESTS = {"type": "array", "items": PULL_REQUEST}
BRANCH = {"type": "object", "required": ["commit"],
          "properties": {"commit": {"type": "object", "required": ["sha"], "properties": {"sha": SHA}}}}
CHECK_RUN = {  # what we read of a run: its id, where it is, and the state our last review left on it
    "type": "object", "required": ["id"],
    "properties": {
        "id": {"type": "integer"}, "name": {"type": "string"}, "html_url": TEXT_OR_NULL,
        "external_id": TEXT_OR_NULL, "head_sha": {"type": "string"},
        "output": {"type": ["object", "null"], "properties": {"text": TEXT_OR_NULL}},
    },
}
CHECK_RUNS = {"type": "object", "required": ["check_runs"],
              "properties": {"check_runs": {"type": "array", "items": {**CHECK_RUN, "required": ["id", "name"]}}}}

OBJECTS = {"type": "array", "items": {"type": "object"}}


@cache  # one schema object per key: `problem` keeps its validators by schema identity
def listing(key: str | None) -> dict[str, Any]:
    """A page of a list endpoint: an array of objects, or an object holding one under `key`."""
    return OBJECTS if key is None else {"type": "object", "properties": {key: {**OBJECTS, "type": ["array", "null"]}}}


PULL_REQUEST_EVENT = {
    "type": "object", "required": ["pull_request"],
    "properties": {"action": {"type": "string"}, "before": {"type": ["string", "null"]},
                   "pull_request": PULL_REQUEST},
}
WORKFLOW_RUN_EVENT = {
    "type": "object", "required": ["workflow_run"],
    "properties": {
        "action": {"type": "string"},
        "workflow_run": {
            "type": "object", "required": ["head_sha"],
            "properties": {
                "head_sha": SHA, "head_branch": TEXT_OR_NULL,
                "head_repository": {"type": ["object", "null"], "properties": {
                    "owner": {"type": ["object", "null"], "properties": {"login": {"type": "string"}}}}},
                "pull_requests": {"type": ["array", "null"], "items": {
                    "type": "object", "required": ["number"],
                    "properties": {"number": {"type": "integer", "minimum": 1},
                                   "head": {"type": "object", "properties": {"sha": {"type": "string"}}}}}},
            },
        },
    },
}

_VALIDATORS: dict[int, Draft202012Validator] = {}
PROBLEM_LIMIT = 200  # characters; the offending value is quoted and may be a whole page


def problem(data: Any, schema: dict[str, Any]) -> str | None:
    """What is wrong with `data` for `schema` — the first field at fault and why — or None."""
    validator = _VALIDATORS.setdefault(id(schema), Draft202012Validator(schema))
    error = best_match(validator.iter_errors(data))
    if error is None:
        return None
    text = f"{error.json_path}: {error.message}"
    return text if len(text) <= PROBLEM_LIMIT else text[:PROBLEM_LIMIT - 1] + "…"
