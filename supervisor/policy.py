"""Restart policy as pure functions of time: intensity window and backoff.

No clocks are read here; callers pass ``now`` (time.monotonic() in the
supervisor, a plain number in tests) and a random source for the jitter.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable


class RestartWindow:
    """OTP's restart intensity: more than ``max_restarts`` within ``period`` s is too many."""

    def __init__(self, max_restarts: int, period: float):
        self.max_restarts = max_restarts
        self.period = period
        self.times: deque[float] = deque()

    def add(self, now: float) -> bool:
        """Record a restart at ``now``; False when the intensity is exceeded (go FATAL)."""
        self.times.append(now)
        while self.times and self.times[0] <= now - self.period:
            self.times.popleft()
        return len(self.times) <= self.max_restarts

    def count(self, now: float) -> int:
        return sum(1 for t in self.times if t > now - self.period)

    def reset(self) -> None:
        self.times.clear()


class Backoff:
    """Exponential delay between restarts, capped and jittered, reset once stable.

    The n-th consecutive delay is ``initial * 2**n`` capped at ``maximum``, then
    scaled by a jitter factor in [1 - jitter, 1] so restarts of several children
    (or several supervisors) do not fall in step.
    """

    def __init__(
        self,
        initial: float,
        maximum: float,
        stable_after: float,
        jitter: float = 0.25,
        rand: Callable[[], float] = random.random,
    ):
        self.initial = initial
        self.maximum = maximum
        self.stable_after = stable_after
        self.jitter = jitter
        self.rand = rand
        self.attempt = 0

    def next_delay(self) -> float:
        base = min(self.maximum, self.initial * (2 ** min(self.attempt, 32)))
        self.attempt += 1
        return base * (1 - self.jitter * self.rand())

    def on_running(self, running_since: float, now: float) -> bool:
        """Reset after ``stable_after`` s RUNNING; True when it reset just now."""
        if self.attempt and now - running_since >= self.stable_after:
            self.attempt = 0
            return True
        return False

    def reset(self) -> None:
        self.attempt = 0
