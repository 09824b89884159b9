"""Triage: does the PR change runtime surface, does it still apply to the base tip, which files are backbone."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .git import Repo
from .git.diff import ChangedFile
from .lang.code_lines import code_lines
from .profiles import Profile
from .source import Source

Line = tuple[int, str]


@dataclass
class FileCode:
    """The changed lines of one file that are code (comments, docstrings, blank lines removed)."""

    added: list[Line] = field(default_factory=list)
    removed: list[Line] = field(default_factory=list)


@dataclass
class Triage:
    runtime_surface: bool
    runtime_reason: str
    code: dict[str, FileCode]
    static_paths: list[str]
    stale: str | None
    tiers: dict[str, int]  # path → tier from the profile table (1/2/3 only when listed)


def reduce_to_code(files: list[ChangedFile], source: Source) -> dict[str, FileCode]:
    """Per file, the added/removed lines that are code; a -/+ pair of identical code cancels out."""
    out: dict[str, FileCode] = {}
    for f in files:
        if f.skipped:
            out[f.path] = FileCode()
            continue
        head_code = _code_set(source, f.path, "head", f.language) if f.added else set()
        base_code = _code_set(source, f.old_path or f.path, "base", f.language) if f.removed else set()
        added = [(n, t) for n, t in f.added if head_code is None or n in head_code]
        removed = [(n, t) for n, t in f.removed if base_code is None or n in base_code]
        pending = Counter(_strip(t) for _, t in removed)
        kept_added = []
        for n, t in added:
            if pending[_strip(t)] > 0:
                pending[_strip(t)] -= 1
            else:
                kept_added.append((n, t))
        remaining = Counter(_strip(t) for _, t in added)
        kept_removed = []
        for n, t in removed:
            if remaining[_strip(t)] > 0:
                remaining[_strip(t)] -= 1
            else:
                kept_removed.append((n, t))
        out[f.path] = FileCode(kept_added, kept_removed)
    return out


def _strip(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _code_set(source: Source, path: str, side, language: str) -> set[int] | None:
    text = source.text(path, side)
    return code_lines(text, language) if text is not None else None


def runtime_surface(files: list[ChangedFile], code: dict[str, FileCode], profile: Profile) -> tuple[bool, str, list[str]]:
    static = [f.path for f in files if profile.is_static(f.path)]
    runtime = [f for f in files if f.path not in static]
    if not files:
        return False, "N/A — the PR changes no files", static
    if not runtime:
        return False, "N/A — no runtime surface: only documentation, CI or tooling configuration changed", static
    with_code = [f for f in runtime if code[f.path].added or code[f.path].removed or f.skipped
                 or (f.status in ("added", "deleted") and f.language != "text")]
    if not with_code:
        return False, (f"N/A — no runtime surface: the {sum(len(f.added) + len(f.removed) for f in runtime)} "
                       "changed lines outside docs/CI are comments, docstrings or whitespace"), static
    return True, f"{len(with_code)} file(s) change runtime code", static


def staleness(repo: Repo, base_tip: str | None, merge_base: str, head: str) -> str | None:
    """A sentence when the PR no longer merges cleanly onto the current base tip, else None."""
    if not base_tip or base_tip == merge_base:
        return None
    status, out = repo.run("merge-tree", "--write-tree", "--name-only", "--no-messages", base_tip, head)
    if status == 0:
        return None
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if status != 1 or len(lines) < 2:
        return f"Whether the PR still merges onto the base tip {base_tip[:12]} could not be checked (git merge-tree failed)."
    conflicts = ", ".join(sorted(set(lines[1:]))[:5])
    return (f"The PR no longer merges cleanly onto the base tip {base_tip[:12]} (conflicts in {conflicts}); "
            "CI results describe a tree that has since moved — ask for a rebase.")


def triage(files: list[ChangedFile], source: Source, profile: Profile, repo: Repo,
           base_tip: str | None) -> Triage:
    code = reduce_to_code(files, source)
    surface, reason, static = runtime_surface(files, code, profile)
    tiers = {}
    for f in files:
        entry = profile.tier_entry(f.path)
        if entry:
            tiers[f.path] = entry.tier
    return Triage(surface, reason, code, static, staleness(repo, base_tip, source.base, source.head), tiers)
