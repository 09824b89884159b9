"""Triage: does the PR change runtime surface, does it still apply to the base tip, which files are backbone."""
from __future__ import annotations

import re
from collections import Counter

from .git import Repo
from .git.diff import ChangedFile
from .lang.code_lines import code_lines
from .lang.defs import Def, defs_around
from .profiles import Profile
from .source import Source
from .model import field, record

Line = tuple[int, str]


@record
class FileCode:
    """The changed lines of one file that are code (comments, docstrings, blank lines removed), and for
    a Python file the defs around each (outermost first), read from the tree the review parsed."""

    added: list[Line] = field(default_factory=list)
    removed: list[Line] = field(default_factory=list)
    added_defs: dict[int, tuple[Def, ...]] = field(default_factory=dict)
    removed_defs: dict[int, tuple[Def, ...]] = field(default_factory=dict)


@record
class Relevance:
    """The vLLM seed's ROCm relevance gate: fully / partially / not ROCm-related."""

    level: str  # "fully" | "partially" | "not"
    reason: str
    exposed: list[str]  # files that are ROCm-exposed
    light_groups: list[str]


@record
class Triage:
    runtime_surface: bool
    runtime_reason: str
    code: dict[str, FileCode]
    static_paths: list[str]
    stale: Staleness | None
    tiers: dict[str, int]  # path → tier from the profile table (1/2/3 only when listed)
    relevance: Relevance | None = None


def reduce_to_code(files: list[ChangedFile], source: Source) -> dict[str, FileCode]:
    """Per file, the added/removed lines that are code; a -/+ pair of identical code cancels out."""
    out: dict[str, FileCode] = {}
    for f in files:
        if f.skipped:
            out[f.path] = FileCode()
            continue
        head_code = _code_map(source, f.path, "head", f.language, {n for n, _ in f.added}) if f.added else {}
        base_code = _code_map(source, f.old_path or f.path, "base", f.language, {n for n, _ in f.removed}) if f.removed else {}
        # Unparsable text keeps every line: better to over-report code than to hide it.
        added = [(n, t, head_code[n] if head_code is not None else t) for n, t in f.added
                 if head_code is None or n in head_code]
        removed = [(n, t, base_code[n] if base_code is not None else t) for n, t in f.removed
                   if base_code is None or n in base_code]
        code = out[f.path] = FileCode(_uncancelled(added, removed), _uncancelled(removed, added))
        if f.language == "python":
            code.added_defs = _defs(source, f.path, "head", code.added)
            code.removed_defs = _defs(source, f.old_path or f.path, "base", code.removed)
    return out


def _defs(source: Source, path: str, side, lines: list[Line]) -> dict[int, tuple[Def, ...]]:
    tree = source.python(path, side) if lines else None
    return defs_around(tree, [n for n, _ in lines]) if tree is not None else {}


def _uncancelled(lines: list[tuple[int, str, str]], others: list[tuple[int, str, str]]) -> list[Line]:
    """`lines` minus those whose code text (whitespace-insensitive) also appears on the other side."""
    pending = Counter(_squash(code) for _, _, code in others)
    kept = []
    for n, text, code in lines:
        if pending[_squash(code)] > 0:
            pending[_squash(code)] -= 1
        else:
            kept.append((n, text))
    return kept


def _squash(text: str) -> str:
    return "".join(text.split())  # re.sub(r"\s+", "", text): str.split drops the same characters


def _code_map(source: Source, path: str, side, language: str, wanted: set[int]) -> dict[int, str] | None:
    """Code text of the `wanted` lines (others may be missing), or None when the file cannot be parsed."""
    text = source.text(path, side)
    if text is None:
        return None
    return code_lines(text, language, source.python(path, side) if language == "python" else None, wanted)


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


@record
class Staleness:
    message: str
    conflicts: list[str]  # paths that no longer merge; empty when the check itself failed


def staleness(repo: Repo, base_tip: str | None, merge_base: str, head: str) -> Staleness | None:
    """Set when the PR no longer merges cleanly onto the current base tip, else None."""
    if not base_tip or base_tip == merge_base:
        return None
    status, out = repo.run("merge-tree", "--write-tree", "--name-only", "--no-messages", base_tip, head)
    if status == 0:
        return None
    lines = out.decode("utf-8", "surrogateescape").splitlines()
    if status != 1 or len(lines) < 2:
        return Staleness(f"Whether the PR still merges onto the base tip {base_tip[:12]} could not be "
                         "checked (git merge-tree failed).", [])
    conflicts = sorted(set(lines[1:]))
    return Staleness(f"The PR no longer merges cleanly onto the base tip {base_tip[:12]} (conflicts in "
                     f"{', '.join(conflicts[:5])}); CI results describe a tree that has since moved — "
                     "ask for a rebase.", conflicts)


def rocm_relevance(files: list[ChangedFile], code: dict[str, FileCode], profile: Profile,
                   title: str, body: str) -> Relevance | None:
    gate = profile.data.get("relevance")
    if not gate:
        return None
    markers = [re.compile(m) for m in gate.get("markers") or []]
    paths = [re.compile(p) for p in gate.get("paths") or []]
    light = list(gate.get("light_rules_groups") or [])

    def marked(text: str) -> str | None:
        return next((m.group(0) for pattern in markers if (m := pattern.search(text))), None)

    text_marker = marked(f"{title}\n{body}")
    runtime = [f for f in files if not profile.is_static(f.path)]
    exposed = []
    for f in runtime:
        if any(p.search(f.path) for p in paths) or marked(f.path) \
                or any(marked(t) for _, t in code.get(f.path, FileCode()).added):
            exposed.append(f.path)
    if not exposed and not text_marker:
        return Relevance("not", "no ROCm marker in the title, description, paths or added code", [], light)
    if exposed and (len(exposed) == len(runtime) or text_marker):
        why = f"the description mentions '{text_marker}'" if text_marker else "every changed runtime file is ROCm code"
        return Relevance("fully", f"{why}; ROCm-exposed: {', '.join(exposed[:6])}", exposed, light)
    if exposed:
        return Relevance("partially", f"shared change; ROCm-exposed files: {', '.join(exposed[:6])} — "
                         "check the other backends' paths through them", exposed, light)
    return Relevance("partially", f"the description mentions '{text_marker}' but no changed file is ROCm code",
                     [], light)


def triage(files: list[ChangedFile], source: Source, profile: Profile, repo: Repo,
           base_tip: str | None, title: str = "", body: str = "") -> Triage:
    code = reduce_to_code(files, source)
    surface, reason, static = runtime_surface(files, code, profile)
    tiers = {}
    for f in files:
        entry = profile.tier_entry(f.path)
        if entry:
            tiers[f.path] = entry.tier
    return Triage(surface, reason, code, static, staleness(repo, base_tip, source.base, source.head), tiers,
                  rocm_relevance(files, code, profile, title, body))
