"""A failed job's log, read as data: the failed step's lines, the first error with 20 lines either side,
secrets blanked, and the changed files it names.

GitHub's job logs prefix every line with an ISO-8601 timestamp and keep ANSI colour codes; the
timestamps also say which step a line belongs to (a step's lines fall between its start and end).
"""
from __future__ import annotations

import re
from ..model import record

TIMESTAMP = re.compile(r"^\ufeff?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) ?")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Runner markers first (`##[error]` is what a failed command prints), then what test runners and
# compilers print; the first line that matches is taken as the failure.
ERROR_LINE = re.compile(
    r"##\[error\]|^(?:E\s{2,}|ERROR\b)|\bFAILED\b|\b(?:Traceback \(most recent call last\)|AssertionError|"
    r"\w+Error:|error:|fatal:|Segmentation fault|core dumped)")
CONTEXT_LINES = 20
LINE_CHARS = 400  # a single line longer than this is cut: minified output must not fill the excerpt
SECRET_PATTERNS = (  # (pattern, replacement): GitHub masks registered secrets, not every token a tool prints
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "***"),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "***"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), "***"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"), "***"),  # JWT
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S), "***"),
    (re.compile(r"(?i)(authorization:\s*)(?:basic|bearer|token)\s+\S+"), r"\1***"),
    (re.compile(r"(?i)\b((?:access_|auth_|api_)?(?:token|secret|password|passwd|api[_-]?key)\s*[=:]\s*)[^\s*]\S*"), r"\1***"),
)


@record(frozen=True)
class LogLine:
    stamp: str  # ISO-8601 as GitHub wrote it, "" when the line has none
    text: str


def parse(raw: str) -> list[LogLine]:
    lines = []
    for line in raw.splitlines():
        match = TIMESTAMP.match(line)
        stamp = match.group(1) if match else ""
        lines.append(LogLine(stamp, ANSI.sub("", line[match.end():] if match else line)))
    return lines


def step_lines(lines: list[LogLine], started_at: str | None, completed_at: str | None) -> list[LogLine]:
    """The lines written while the step ran (the whole log when the step's times are unknown or match nothing)."""
    if not started_at:
        return lines
    # GitHub's step times have whole seconds, the log's stamps fractions: compare on the second.
    start, end = started_at[:19], (completed_at or "9999")[:19]
    inside = [line for line in lines if line.stamp and start <= line.stamp[:19] <= end]
    return inside or lines


def first_error(lines: list[LogLine]) -> int | None:
    """Index of the first line that reads as the failure; a pytest/compiler line before the runner's
    closing `##[error]Process completed with exit code` wins over that line."""
    closing = None
    for index, line in enumerate(lines):
        if ERROR_LINE.search(line.text):
            if line.text.startswith("##[error]Process completed with exit code"):
                closing = index if closing is None else closing
                continue
            return index
    return closing


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    for pattern, replacement in SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def excerpt(lines: list[LogLine], index: int, budget: int, secrets: tuple[str, ...] = ()) -> str:
    """The first error with CONTEXT_LINES either side, secrets blanked, at most `budget` characters."""
    window = lines[max(0, index - CONTEXT_LINES): index + CONTEXT_LINES + 1]
    text = "\n".join(line.text if len(line.text) <= LINE_CHARS else line.text[:LINE_CHARS] + "…" for line in window)
    text = redact(text, secrets)
    if len(text) > budget:
        # Keep the error line: cut from both ends around it.
        error = redact(lines[index].text[:LINE_CHARS], secrets)
        at = text.find(error)
        half = max(0, (budget - len(error)) // 2)
        start = max(0, min(at - half, len(text) - budget))
        text = text[start:start + budget]
    return text


def named_paths(lines: list[LogLine], paths: list[str]) -> list[tuple[str, int | None]]:
    """Changed files the log names, in the order it names them, each with the line number it gives
    (`path:123`, `path", line 123`, `path(123)`), when it gives one."""
    found: dict[str, int | None] = {}
    if not paths:
        return []
    pattern = re.compile(r"(?<![\w./-])(?:\S*/)?(" + "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True))
                         + r")(?:\"?, line (\d+)|:(\d+)|\((\d+)[,)])?(?![\w-])")
    for line in lines:
        for match in pattern.finditer(line.text):
            number = next((int(g) for g in match.groups()[1:] if g), None)
            path = match.group(1)
            if path not in found or (found[path] is None and number is not None):
                found[path] = number
    return list(found.items())
