"""Derivation: which families the diff fires, and so which rules a reviewer must adjudicate.

Conditions are data (rules/families.yml and the profiles' PR-type tables); each fired family
keeps the exact path/line/title that fired it, so the checklist can say why a rule is on it.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import cached_property
from itertools import accumulate, compress, count, islice
from typing import Any

from .catalog import Catalog
from .git.diff import ChangedFile
from .lang.defs import Def
from .lang.regex import compile_shipped, required_substrings
from .model import ChecklistItem, field, record
from .profiles import Profile
from .triage import FileCode


@record
class Facts:
    """What conditions are evaluated over: paths, code lines and the title."""

    paths: list[str]
    new_paths: list[str]
    changed_paths: list[str]  # modified (not new) files with code changes
    added: list[tuple[str, int, str]]
    deleted: list[tuple[str, int, str]]
    title: str
    # changed code lines inside a def, added ones first: (path, line, text, deleted?, the defs around
    # it outermost first), as triage read them from the tree it parsed
    in_defs: list[tuple[str, int, str, bool, tuple[Def, ...]]] = field(default_factory=list)

    @classmethod
    def build(cls, files: list[ChangedFile], code: dict[str, FileCode], title: str) -> "Facts":
        return cls(
            paths=[f.path for f in files],
            new_paths=[f.path for f in files if f.is_new],
            changed_paths=[f.path for f in files if not f.is_new and (code[f.path].added or code[f.path].removed)],
            added=[(f.path, n, t) for f in files for n, t in code[f.path].added],
            deleted=[(f.path, n, t) for f in files for n, t in code[f.path].removed],
            title=title,
            in_defs=[(f.path, n, t, side == "removed", defs) for side in ("added", "removed")
                     for f in files for n, t in getattr(code[f.path], side)
                     if (defs := getattr(code[f.path], f"{side}_defs").get(n))],
        )

    @cached_property
    def searched_added(self) -> Lines:
        return Lines(self.added)

    @cached_property
    def searched_deleted(self) -> Lines:
        return Lines(self.deleted)


def _patterns(value: str | list[str], flags: int = 0) -> list[re.Pattern[str]]:
    return [compile_shipped(v, flags) for v in ([value] if isinstance(value, str) else value)]


def _first(patterns: list[re.Pattern[str]], items: list[str]) -> str | None:
    return next((item for item in items for p in patterns if p.search(item)), None)


def _first_line(value, searched: Lines, path_value=None) -> str | None:
    """The first line (of those on a path a path pattern finds) that a pattern finds, as evidence.
    Each pattern scans the line texts in C (map/compress) only up to the best line found so far:
    the same line as asking every pattern of every line in turn, at a tenth of the cost on a
    PR of thousands of added lines. The line patterns are compiled only when there are lines to
    search: a one-file PR reaches few `added_in` paths, and a compile costs more than its search."""
    path_patterns = _patterns(path_value) if path_value is not None and searched.lines else None
    if path_patterns:
        on_path = {path for path in dict.fromkeys(path for path, _, _ in searched.lines)
                   if any(p.search(path) for p in path_patterns)}
        searched = Lines([line for line in searched.lines if line[0] in on_path])
    if not searched.lines:
        return None
    texts = searched.texts
    # Most patterns find nothing, and `re` tries each at every position of every line: a pattern whose
    # matches all hold one of a few strings (kept with its compiled form) is searched only in the
    # lines holding one.
    best: int | None = None
    for p in _patterns(value):
        held = required_substrings(p.pattern)
        if held is None:
            found = next(compress(count(), map(p.search, texts if best is None else islice(texts, best))), None)
        else:
            found = next((i for i in searched.holding(held, best) if p.search(texts[i])), None)
        if found is not None:
            best = found
    if best is None:
        return None
    path, n, text = searched.lines[best]
    return f"{path}:{n}: {text.strip()[:120]}"


class Lines:
    """Changed lines as derivation searches them, (path, line, text) each: built once per side of a
    review, not once per condition, and joined into one text on the first search that narrows by
    strings, to find in C the lines holding one."""

    def __init__(self, lines: list[tuple[str, int, str]]) -> None:
        self.lines = lines
        self.texts = [text for _, _, text in lines]

    @cached_property
    def _joined(self) -> tuple[str, list[int]]:
        """The texts joined by newlines, and where each starts in the joined text."""
        return "\n".join(self.texts), list(accumulate((len(t) + 1 for t in self.texts[:-1]), initial=0))

    def holding(self, strings: tuple[str, ...], before: int | None) -> list[int]:
        """In order, the lines (before line `before`) that hold one of `strings`."""
        text, starts = self._joined
        end = len(text) if before is None else starts[before]
        lines: set[int] = set()
        for string in strings:
            at = text.find(string, 0, end)
            while at >= 0:
                line = bisect_right(starts, at) - 1
                lines.add(line)
                at = text.find(string, starts[line + 1], end) if line + 1 < len(starts) else -1
        return sorted(lines)


def _in_def(value: dict[str, Any], lines: list[tuple[str, int, str, bool, tuple[Def, ...]]]) -> str | None:
    """The first changed line (on `path`, when given) inside a def whose name, a decorator or a way
    the module names it (`gen_fake=`, `register_fake(`) one of the value's patterns finds. With `line`,
    only an added line whose text a `line` pattern finds counts: what the def now does, not what it stopped doing."""
    asks = [(key, _patterns(value[key])) for key in ("name", "decorator", "named_by") if key in value]
    path_patterns = _patterns(value["path"]) if "path" in value else None
    if "line" in value:
        line_patterns = _patterns(value["line"])
        lines = [line for line in lines if not line[3] and any(p.search(line[2]) for p in line_patterns)]

    def matches(d: Def) -> bool:
        return any(p.search(item) for key, pats in asks for p in pats
                   for item in ((d.name,) if key == "name" else d.decorators if key == "decorator" else d.named_by))

    for path, n, text, deleted, defs in lines:
        if (path_patterns is None or any(p.search(path) for p in path_patterns)) and any(map(matches, defs)):
            return f"{'deleted ' if deleted else ''}{path}:{n}: {text.strip()[:120]}"
    return None


def evaluate(condition: dict[str, Any], facts: Facts) -> list[str] | None:
    """The evidence strings when every key of `condition` holds, else None."""
    evidence: list[str] = []
    for key, value in condition.items():
        hit: str | None
        if key == "path":
            hit = _first(_patterns(value), facts.paths)
        elif key == "all_paths":
            pats = _patterns(value)
            hit = "all paths" if facts.paths and all(any(p.search(x) for p in pats) for x in facts.paths) else None
        elif key == "new_path":
            hit = _first(_patterns(value), facts.new_paths)
            hit = f"new file {hit}" if hit else None
        elif key == "changed_path":
            hit = _first(_patterns(value), facts.changed_paths)
        elif key == "added":
            hit = _first_line(value, facts.searched_added)
        elif key == "deleted":
            hit = _first_line(value, facts.searched_deleted)
            hit = f"deleted {hit}" if hit else None
        elif key == "added_in":
            hit = _first_line(value["line"], facts.searched_added, value["path"])
        elif key == "changed_in_def":
            hit = _in_def(value, facts.in_defs)
        elif key == "title":
            hit = f"title: {facts.title}" if _first(_patterns(value, re.IGNORECASE), [facts.title]) else None
        elif key == "not_added":
            hit = None if _first_line(value, facts.searched_added) else "no such added line"
        elif key == "top_dirs_at_least":
            tops = sorted({p.split("/", 1)[0] for p in facts.paths})
            hit = f"{len(tops)} top-level paths: {', '.join(tops[:6])}" if len(tops) >= value else None
        elif key == "any":
            hit = next((e[0] for sub in value if (e := evaluate(sub, facts))), None)
        else:
            raise ValueError(f"unknown condition key {key!r}")
        if hit is None:
            return None
        evidence.append(hit)
    return evidence


def derive(facts: Facts, catalog: Catalog, profile: Profile, code_fallback: str | None,
           runtime_surface: bool, light_groups: list[str] | None = None,
           ) -> tuple[dict[str, list[str]], list[ChecklistItem]]:
    """Fired families (id → evidence) and the checklist of the rules they call for."""
    fired: dict[str, list[str]] = {}
    family_rules: dict[str, list[str]] = {}
    for family in catalog.families.values():
        if family.profiles and profile.name not in family.profiles:
            continue
        evidence = evaluate(family.when, facts)
        if evidence is not None:
            fired[family.id] = evidence
            family_rules[family.id] = catalog.rules_of_family(family.id)
    for pr_type in profile.data.get("pr_types") or []:
        evidence = evaluate(pr_type["when"], facts)
        if evidence is not None:
            key = f"pr-type:{pr_type['id']}"
            fired[key] = evidence
            family_rules[key] = list(pr_type["rules"])
    if not runtime_surface or light_groups is not None:
        # Docs/CI/comment-only PRs, and PRs outside the profile's relevance gate: only the rules
        # that look at the description or housekeeping stay.
        keep = set(light_groups or ()) | {"housekeeping", "description", "process"}
        family_rules = {k: [r for r in v if r in catalog.rules and catalog.rules[r].group in keep]
                        for k, v in family_rules.items()}
    items: dict[str, ChecklistItem] = {}
    for family, rule_ids in family_rules.items():
        for rule_id in rule_ids:
            rule = catalog.rules.get(rule_id)
            if rule is None or not rule.applies_to(profile.name):
                continue
            item = items.setdefault(rule_id, ChecklistItem(
                rule=rule_id, code=rule.code_for(profile.name, code_fallback), title=rule.title,
                families=[], derived_by=[]))
            item.families.append(family)
            for e in fired[family]:
                if e not in item.derived_by:
                    item.derived_by.append(e)
    return fired, sorted(items.values(), key=lambda i: (catalog.rules[i.rule].group, i.rule))
