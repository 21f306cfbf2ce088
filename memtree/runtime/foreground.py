"""The writer's foreground mark: background work steps aside while the
writer answers requests.

The embed walker's idle-class child (actors/walkers/embed_compute.py) gives
up a core the moment the writer wants it, but not the core's shared caches
and bandwidth, and the scheduler still pays it a tick now and then: a hook
capture's p95 during a 100k backlog drain was 1.39-1.53x the same minutes
with the walker stopped (eval/bench_scale --embed-backlog). So the writer
marks each batch of ordinary requests (not the heavy ones, such as the
walker's own PutVectors) in a small file beside the store, and the embed
walker waits while a mark is up: its child between two slices of a batch,
its own thread before it reads the next batch and before each PutVectors.

The file (``foreground.bin``, 8 bytes) holds the CLOCK_MONOTONIC time in ns
at which the current batch began, or minus the time it ended; only the
writer writes it, in place (mmap), so a reader never sees a torn value of an
aligned word. A waiter also waits LINGER_S past a batch's end (its replies
still cross ZeroMQ's I/O threads and wake their callers), gives up after
WAIT_MAX_S (a steady stream of captures slows a drain, never stops it), and
ignores a mark up for longer than STALE_S (a writer killed mid-batch).
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import struct
import time

log = logging.getLogger(__name__)

FILE_NAME = "foreground.bin"
STALE_S = 1.0
WAIT_MAX_S = 0.05
LINGER_S = 0.002
POLL_S = 0.00025
LOOK_AGAIN_S = 1.0  # how often a waiter looks whether the file at the path is the one it mapped
_WORD = struct.Struct("<q")


def path_for(store_dir: str) -> str:
    return os.path.join(store_dir, FILE_NAME)


def _map(path: str, create: bool) -> mmap.mmap:
    fd = os.open(path, (os.O_RDWR | os.O_CREAT) if create else os.O_RDONLY, 0o600)
    try:
        if create and os.fstat(fd).st_size < _WORD.size:
            # Written, not ftruncated: a hole's first store through the map
            # allocates its block, and on a full disk that is a SIGBUS, where a
            # write raises ENOSPC here.
            os.pwrite(fd, bytes(_WORD.size), 0)
        return mmap.mmap(fd, _WORD.size, access=mmap.ACCESS_WRITE if create else mmap.ACCESS_READ)
    finally:
        os.close(fd)


class Mark:
    """The writer's side: ``up()`` as a batch begins, ``down()`` once it is
    answered. A file that cannot be made leaves the mark off (logged once):
    the background then simply never waits."""

    def __init__(self, store_dir: str):
        try:
            self._map: mmap.mmap | None = _map(path_for(store_dir), create=True)
        except OSError as e:
            log.warning("foreground mark unavailable (%s): background work will not step aside", e)
            self._map = None
        else:
            self._put(0)  # a mark a killed writer left up

    def up(self) -> None:
        self._put(time.monotonic_ns())

    def down(self) -> None:
        self._put(-time.monotonic_ns())

    def _put(self, value: int) -> None:
        if self._map is not None:
            _WORD.pack_into(self._map, 0, value)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


class Watch:
    """The background's side: ``wait()`` returns once no batch is marked and
    ``linger_s`` passed since the last one ended. At most once a second the
    file is looked for again: while it is missing (a store whose writer has
    not started yet), and once mapped, whether it is still the file at its
    path (one deleted and made again by a new writer is another inode)."""

    def __init__(self, store_dir: str, linger_s: float = LINGER_S):
        self._path = path_for(store_dir)
        self._map: mmap.mmap | None = None
        self._ino = 0
        self._looked = float("-inf")
        self._linger = int(linger_s * 1e9)
        self.waited_s = 0.0  # in total: what stepping aside cost the background

    def _value(self) -> int:
        now = time.monotonic()
        if now - self._looked >= LOOK_AGAIN_S:
            self._looked = now
            self._look()
        return _WORD.unpack_from(self._map, 0)[0] if self._map is not None else 0

    def _look(self) -> None:
        try:
            ino = os.stat(self._path).st_ino
        except OSError:
            ino = 0
        if self._map is not None and ino == self._ino:
            return
        self.close()
        if ino:
            with contextlib.suppress(OSError, ValueError):  # gone again, or not 8 bytes yet: no map
                self._map, self._ino = _map(self._path, create=False), ino

    def marked(self) -> bool:
        """Whether a batch is marked up now (stale or not)."""
        return self._value() > 0

    def _busy(self, value: int, now: int) -> bool:
        if value > 0:
            return now - value < STALE_S * 1e9
        return value < 0 and now + value < self._linger

    def wait(self, most_s: float = WAIT_MAX_S) -> float:
        """Until no batch is marked or lingered after, or ``most_s`` passed; the seconds waited."""
        value = self._value()
        if not value:
            return 0.0
        t0 = now = time.monotonic_ns()
        give_up = t0 + int(most_s * 1e9)
        while self._busy(value, now) and now < give_up:
            time.sleep(POLL_S)
            value = _WORD.unpack_from(self._map, 0)[0]
            now = time.monotonic_ns()
        waited = (now - t0) / 1e9
        self.waited_s += waited
        return waited

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
