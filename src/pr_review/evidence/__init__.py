"""Evidence: the seed's Step-1b artifacts, collected before detectors run.

A collector is a function `(ReviewInput) -> Artifact` registered with `@collector(name)`. Its
`lines` are what a reviewer reads (an explicit "nothing found" sentence when clean, `SKIPPED: …`
when the axis could not be checked); its `data` is what detectors consume, via
`review.evidence[name]`.
"""
from __future__ import annotations

import importlib
import pkgutil
import time
from typing import Any, Callable

from ..detectors.base import ReviewInput
from ..model import record


@record
class Artifact:
    name: str
    lines: list[str]
    data: Any = None
    seconds: float = 0.0  # what collecting it cost, for the report's timings


Collector = Callable[[ReviewInput], Artifact]
COLLECTORS: dict[str, Collector] = {}


def collector(name: str) -> Callable[[Collector], Collector]:
    def register(func: Collector) -> Collector:
        COLLECTORS[name] = func
        return func
    return register


def collect(review: ReviewInput, notes: list[str]) -> dict[str, Artifact]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    artifacts: dict[str, Artifact] = {}
    for name, func in sorted(COLLECTORS.items()):
        start = time.perf_counter()
        try:
            artifacts[name] = func(review)
        except Exception as exc:  # an evidence axis that breaks is reported as not checked
            artifacts[name] = Artifact(name, [f"SKIPPED: {type(exc).__name__}: {exc}"])
            notes.append(f"evidence {name} failed: {type(exc).__name__}: {exc}")
        artifacts[name].seconds = round(time.perf_counter() - start, 4)
    return artifacts
