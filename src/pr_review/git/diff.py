"""`git diff merge_base..head` parsed with unidiff into plain per-file records."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

Status = Literal["added", "modified", "deleted", "renamed"]

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


@dataclass
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


def parse_diff(text: str) -> list[ChangedFile]:
    """Parse a unified diff (already decoded text) into ChangedFile records."""
    try:
        patch = PatchSet(text)
    except UnidiffParseError as exc:
        raise ValueError(f"the diff could not be parsed: {exc}") from exc
    files: list[ChangedFile] = []
    for pf in patch:
        source = pf.source_file[2:] if pf.source_file.startswith("a/") else pf.source_file
        target = pf.target_file[2:] if pf.target_file.startswith("b/") else pf.target_file
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
