"""Detectors: small functions that decide catalog rules from the code.

A detector names the rule ids it decides and yields `Finding`s; the engine fills in code,
title and default severity from the catalog, applies the 🔴 gate and fingerprints.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Iterable

from .. import import_submodules
from ..model import Finding, record
from .base import ReviewInput

DetectorFunc = Callable[[ReviewInput], Iterable[Finding]]


@record(frozen=True)
class Detector:
    """A registered detector: its name, the rules it decides, its function, and what of the head tree's
    Python files it will search for (`searches`: names read from the diff and the trees, without a
    search; the review looks for every detector's names in one search, before any of them runs)."""

    name: str
    rules: tuple[str, ...]
    func: DetectorFunc
    searches: Callable[[ReviewInput], Iterable[str]] | None = None


REGISTRY: list[Detector] = []


def detector(*rule_ids: str, searches: Callable[[ReviewInput], Iterable[str]] | None = None,
             ) -> Callable[[DetectorFunc], DetectorFunc]:
    def register(func: DetectorFunc) -> DetectorFunc:
        REGISTRY.append(Detector(func.__name__.replace("_", "-"), tuple(rule_ids), func, searches))
        return func
    return register


def all_detectors() -> list[Detector]:
    """Every detector: each module imported once (registration is by decorator), the package directory
    listed once per process rather than at every call (a review asks three times)."""
    _import_modules()
    return REGISTRY


@lru_cache(maxsize=1)
def _import_modules() -> None:
    import_submodules(__name__, __path__, skip=("base",))


__all__ = ["Detector", "ReviewInput", "all_detectors", "detector"]
