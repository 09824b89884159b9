"""`git diff merge_base..head` parsed with unidiff into plain per-file records.

The PR decides how much text the diff holds, so it is read in bounded steps: the list of changed
files and their blob sizes first (`--raw -z`, paths never quoted), then line counts (`--numstat`)
without the files over the size cap, then the patch of only the files within the review's line
budget. A file left out is listed with the reason, never silently dropped.
"""
from __future__ import annotations

import re
from dataclasses import field
from typing import Callable, Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from .repo import Repo
from ..model import record

Status = Literal["added", "modified", "deleted", "renamed"]

# Most changed (added + removed) lines one review reads from the diff. The files with the fewest
# changed lines are read first, so one huge generated file costs itself, not the rest of the PR.
MAX_CHANGED_LINES = 200_000
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "-M")
STATUS_BY_LETTER: dict[str, Status] = {"A": "added", "D": "deleted", "R": "renamed", "C": "added"}
SUBMODULE_MODE = "160000"

LANGUAGE_BY_SUFFIX = {
    ".py": "python", ".pyi": "python",
    ".cu": "cpp", ".cuh": "cpp", ".hip": "cpp", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp",
    ".c": "cpp", ".h": "cpp", ".hpp": "cpp", ".hh": "cpp", ".inl": "cpp",
    ".csv": "config", ".yaml": "config", ".yml": "config", ".json": "config", ".toml": "config",
    ".cfg": "config", ".ini": "config",
    ".md": "text", ".rst": "text", ".txt": "text",
    ".sh": "shell",
}


def language_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return LANGUAGE_BY_SUFFIX.get(name[dot:].lower(), "other") if dot > 0 else "other"


@record
class ChangedFile:
    path: str  # head-side path (base-side for a deleted file)
    old_path: str | None
    status: Status
    language: str
    added: list[tuple[int, str]] = field(default_factory=list)  # (head line, text)
    removed: list[tuple[int, str]] = field(default_factory=list)  # (base line, text)
    hunks: list[tuple[int, int, int, int]] = field(default_factory=list)  # base start/len, head start/len
    skipped: str | None = None  # why the file's content is not checked

    @property
    def is_new(self) -> bool:
        return self.status == "added"

    @property
    def added_lines(self) -> set[int]:
        return {n for n, _ in self.added}

    def in_hunk(self, head_line: int) -> bool:
        return any(start <= head_line < start + max(length, 1) for _, _, start, length in self.hunks)


@record(frozen=True)
class _Entry:
    """One file of `git diff --raw -z`."""
    status: Status
    path: str  # head side (base side for a deletion)
    old_path: str | None  # base side of a rename
    blobs: tuple[str, ...]  # blob ids of the sides that exist (not submodule commits)


def read_changes(repo: Repo, base: str, head: str, size_cap: int,
                 excluded: Callable[[str], bool] = lambda path: False,
                 max_lines: int = MAX_CHANGED_LINES) -> list[ChangedFile]:
    """The files changed from `base` to `head` (minus `excluded` paths), with the added and removed
    lines of those within `size_cap` and the line budget; the others carry the reason in `skipped`."""
    entries = [e for e in _listing(repo, base, head) if not excluded(e.path)]
    if not entries:
        return []
    sizes = _blob_sizes(repo, [blob for e in entries for blob in e.blobs])
    skipped: dict[str, str] = {}
    for e in entries:
        size = max((sizes.get(blob, 0) for blob in e.blobs), default=0)
        if size > size_cap:
            skipped[e.path] = f"larger than the {size_cap // 1024} KB cap ({size // 1024} KB): no line of it was read"
    counts = _line_counts(repo, base, head, _excluding(entries, skipped))
    budget = max_lines
    for e in sorted((e for e in entries if e.path not in skipped), key=lambda e: counts.get(e.path, 0)):
        if counts.get(e.path, 0) > budget:
            skipped[e.path] = (f"not read: the PR changes more than {max_lines:,} lines, the most one review "
                               f"reads; this file's {counts[e.path]:,} are past that budget")
        else:
            budget -= counts.get(e.path, 0)
    text = repo.git("diff", *DIFF_OPTIONS, "--src-prefix=a/", "--dst-prefix=b/", base, head,
                    "--", *_excluding(entries, skipped)).decode("utf-8", "surrogateescape")
    parsed = {f.path: f for f in parse_diff(text)}
    files = []
    for e in entries:
        if e.path in skipped:
            files.append(ChangedFile(e.path, e.old_path, e.status, language_of(e.path), skipped=skipped[e.path]))
        elif e.path in parsed:
            files.append(parsed[e.path])
        else:  # no patch: a mode change or an empty file, unless lines changed (then say so, never drop them)
            files.append(ChangedFile(e.path, e.old_path, e.status, language_of(e.path),
                                     skipped="its patch could not be read" if counts.get(e.path) else None))
    return files


def changed_paths(repo: Repo, base: str, head: str) -> set[str]:
    """Every path `base..head` changes, on either side (a rename's two), none left out by a config."""
    return {p for e in _listing(repo, base, head) for p in (e.path, e.old_path) if p is not None}


def _listing(repo: Repo, base: str, head: str) -> list[_Entry]:
    """`git diff --raw -z`: `:<old mode> <new mode> <old id> <new id> <status>` then one path, or
    two for a rename or copy, each NUL-terminated and never quoted."""
    fields = repo.git("diff", *DIFF_OPTIONS, "--raw", "-z", "--no-abbrev", base, head).decode(
        "utf-8", "surrogateescape").split("\0")
    entries: list[_Entry] = []
    i = 0
    while i < len(fields) and fields[i].startswith(":"):
        old_mode, new_mode, old_blob, new_blob, letters = fields[i][1:].split(" ")
        two = letters[0] in "RC"
        old_path, path = (fields[i + 1], fields[i + 2]) if two else (None, fields[i + 1])
        i += 3 if two else 2
        blobs = tuple(blob for blob, mode in ((old_blob, old_mode), (new_blob, new_mode))
                      if mode not in ("000000", SUBMODULE_MODE))
        status = STATUS_BY_LETTER.get(letters[0], "modified")
        entries.append(_Entry(status, path, old_path if status == "renamed" else None, blobs))
    return entries


def _blob_sizes(repo: Repo, blobs: list[str]) -> dict[str, int]:
    if not blobs:
        return {}
    out = repo.git("cat-file", "--batch-check", input="".join(f"{b}\n" for b in blobs).encode()).decode()
    sizes = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            sizes[parts[0]] = int(parts[2])
    return sizes


def _line_counts(repo: Repo, base: str, head: str, pathspecs: list[str]) -> dict[str, int]:
    """Added + removed lines per head-side path, from `git diff --numstat -z` (binary files count 0)."""
    fields = repo.git("diff", *DIFF_OPTIONS, "--numstat", "-z", base, head, "--", *pathspecs).decode(
        "utf-8", "surrogateescape").split("\0")
    counts: dict[str, int] = {}
    i = 0
    while i < len(fields) and fields[i]:
        added, removed, path = fields[i].split("\t", 2)
        if not path:  # a rename: the old and the new path follow
            path = fields[i + 2]
            i += 2
        i += 1
        counts[path] = (int(added) if added.isdigit() else 0) + (int(removed) if removed.isdigit() else 0)
    return counts


def _excluding(entries: list[_Entry], skipped: dict[str, str]) -> list[str]:
    """Pathspecs that leave the skipped files (both names of a rename) out of a diff."""
    return [f":(exclude,literal){p}" for e in entries if e.path in skipped for p in (e.path, e.old_path) if p]


# How git C-quotes a path holding a control character, `"` or `\` (octal escapes are raw bytes).
C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
OCTAL = re.compile(r"[0-7]{3}")


def unquote_path(name: str) -> str:
    """A path as the patch shows it, unquoted: `"a/t\\tab.py"` → `a/<tab>tab.py`. Bytes that are not
    UTF-8 stay as surrogateescape characters, like every other path the review holds."""
    if len(name) < 2 or name[0] != '"' or name[-1] != '"':
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        if body[i] == "\\" and i + 1 < len(body):
            if OCTAL.match(body, i + 1):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.append(C_ESCAPES.get(body[i + 1], ord(body[i + 1])))
            i += 2
            continue
        out += body[i].encode("utf-8", "surrogateescape")
        i += 1
    return out.decode("utf-8", "surrogateescape")


def parse_diff(text: str) -> list[ChangedFile]:
    """Parse a unified diff (already decoded text) into ChangedFile records."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise ValueError(f"the diff could not be parsed: {exc}") from exc
    files: list[ChangedFile] = []
    for pf in patch:
        source, target = unquote_path(pf.source_file), unquote_path(pf.target_file)
        source = source[2:] if source.startswith("a/") else source
        target = target[2:] if target.startswith("b/") else target
        if pf.is_added_file:
            status: Status = "added"
        elif pf.is_removed_file:
            status = "deleted"
        elif pf.is_rename:
            status = "renamed"
        else:
            status = "modified"
        path = source if status == "deleted" else target
        changed = ChangedFile(
            path=path,
            old_path=source if status in ("renamed",) else None,
            status=status,
            language=language_of(path),
        )
        if pf.is_submodule:
            changed.skipped = "submodule, not read"
        elif pf.is_symlink:
            changed.skipped = "symlink, not read"
        elif pf.is_binary_file:
            changed.skipped = "binary file"
        for hunk in pf:
            changed.hunks.append((hunk.source_start, hunk.source_length, hunk.target_start, hunk.target_length))
            for line in hunk:
                if line.is_added and line.target_line_no is not None:
                    changed.added.append((line.target_line_no, line.value.rstrip("\r\n")))
                elif line.is_removed and line.source_line_no is not None:
                    changed.removed.append((line.source_line_no, line.value.rstrip("\r\n")))
        files.append(changed)
    return files
