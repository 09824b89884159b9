"""`git diff merge_base..head` parsed into plain per-file records.

The PR decides how much text the diff holds, so it is read in bounded steps: the list of changed
files and their blob sizes first (`--raw -z`, paths never quoted), then line counts (`--numstat`)
without the files over the size cap, then the patch of only the files within the review's line
budget. A file left out is listed with the reason, never silently dropped.
"""
from __future__ import annotations

from functools import cached_property
from typing import Callable, Literal

from ..lang.regex import lazy_re
from ..model import field, record
from .repo import Repo

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
    # its sides' blob sizes added up, what parsing both holds in memory (0 from a bare patch)
    source_bytes: int = field(default=0, compare=False)

    @property
    def is_new(self) -> bool:
        return self.status == "added"

    @cached_property
    def added_lines(self) -> set[int]:
        """The head lines the PR adds; asked per node and per line by the detectors, built once (the
        diff's lines never change after it is read)."""
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
            parsed[e.path].source_bytes = sum(sizes.get(blob, 0) for blob in e.blobs)
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
OCTAL = lazy_re(r"[0-7]{3}")


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


DEV_NULL = "/dev/null"
SYMLINK_MODE = "120000"
HUNK_HEADER = lazy_re(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
MODE_LINE = lazy_re(r"(new file mode|deleted file mode|old mode|new mode) (\d+)$")
INDEX_MODE = lazy_re(r"index [0-9a-f]+\.\.[0-9a-f]+ (\d+)$")


def parse_diff(text: str) -> list[ChangedFile]:
    """The files of `git diff` output (already decoded text; `a/` and `b/` prefixes, paths unquoted
    only by git's C quoting), as ChangedFile records.

    A file's lines are read by its hunks' counts, so a removed line reading `--- x` or `diff --git`
    is content. Its paths come from the `---`/`+++` lines (a name ends at the tab git writes after a
    name holding a space), else from `rename from`/`rename to`, else from the `diff --git` line, whose
    two names are then the same. A file emptied reads as deleted and one filled from empty as added,
    as a single hunk from or to line 0 says."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # what follows the last line break is no line (an empty line inside a hunk is context)
    files: list[ChangedFile] = []
    i, end = 0, len(lines)
    while i < end:
        if not lines[i].startswith("diff --git "):  # git writes nothing between one file's hunks and the next
            raise ValueError(f"the diff could not be parsed: a line outside any file: {lines[i][:80]}")
        header = lines[i][len("diff --git "):]
        names: dict[str, str] = {}
        modes: dict[str, str] = {}
        binary = False
        hunks: list[tuple[int, int, int, int]] = []
        added: list[tuple[int, str]] = []
        removed: list[tuple[int, str]] = []
        i += 1
        while i < end and not lines[i].startswith(("@@ ", "diff --git ")):
            line = lines[i]
            i += 1
            if line.startswith(("--- ", "+++ ")):
                names[line[:3]] = line[4:].split("\t", 1)[0]
            elif line.startswith(("rename from ", "rename to ")):
                side, _, name = line[len("rename "):].partition(" ")
                names[side] = name
            elif match := MODE_LINE.match(line):
                modes[match.group(1)] = match.group(2)
            elif match := INDEX_MODE.match(line):
                modes.setdefault("index", match.group(1))
            elif line.startswith("Binary files ") and line.endswith(" differ"):
                binary = True
        while i < end and lines[i].startswith("@@ "):
            match = HUNK_HEADER.match(lines[i])
            if match is None:
                raise ValueError(f"the diff could not be parsed: a malformed hunk header: {lines[i][:80]}")
            old_at, old_len, new_at, new_len = (int(g) if g is not None else 1 for g in match.groups())
            hunks.append((old_at, old_len, new_at, new_len))
            i += 1
            old_no, new_no = old_at, new_at
            old_end, new_end = old_at + old_len, new_at + new_len
            while old_no < old_end or new_no < new_end:
                if i >= end:
                    raise ValueError("the diff could not be parsed: a hunk is shorter than its header says")
                line = lines[i]
                i += 1
                kind = line[:1]
                if kind == "+":
                    added.append((new_no, line[1:].rstrip("\r\n")))
                    new_no += 1
                elif kind == "-":
                    removed.append((old_no, line[1:].rstrip("\r\n")))
                    old_no += 1
                elif kind in (" ", ""):
                    old_no += 1
                    new_no += 1
                elif kind != "\\":  # `\ No newline at end of file`
                    raise ValueError(f"the diff could not be parsed: a hunk line expected: {line[:80]}")
                if old_no > old_end or new_no > new_end:
                    raise ValueError("the diff could not be parsed: a hunk is longer than its header says")
            while i < end and lines[i].startswith("\\"):
                i += 1
        files.append(_changed_file(header, names, modes, binary, hunks, added, removed))
    return files


def _changed_file(header: str, names: dict[str, str], modes: dict[str, str], binary: bool,
                  hunks: list[tuple[int, int, int, int]], added: list[tuple[int, str]],
                  removed: list[tuple[int, str]]) -> ChangedFile:
    if "---" in names and "+++" in names:
        source, target = unquote_path(names["---"]), unquote_path(names["+++"])
    elif "from" in names and "to" in names:
        source, target = "a/" + unquote_path(names["from"]), "b/" + unquote_path(names["to"])
    else:
        source, target = _same_names(header)
    if "new file mode" in modes:
        source = DEV_NULL
    if "deleted file mode" in modes:
        target = DEV_NULL
    source = source[2:] if source.startswith("a/") else source
    target = target[2:] if target.startswith("b/") else target
    one = hunks[0] if len(hunks) == 1 else None
    status: Status
    if source == DEV_NULL or one is not None and one[0] == 0 and one[1] == 0:
        status = "added"
    elif target == DEV_NULL or one is not None and one[2] == 0 and one[3] == 0:
        status = "deleted"
    elif source != target:
        status = "renamed"
    else:
        status = "modified"
    path = source if status == "deleted" else target
    mode = modes.get("new file mode") or modes.get("new mode") or modes.get("index") \
        or modes.get("deleted file mode") or modes.get("old mode")
    skipped = ("submodule, not read" if mode == SUBMODULE_MODE else "symlink, not read" if mode == SYMLINK_MODE
               else "binary file" if binary else None)
    return ChangedFile(path=path, old_path=source if status == "renamed" else None, status=status,
                       language=language_of(path), added=added, removed=removed, hunks=hunks, skipped=skipped)


def _same_names(header: str) -> tuple[str, str]:
    """The two names of a `diff --git` line whose sides have one path (a mode change, a binary file, an
    empty file added or deleted): `a/P b/P`, both C-quoted or neither, so the line splits in half."""
    half = len(header) // 2
    source, target = unquote_path(header[:half]), unquote_path(header[half + 1:])
    if header[half:half + 1] != " " or source[2:] != target[2:]:
        raise ValueError(f"the diff could not be parsed: no path in {header[:80]!r}")
    return source, target
