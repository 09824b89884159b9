"""Evidence: the seed's Step-1b artifacts, collected before detectors run.

A collector is a function `(ReviewInput) -> Artifact` registered with `@collector(name)`. Its
`lines` are what a reviewer reads (an explicit "nothing found" sentence when clean, `SKIPPED: …`
when the axis could not be checked); its `data` is what detectors consume, via
`review.evidence[name]`.
"""
from __future__ import annotations

import time
from functools import lru_cache
from typing import Any, Callable, Iterable

from .. import import_submodules
from ..detectors.base import ReviewInput
from ..model import record


@record
class Artifact:
    name: str
    lines: list[str]
    data: Any = None
    seconds: float = 0.0  # what collecting it cost, for the report's timings


Collector = Callable[[ReviewInput], Artifact]
Searches = Callable[[ReviewInput], Iterable[str]]
COLLECTORS: dict[str, Collector] = {}
SEARCHES: dict[str, Searches] = {}  # per collector that declares them: the words it will look up (see `detector`)


def collector(name: str, searches: Searches | None = None) -> Callable[[Collector], Collector]:
    def register(func: Collector) -> Collector:
        COLLECTORS[name] = func
        if searches is not None:
            SEARCHES[name] = searches
        return func
    return register


def all_collectors() -> dict[str, Collector]:
    """Every collector: each module imported once (registration is by decorator), the package directory
    listed once per process (the search plan and the collection both ask)."""
    _import_modules()
    return COLLECTORS


@lru_cache(maxsize=1)
def _import_modules() -> None:
    import_submodules(__name__, __path__)


def collector_searches() -> list[Searches]:
    """What the collectors that declare their searches will look up, each a function of the review."""
    all_collectors()
    return list(SEARCHES.values())


def collect(review: ReviewInput, notes: list[str]) -> dict[str, Artifact]:
    artifacts: dict[str, Artifact] = {}
    for name, func in sorted(all_collectors().items()):
        start = time.perf_counter()
        try:
            artifacts[name] = func(review)
        except Exception as exc:  # an evidence axis that breaks is reported as not checked
            artifacts[name] = Artifact(name, [f"SKIPPED: {type(exc).__name__}: {exc}"])
            notes.append(f"evidence {name} failed: {type(exc).__name__}: {exc}")
        artifacts[name].seconds = round(time.perf_counter() - start, 4)
    return artifacts
