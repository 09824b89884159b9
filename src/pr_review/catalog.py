"""The rule catalog: one YAML file per concept under rules/catalog/<group>/<id>.yml."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .model import field, record, replace
from .rulesdata import DataError, load_validated, rules_root, yaml_files


@record(frozen=True)
class Rule:
    """One concept of the catalog (rules/catalog/<group>/<id>.yml)."""

    id: str
    group: str
    codes: dict[str, str]
    severity: str
    title: str
    summary: str
    impact: str
    action: str
    trigger: str
    fp_check: str
    detector: str
    stage: str = "preview"
    measurement: dict[str, Any] | None = None
    examples: tuple[dict[str, str], ...] = ()
    languages: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    subtypes: tuple[str, ...] = ()
    refines: str | None = None  # the seed concept whose sub-types this rule decides, measured apart
    source: str = ""
    zh: dict[str, str] = field(default_factory=dict)  # title, impact, action in Simplified Chinese

    def code_for(self, profile: str, fallback: str | None = None) -> str:
        return self.codes.get(profile) or (self.codes.get(fallback) if fallback else None) or self.id

    def annotates_in(self, profile: str) -> bool:
        """Only a rule that earned `stable` by measurement on this profile's kind of repository annotates
        and moves the verdict there."""
        if self.stage != "stable":
            return False
        measured_on = (self.measurement or {}).get("profiles")
        return not measured_on or profile in measured_on

    def applies_to(self, profile: str) -> bool:
        return not self.profiles or profile in self.profiles


@record(frozen=True)
class Family:
    """A derivation family of rules/families.yml: when it fires and the rules it derives."""

    id: str
    description: str
    when: dict[str, Any]
    rules: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()


@record(eq=False)  # never compared whole: a review's own, by identity
class Catalog:
    """The rules and families a review uses: the shipped ones plus a repository's own."""

    rules: dict[str, Rule]
    families: dict[str, Family] = field(default_factory=dict)

    def rules_of_family(self, family: str) -> list[str]:
        listed = [r.id for r in self.rules.values() if family in r.families]
        extra = list(self.families[family].rules) if family in self.families else []
        return sorted(set(listed) | set(extra))


def _rule_from(data: dict[str, Any], source: Path) -> Rule:
    return Rule(
        id=data["id"], group=data["group"], codes=dict(data.get("codes") or {}),
        severity=data["severity"], title=data["title"], summary=data["summary"],
        impact=data["impact"], action=data["action"], trigger=data["trigger"],
        fp_check=data["fp_check"], detector=data["detector"],
        stage=data.get("stage", "preview"), measurement=data.get("measurement"),
        examples=tuple(data.get("examples") or ()), languages=tuple(data.get("languages") or ()),
        families=tuple(data.get("families") or ()), profiles=tuple(data.get("profiles") or ()),
        subtypes=tuple(data.get("subtypes") or ()), refines=data.get("refines"), source=str(source),
        zh=dict(data.get("zh") or {}),
    )


def load_rules(directory: Path, validate: bool = True) -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    problems: list[str] = []
    for path in yaml_files(directory):
        try:
            data = load_validated(path, "rule", validate)
        except DataError as exc:
            problems.append(str(exc))
            continue
        if path.stem != data["id"]:
            problems.append(f"{path}: id: '{data['id']}' does not match the file name")
        elif data["id"] in rules:
            problems.append(f"{path}: id: '{data['id']}' is also defined in {rules[data['id']].source}")
        else:
            rules[data["id"]] = _rule_from(data, path)
    if problems:
        raise DataError("\n".join(problems))
    return rules


def load_families(path: Path, validate: bool = True) -> dict[str, Family]:
    if not path.exists():
        return {}
    data = load_validated(path, "families", validate)
    families: dict[str, Family] = {}
    for i, item in enumerate(data["families"]):
        # compiled here only to validate (the shipped file is validated by the tests): derivation
        # compiles the few a review's conditions reach, and ~120 compiles cost a small review ~0.03 s
        for key, pattern in _regexes(item["when"]) if validate else ():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise DataError(f"{path}: families.{i}.when.{key}: bad regex {pattern!r}: {exc}") from exc
        families[item["id"]] = Family(
            id=item["id"], description=item["description"], when=item["when"],
            rules=tuple(item.get("rules") or ()), profiles=tuple(item.get("profiles") or ()),
        )
    return families


def family_patterns(condition: dict[str, Any]) -> list[tuple[str, int]]:
    """(pattern, flags) of every regular expression of a family condition, as derivation compiles them."""
    return [(pattern, re.IGNORECASE if key == "title" else 0) for key, pattern in _regexes(condition)]


def _regexes(condition: dict[str, Any]):
    for key, value in condition.items():
        if key == "any":
            for sub in value:
                yield from _regexes(sub)
        elif isinstance(value, dict):  # added_in, changed_in_def: a pattern per key
            yield from _regexes(value)
        elif isinstance(value, str):
            yield key, value
        elif isinstance(value, list):
            for v in value:
                yield key, v


def load_catalog(extra_dirs: tuple[Path, ...] = (), validate_shipped: bool = False) -> Catalog:
    """The shipped catalog (schema-checked by the data tests, so only when asked here) plus rules
    from `extra_dirs`, which are always validated."""
    root = rules_root()
    rules = load_rules(root / "catalog", validate_shipped)
    for extra in extra_dirs:
        for rule_id, rule in load_rules(extra).items():
            rules[rule_id] = rule  # a repository's own rule of the same id replaces ours
    problems = [f"{r.source}: refines: '{r.refines}' is not a rule" for r in rules.values()
                if r.refines and r.refines not in rules]
    if problems:
        raise DataError("\n".join(problems))
    # a rule split from a concept is shown under the concept's code (B6 …) unless it has its own
    rules = {rule_id: replace(r, codes=rules[r.refines].codes) if r.refines and not r.codes else r
             for rule_id, r in rules.items()}
    catalog = Catalog(rules=rules, families=load_families(root / "families.yml", validate_shipped))
    unknown = sorted({f for r in rules.values() for f in r.families} - set(catalog.families))
    if catalog.families and unknown:
        raise DataError(f"{root / 'families.yml'}: families named by rules but not defined: {', '.join(unknown)}")
    return catalog
