"""The action's time budget (input `time-budget`): past it, the review stops and the action posts
what it has, so that a hung fetch or a pathological PR cannot hold the job until GitHub kills it
(and with it the job summary and report.json)."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

DEFAULT_MINUTES = 10.0
REVIEW_SHARE = 0.8  # of the budget; the rest is kept for posting what the review found


class OutOfTime(BaseException):
    """The budget ran out. A BaseException, so that no `except Exception` inside the review swallows it."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise OutOfTime in the body after `seconds`, wherever it is (a subprocess is killed on the way out).

    SIGALRM interrupts blocking calls on the main thread; where there is none (Windows, or called off
    the main thread) the body runs unbounded, and each GitHub call still keeps its own deadline."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
