"""Project profiles: how a repository is recognised and what its reviewers know about it."""
from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path
from typing import Any

from .lang.regex import compile_shipped
from .model import field, record
from .rulesdata import DataError, load_validated, rules_root, yaml_files

PROFILE_NAMES = ("aiter", "atom", "vllm", "generic")
DETECTION_ORDER = ("aiter", "atom", "vllm")  # generic is the fallback


@record(frozen=True)
class TierEntry:
    """A row of a profile's core-file table: a path (or path regex) and its tier."""

    path: str
    tier: int
    regex: bool = False
    blast_radius: str = ""
    failure_mode: str = ""
    special: str = ""
    high_visibility: bool = False

    def matches(self, path: str) -> bool:
        return bool(compile_shipped(self.path).search(path)) if self.regex else path == self.path


@record(frozen=True)
class Profile:
    """A project profile (rules/profiles/<name>.yml), read through properties."""

    name: str
    data: dict[str, Any] = field(hash=False, compare=False)

    @property
    def markers(self) -> list[str]:
        return list(self.data.get("markers") or [])

    @property
    def code_fallback(self) -> str | None:
        return self.data.get("code_fallback")

    @cached_property
    def tiers(self) -> list[TierEntry]:
        return [TierEntry(**{k: v for k, v in t.items() if k != "commits"}) for t in self.data.get("tiers") or []]

    @cached_property
    def _static(self) -> list[re.Pattern[str]]:
        return [compile_shipped(p) for p in (self.data.get("runtime") or {}).get("static") or []]

    @cached_property
    def _test(self) -> list[re.Pattern[str]]:
        return [compile_shipped(p) for p in (self.data.get("runtime") or {}).get("test") or []]

    def is_static(self, path: str) -> bool:
        return any(p.search(path) for p in self._static)

    def is_test(self, path: str) -> bool:
        return any(p.search(path) for p in self._test)

    def tier_entry(self, path: str) -> TierEntry | None:
        """The table row for `path`: an exact row first, else the first pattern row that matches."""
        exact = next((t for t in self.tiers if not t.regex and t.matches(path)), None)
        return exact or next((t for t in self.tiers if t.regex and t.matches(path)), None)

    @cached_property
    def _ci_tests(self) -> list[re.Pattern[str]]:
        return [compile_shipped(p) for p in self.data.get("test_dirs") or []]

    def ci_runs(self, path: str) -> bool:
        """Whether the project's CI runs tests at `path` (profile `test_dirs` are path regexes)."""
        return any(p.search(path) for p in self._ci_tests)

    @property
    def env_prefixes(self) -> list[str]:
        return list((self.data.get("env") or {}).get("prefixes") or [])

    @property
    def env_registry(self) -> list[str]:
        return list((self.data.get("env") or {}).get("registry") or [])


def load_profiles(directory: Path | None = None) -> dict[str, Profile]:
    """Profiles from `directory`, validated against the schema; by default the shipped profiles,
    which the data tests validate instead of every review."""
    validate = directory is not None
    directory = directory or rules_root() / "profiles"
    profiles: dict[str, Profile] = {}
    for path in yaml_files(directory, recursive=False):
        data = load_validated(path, "profile", validate)
        if data["name"] != path.stem:
            raise DataError(f"{path}: name: '{data['name']}' does not match the file name")
        for i, tier in enumerate((data.get("tiers") or []) if validate else ()):  # shipped: the data tests
            if tier.get("regex"):
                try:
                    re.compile(tier["path"])
                except re.error as exc:
                    raise DataError(f"{path}: tiers.{i}.path: bad regex: {exc}") from exc
        profiles[data["name"]] = Profile(name=data["name"], data=data)
    if "generic" not in profiles:
        raise DataError(f"{directory}: the generic profile is missing")
    return profiles


def detect_profile(profiles: dict[str, Profile], exists) -> str:
    """The first profile whose marker path exists (`exists(path)` asks the base tree of the review)."""
    for name in DETECTION_ORDER:
        profile = profiles.get(name)
        if profile and any(exists(marker.rstrip("/")) for marker in profile.markers):
            return name
    return "generic"
