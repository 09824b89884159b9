"""Repository configuration `.github/pr-review.yml`, read from the base side of the review.

A PR cannot switch off the rules that review it: the file is taken from the merge base, and a
PR that edits it only gets a note. A bad key produces a message naming it; the rest still applies.
"""
from __future__ import annotations

import fnmatch

from .model import field, record
from .rulesdata import load_untrusted_yaml

CONFIG_PATH = ".github/pr-review.yml"
SEVERITIES = ("high", "medium", "low")
KNOWN_KEYS = {"profile", "disable", "severity", "exclude", "rule_dirs", "preview"}


@record(frozen=True)
class RepoConfig:
    """The repository's .github/pr-review.yml as the review applies it, with a message per bad key."""

    profile: str | None = None
    disable: frozenset[str] = frozenset()
    severity: dict[str, str] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    rule_dirs: tuple[str, ...] = ()
    preview: bool = False  # the repository opts into annotations from rules not yet measured stable
    messages: tuple[str, ...] = ()

    def excluded(self, path: str) -> bool:
        return any(fnmatch.fnmatch(path, pattern) for pattern in self.exclude)


def parse_config(text: str | None, source_name: str, known_rules: set[str], profiles: set[str]) -> RepoConfig:
    if text is None:
        return RepoConfig()
    import yaml  # here: most repositories have no config file, and a review without one reads no YAML

    messages: list[str] = []
    try:
        data = load_untrusted_yaml(text) or {}
    except yaml.YAMLError as exc:
        return RepoConfig(messages=(f"{source_name}: cannot be read as YAML ({exc}); using defaults",))
    if not isinstance(data, dict):
        return RepoConfig(messages=(f"{source_name}: top level must be a mapping; using defaults",))
    for key in sorted(str(k) for k in set(data) - KNOWN_KEYS):
        messages.append(f"{source_name}: unknown key '{key}' ignored (known: {', '.join(sorted(KNOWN_KEYS))})")

    profile = data.get("profile")
    if profile is not None and (not isinstance(profile, str) or profile not in profiles):
        shown = f"'{profile}'" if isinstance(profile, (str, int, float)) else f"a {type(profile).__name__}"
        messages.append(f"{source_name}: profile: {shown} is not one of {', '.join(sorted(profiles))}; auto-detecting")
        profile = None

    def id_list(key: str) -> list[str]:
        value = data.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            messages.append(f"{source_name}: {key}: must be a list of strings; ignored")
            return []
        return value

    disable = []
    for rule in id_list("disable"):
        if rule in known_rules:
            disable.append(rule)
        else:
            messages.append(f"{source_name}: disable: unknown rule id '{rule}' ignored")
    severity: dict[str, str] = {}
    raw_severity = data.get("severity") or {}
    if not isinstance(raw_severity, dict):
        messages.append(f"{source_name}: severity: must map rule ids to high/medium/low; ignored")
        raw_severity = {}
    for rule, level in raw_severity.items():
        if rule not in known_rules:
            messages.append(f"{source_name}: severity.{rule}: unknown rule id; ignored")
        elif level not in SEVERITIES:
            messages.append(f"{source_name}: severity.{rule}: '{level}' is not one of {', '.join(SEVERITIES)}; ignored")
        else:
            severity[rule] = level
    preview = data.get("preview", False)
    if not isinstance(preview, bool):
        messages.append(f"{source_name}: preview: must be true or false; ignored")
        preview = False
    return RepoConfig(
        preview=preview, profile=profile, disable=frozenset(disable), severity=severity,
        exclude=tuple(id_list("exclude")), rule_dirs=tuple(id_list("rule_dirs")), messages=tuple(messages),
    )
