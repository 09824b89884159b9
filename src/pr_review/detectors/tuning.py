"""Tuning tables: shipped configs must not pin solutions that only exist in one library build."""
from __future__ import annotations

import io
import re
from typing import Iterable

from ..model import Evidence, Finding
from . import detector
from .base import ReviewInput
from ..lang.regex import lazy_re

HIPBLASLT = lazy_re(r"\bhipblaslt\b", re.IGNORECASE)


@detector("hipblaslt-in-tuning-config")
def hipblaslt_in_tuning_config(review: ReviewInput) -> Iterable[Finding]:
    for f in review.changed("config"):
        if not f.path.lower().endswith((".csv", ".yaml", ".yml", ".json")) or review.profile.is_static(f.path):
            continue
        rows = [(n, t) for n, t in f.added if HIPBLASLT.search(t) and not t.lstrip().startswith("#")]
        if not rows:
            continue
        header = _csv_header(review.source.lines(f.path)) if f.path.lower().endswith(".csv") else []
        first, text = rows[0]
        cells = _cells(text) if header else []
        column = next((header[i] for i, c in enumerate(cells) if HIPBLASLT.search(c) and i < len(header)), "")
        yield Finding(
            rule="hipblaslt-in-tuning-config", path=f.path, line=first, end_line=rows[-1][0],
            problem=f"{len(rows)} added tuning row(s) select hipBLASLt"
                    + (f" (column `{column}`)" if column else "") + f", e.g. `{text.strip()[:140]}`.",
            impact="hipBLASLt solution indices are tied to the library build they were tuned on; "
                   "on another ROCm/hipBLASLt version the index names a different or missing kernel.",
            action="Author must drop the hipBLASLt rows from the shipped table or keep them in a "
                   "local, build-pinned tuning file.",
            trigger=f"row at line {first} loaded with a hipBLASLt build other than the tuning one",
            evidence=[Evidence(f.path, n, t.strip()[:140]) for n, t in rows[:5]],
        )


def _csv_header(lines: list[str]) -> list[str]:
    return [c.strip() for c in _cells(lines[0])] if lines else []


def _cells(line: str) -> list[str]:
    import csv  # here: a review reads CSV only from a table that pins hipBLASLt

    return next(csv.reader(io.StringIO(line)))
