"""Workflow commands on stdout and the runner's file commands ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY).

Used when no check run can be posted (a fork PR's read-only token, GitHub down) and for the step's
outputs, masks, log groups and job summary on every run. actions-toolkit writes the commands (with
its escaping), the masks and the outputs, all to `sys.stdout` and the runner's files; we keep our
own code where it falls short, each place saying so. Untrusted text never reaches the log unguarded.
"""
from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Mapping

from actions_toolkit import core
from actions_toolkit.command import Command

from ..model import Finding
from .checks import annotation_message, annotation_title

COMMAND_LEVEL = {"high": "error", "medium": "warning", "low": "notice"}
PER_LEVEL_LIMIT = 10  # the runner uploads at most 10 annotations per level for a step (composite: the whole action)
MESSAGE_LIMIT = 4096  # the runner truncates longer messages


def command(name: str, message: str, **properties: str | int | None) -> str:
    """One workflow command line, escaped by actions-toolkit. Ours because the toolkit's annotation
    helpers send every property, empty ones included (`title=,line=,…`), which the runner then reads."""
    return str(Command(name, {key: str(value) for key, value in properties.items() if value not in (None, "")},
                       message))


def annotation_command(finding: Finding, language: str) -> str:
    """One annotation; a finding about the PR description becomes a job-level annotation (no file)."""
    start = (finding.line or 1) if finding.path else None
    end = finding.end_line if finding.line and finding.end_line and finding.end_line > finding.line else None
    message = annotation_message(finding, language)
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT - 1] + "…"
    return command(COMMAND_LEVEL[finding.severity or "medium"], message, file=finding.path, line=start,
                   endLine=end if finding.path else None, title=annotation_title(finding, language))


def annotation_commands(findings: list[Finding], language: str, cap: int) -> tuple[list[str], int]:
    """Lines for up to `cap` findings, at most PER_LEVEL_LIMIT per level; and how many were left out."""
    lines: list[str] = []
    per_level: dict[str, int] = {}
    for finding in findings[:cap]:
        level = COMMAND_LEVEL[finding.severity or "medium"]
        if per_level.get(level, 0) < PER_LEVEL_LIMIT:
            per_level[level] = per_level.get(level, 0) + 1
            lines.append(annotation_command(finding, language))
    return lines, len(findings) - len(lines)


def mask(values: list[str]) -> None:
    """Register each value with the runner; a value must be one line (see secrets.Scrubber.masks)."""
    for value in values:
        core.set_secret(value)


def guarded(text: str) -> str:
    """`text` for the log with workflow commands in it disabled (it may quote PR-controlled strings)."""
    if "::" not in text and "##[" not in text:
        return text
    token = secrets.token_hex(16)
    return f"::stop-commands::{token}\n{text}\n::{token}::"


def log(text: str) -> None:
    core.info(guarded(text))
    sys.stdout.flush()


def log_group(title: str, text: str) -> None:
    """`text` folded under `title` in the log; the group commands stay outside the guarded text."""
    core.start_group(title)
    log(text)
    core.end_group()


def write_outputs(outputs: Mapping[str, str]) -> None:
    """Each output as a `name<<ghadelimiter_<uuid>` block in $GITHUB_OUTPUT (actions-toolkit)."""
    for name, value in outputs.items():
        core.set_output(name, value)


def step_summary_room(path: str | None, limit: int) -> int:
    """Bytes this step may still add to its job summary."""
    if not path:
        return 0
    try:
        used = Path(path).stat().st_size
    except OSError:
        used = 0
    return max(0, limit - used)


def append_step_summary(path: str | None, markdown: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(markdown if markdown.endswith("\n") else markdown + "\n")
