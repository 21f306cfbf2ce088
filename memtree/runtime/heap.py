"""Handing freed heap back to the system.

glibc keeps what a process frees in its malloc arenas (one per thread that
allocates: the front's worker threads, the embed walker's batch and query
threads), and hands it back only from the top of an arena. An actor whose
work comes in pieces of varying size (a recall's candidates, a batch of
chunks, a large capture) so creeps up while holding the same live data.
``malloc_trim(0)`` returns the free pages of every arena; it costs a walk of
the free lists, so an actor calls ``Trimmer.after_work()`` after each piece of
work and a trim runs at most every ``every_s`` seconds, and only when the
resident set grew by ``GROWTH_BYTES`` since the last trim: an idle actor's
ticks (the writer's spool check every 2 s) trimmed pages that the next tick
faulted back in, ~10 % of its idle CPU. Not glibc (musl, macOS): nothing to do.

``settle()``, once an actor has started (the front: after its first tool
call, which imports the tools and the search stack): what exists then (modules,
classes, config, the connection) lives as long as the process, so it is
frozen out of the cyclic collector's view. A full collection otherwise walks
every object (~70k in the front, 10-20 ms) inside whichever request
happened to trigger it: that was a twentieth of hybrid searches' p95 tail at
100k nodes (eval/bench_scale).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import time

TRIM_EVERY_S = 5.0
GROWTH_BYTES = 1 << 20

_trim = None  # libc's malloc_trim, bound on first use; False where there is none


def trim() -> bool:
    """Return the free pages of every malloc arena to the system; False when this libc has no malloc_trim."""
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
            _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
        except (OSError, AttributeError):
            _trim = False
    if _trim is False:
        return False
    _trim(0)
    return True


def settle() -> None:
    """Collect the young generations (start-up's garbage) and freeze the rest
    out of later collections (``gc.freeze``: objects only ever added to)."""
    gc.collect(1)
    gc.freeze()


def resident_bytes() -> int | None:
    """This process's resident set (Linux ``/proc/self/statm``); None where there is none."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


class Trimmer:
    """``after_work()`` trims when ``every_s`` has passed since the last check
    and the resident set grew by ``growth`` since the last trim (always, where
    the resident set cannot be read)."""

    def __init__(self, every_s: float = TRIM_EVERY_S, growth: int = GROWTH_BYTES):
        self.every_s = every_s
        self.growth = growth
        self.last = time.monotonic()
        self.floor = resident_bytes()  # after the last trim
        self.trims = 0

    def after_work(self) -> bool:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return False
        self.last = now
        rss = resident_bytes()
        if rss is not None and self.floor is not None and rss - self.floor < self.growth:
            self.floor = min(self.floor, rss)
            return False
        if not trim():
            return False
        self.trims += 1
        self.floor = resident_bytes()
        return True
