"""Waiting on a condition with a deadline, for the operator commands and the
evals that watch a real system come up (the tests have their own
``tests.support.wait_until``, which reports what it last saw)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(pred: Callable[[], T], timeout: float, interval: float = 0.1) -> T | None:
    """``pred()``'s first truthy value within ``timeout`` seconds, or None."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() >= deadline:
            return value or None
        time.sleep(interval)
