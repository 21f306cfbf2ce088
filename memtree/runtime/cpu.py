"""CPU use as a rate, from cpu-time deltas.

psutil's first ``cpu_percent()`` on a process returns 0.0 and every later one
measures since whichever call came last, so ``ctl status``, the idle test and
the idle benchmark all take rates here, from ``cpu_times()`` samples.
psutil is imported only where a process is measured: the supervisor loads
this before it spawns the front. An actor is measured with its running
children (``actor_cpu_seconds``, ``actor_rss``), as ``ctl status`` shows it.
"""

from __future__ import annotations

import time
from collections import deque

WINDOW_S = 1.0  # a status rate covers at least this much recent time when it can


def cpu_seconds(proc) -> float:
    """User + system seconds of a psutil.Process (its own, not its children's)."""
    t = proc.cpu_times()
    return t.user + t.system


def child_pids(pid: int) -> list[int]:
    """The running children its main thread started (Linux: one small /proc
    read; psutil's ``children()`` reads every process on the machine)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except (OSError, ValueError):
        return []


def _of_children(proc, measure) -> float:
    """The sum of ``measure`` over the running children of a psutil.Process."""
    import psutil

    total = 0.0
    for pid in child_pids(proc.pid):
        try:
            total += measure(psutil.Process(pid))
        except psutil.Error:
            pass  # ended meanwhile
    return total


def actor_cpu_seconds(proc) -> float:
    """An actor's CPU seconds, its running children's included: work done by
    a child of its own (the embed walker's compute process) is the actor's."""
    return cpu_seconds(proc) + _of_children(proc, cpu_seconds)


def actor_rss(proc) -> int:
    """An actor's RSS plus its running children's own pages (USS): a forked
    child shares the rest with the actor it was forked from."""
    return proc.memory_info().rss + int(_of_children(proc, lambda c: c.memory_full_info().uss))


class CpuRate:
    """Percent of one core over the last ``WINDOW_S`` or more, from samples of
    (monotonic time, cpu seconds) fed at heartbeats and status requests."""

    def __init__(self, window_s: float = WINDOW_S):
        self.window_s = window_s
        self.samples: deque[tuple[float, float]] = deque(maxlen=32)

    def add(self, now: float, cpu_s: float) -> None:
        if self.samples and now - self.samples[-1][0] < 0.05:
            return  # too close to the last one to matter
        self.samples.append((now, cpu_s))

    def percent(self, now: float, cpu_s: float, lifetime_s: float) -> float:
        """The rate since the newest sample at least ``window_s`` old (else the
        oldest one); with no usable sample, the average over the process lifetime."""
        base = None
        for t, c in self.samples:
            if now - t >= self.window_s:
                base = (t, c)
            elif base is None and now - t >= 0.05:
                base = (t, c)
                break
        self.add(now, cpu_s)
        if base is not None:
            return max(0.0, 100.0 * (cpu_s - base[1]) / (now - base[0]))
        return 100.0 * cpu_s / lifetime_s if lifetime_s > 0 else 0.0


def measure(pids: list[int], seconds: float) -> dict[int, float]:
    """Percent of one core each pid used over the next ``seconds`` (a pid that
    exits meanwhile is left out)."""
    import psutil

    procs, start = {}, {}
    for pid in pids:
        try:
            procs[pid] = psutil.Process(pid)
            start[pid] = cpu_seconds(procs[pid])
        except psutil.Error:
            pass
    t0 = time.monotonic()
    time.sleep(seconds)
    took = time.monotonic() - t0
    out = {}
    for pid, proc in procs.items():
        try:
            out[pid] = 100.0 * (cpu_seconds(proc) - start[pid]) / took
        except psutil.Error:
            pass
    return out
