"""A one-line progress bar for corpus runs (`pr-review stats`, scripts/benchmark.py)."""
from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class Progress:
    """Redrawn in place on `stream` as items finish; silent unless `stream` is a terminal, so logs
    and pipes get only the results."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() and total > 0
        self.done = self.failed = 0

    def advance(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        if not self.enabled:
            return
        filled = WIDTH * self.done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total}"
                          + (f", {self.failed} failed" if self.failed else ""))
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()
