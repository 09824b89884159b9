"""Downstream coverage (aiter/vLLM E4): a change to an op that downstream projects consume, whose
downstream CI jobs were skipped because no `ci:*` label is set.

Three steps, all profile data (`downstream` in rules/profiles/<name>.yml):
  reachability  which consumed op a changed code path belongs to (`ops[].paths`);
  model         which models run that op, and which downstream jobs run those models (`ops[].jobs`);
  label         the smallest set of labels whose jobs cover every touched op (`jobs[].labels`);
                an op no job is known to run asks for the catch-all label.
A job counts only when its workflow file on the base side still mentions it and its label (the
label map changes over time; a stale profile entry is said, not used).
"""
from __future__ import annotations

import re

from ..git.diff import ChangedFile
from ..model import Finding, record
from ..profiles import Profile
from .collect import Job

RULE = "downstream-ci-skipped"
COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|$)")
WORKFLOWS = ".github/workflows/"


@record(frozen=True)
class DownstreamJob:
    name: str
    workflow: str
    labels: tuple[str, ...]


def confirmed_jobs(profile: Profile, workflow_text) -> tuple[list[DownstreamJob], list[str]]:
    """The profile's downstream jobs that the base side's workflow files confirm; notes for the rest.
    `workflow_text(path)` returns a workflow file's text or None."""
    jobs, notes = [], []
    for item in (profile.data.get("downstream") or {}).get("jobs") or []:
        path = WORKFLOWS + item["workflow"]
        text = workflow_text(path)
        labels = tuple(label for label in item["labels"] if text and label in text)
        if text is None:
            notes.append(f"Downstream job “{item['name']}”: {path} is not in the repository; the profile's label "
                         "map may be stale, so the job was left out.")
        elif item["name"] not in text or not labels:
            notes.append(f"Downstream job “{item['name']}”: {path} no longer names the job or its labels "
                         f"({', '.join(item['labels'])}); it was left out.")
        else:
            jobs.append(DownstreamJob(item["name"], item["workflow"], labels))
    return jobs, notes


def touched_ops(files: list[ChangedFile], profile: Profile) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """op → (changed paths that reach it, models that run it, downstream job names that run those models)."""
    out: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for op in (profile.data.get("downstream") or {}).get("ops") or []:
        patterns = [re.compile(p) for p in op["paths"]]
        paths = [f.path for f in files if any(p.search(f.path) for p in patterns)
                 and any(not COMMENT.match(text) for _, text in f.added + f.removed)]
        if paths:
            out[op["op"]] = (paths, list(op.get("models") or []), list(op.get("jobs") or []))
    return out


def minimal_labels(ops: dict[str, tuple[list[str], list[str], list[str]]], jobs: list[DownstreamJob],
                   order: list[str], catch_all: str) -> list[str]:
    """Greedy set cover: labels, in the profile's order on ties, until every touched op is run by a
    labelled job; an op no confirmed job runs needs the catch-all label."""
    covers: dict[str, set[str]] = {}
    for op, (_, _, names) in ops.items():
        for job in jobs:
            if job.name in names:
                for label in job.labels:
                    if label != catch_all:
                        covers.setdefault(label, set()).add(op)
    left, chosen = set(ops), []
    while left:
        best = max(covers, key=lambda label: (len(covers[label] & left), -_rank(order, label)), default=None)
        if best is None or not covers[best] & left:
            return [catch_all]
        chosen.append(best)
        left -= covers[best]
    return chosen


def _rank(order: list[str], label: str) -> int:
    return order.index(label) if label in order else len(order)


def check(files: list[ChangedFile], profile: Profile, head_jobs: list[Job], labels: list[str],
          workflow_text) -> tuple[list[Finding], list[str], str | None]:
    """E4 findings (one per PR), notes, and why no finding was due (None: not checked)."""
    data = profile.data.get("downstream") or {}
    if not data:
        return [], [], None
    ops = touched_ops(files, profile)
    if not ops:
        return [], [], "no op that downstream projects consume changed"
    jobs, notes = confirmed_jobs(profile, workflow_text)
    if not jobs:
        files_named = ", ".join(item["workflow"] for item in data.get("jobs") or [])
        return [], [f"None of the downstream workflows the {profile.name} profile names ({files_named}) is in "
                    f"{WORKFLOWS} with its job and label; downstream coverage (E4) was not checked."], None
    downstream_labels = list(profile.data.get("downstream_labels") or [])
    set_labels = [label for label in labels if label in downstream_labels]
    if set_labels:
        return [], notes, f"downstream CI is requested by the label(s) {', '.join(set_labels)}"
    names = {name for _, _, job_names in ops.values() for name in job_names}
    ran = [j for j in head_jobs if any(j.name == name or j.name.startswith(name + " (") for name in names)
           and j.status == "completed" and j.conclusion not in ("skipped", None)]
    if ran:
        return [], notes, f"the downstream job(s) {', '.join(sorted({j.name for j in ran}))} ran"
    needed = minimal_labels(ops, jobs, downstream_labels, data.get("catch_all", "ci:all"))
    first_op, (paths, models, _) = next(iter(ops.items()))
    skipped = sorted(names & {job.name for job in jobs}) or sorted(names)
    reach = "; ".join(f"{op}: {', '.join(p[:3])}" + (f" (run by {', '.join(m)})" if m else "")
                      for op, (p, m, _) in ops.items())
    finding = Finding(
        rule=RULE, path=paths[0], line=None, tag="verified",
        trigger=f"`{paths[0]}` changes the {first_op} op" + (f" that {', '.join(models)} run" if models else "")
                + f", and the downstream job(s) {', '.join(skipped)} were skipped with no ci:* label set",
        problem=f"The PR changes op(s) downstream projects consume ({reach}), and their downstream CI jobs "
                f"({', '.join(skipped)}) did not run: no ci:* label is set.",
        impact="The PR can merge green on this repository's own tests and break a downstream model after merge.",
        action=f"Reviewer should ask for the label(s) {', '.join(needed)} and require the downstream jobs green "
               "before merging.",
    )
    return [finding], notes, None
