"""The foreground marks: background work steps aside while the writer
answers requests and while a front answers a tool call.

The embed walker's idle-class child (actors/walkers/embed_compute.py) gives
up a core the moment the writer wants it, but not the core's shared caches
and bandwidth, and the scheduler still pays it a tick now and then: a hook
capture's p95 during a 100k backlog drain was 1.39-1.53x the same minutes
with the walker stopped (eval/bench_scale --embed-backlog). So the writer
marks each batch of ordinary requests (not the heavy ones, such as the
walker's own PutVectors) in a small file beside the store, each front marks
the tool calls it is answering (a recall is a few dozen ms of CPU the agent
waits for), and the embed walker waits while a mark is up: its child
between two slices of a batch, its own thread before it reads the next
batch and before each PutVectors.

The file (``foreground.bin``) holds SLOTS words, each the CLOCK_MONOTONIC
time in ns at which its holder's current work began, or minus the time it
ended: word 0 is the writer's (one writer a store), each other one a
front's, which holds a lock on its word's bytes for as long as it lives (a
front that died left its word free for the next; one finding every word
held marks nothing). A holder writes only its own word, in place (mmap), so
a reader never sees a torn value of an aligned word. A waiter also waits
LINGER_S past a mark's end (the writer's replies still cross ZeroMQ's I/O
threads and wake their callers), gives up after WAIT_MAX_S (a steady stream
of captures slows a drain, never stops it), and ignores a mark up for
longer than STALE_S (a holder killed mid-batch, or a tool call that runs
long: a bash command of minutes does not hold the drain up).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
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
SLOTS = 16  # the writer's word, then one a front
WRITER_SLOT = 0
_WORD = struct.Struct("<q")
_WORDS = struct.Struct(f"<{SLOTS}q")
FILE_BYTES = _WORDS.size


def path_for(store_dir: str) -> str:
    return os.path.join(store_dir, FILE_NAME)


def _open(path: str) -> int:
    """The file for writing, made and grown to FILE_BYTES as needed."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size < FILE_BYTES:
            # Written, not ftruncated: a hole's first store through the map
            # allocates its block, and on a full disk that is a SIGBUS, where a
            # write raises ENOSPC here. Only the missing words: a file of an
            # older release keeps its writer's word.
            os.pwrite(fd, bytes(FILE_BYTES - size), size)
    except OSError:
        os.close(fd)
        raise
    return fd


def _map(path: str, create: bool) -> mmap.mmap:
    fd = _open(path) if create else os.open(path, os.O_RDONLY)
    try:
        return mmap.mmap(fd, FILE_BYTES, access=mmap.ACCESS_WRITE if create else mmap.ACCESS_READ)
    finally:
        os.close(fd)


# struct flock (Linux, 64-bit): l_type, l_whence, l_start, l_len, l_pid.
_FLOCK = struct.Struct("hhqqi4x")


def _lock_word(fd: int, slot: int) -> bool:
    """Whether this descriptor now holds the write lock on ``slot``'s bytes.
    An open-file-description lock where Linux has them: it belongs to the
    descriptor, so neither another front of the same process (a test) takes
    the same word nor closing another descriptor of the file drops it, as
    both would with a process's POSIX lock (``lockf``, the fallback)."""
    start = slot * _WORD.size
    ofd = getattr(fcntl, "F_OFD_SETLK", None)
    try:
        if ofd is not None and _FLOCK.size == 32:
            try:
                fcntl.fcntl(fd, ofd, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, start, _WORD.size, 0))
                return True
            except OSError as e:
                if e.errno not in (errno.EINVAL, errno.ENOSYS):
                    raise
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _WORD.size, start)
        return True
    except OSError as e:
        if e.errno in (errno.EAGAIN, errno.EACCES):  # held by a live front
            return False
        raise


class Mark:
    """A holder's side: ``up()`` as its work begins, ``down()`` once it is
    answered; ``hold()`` for work that may nest (a front's concurrent tool
    calls: up with the first, down with the last). The writer's word unless
    ``front``: then the first word no other live front holds (``slot`` None:
    every one held, nothing marked). A file that cannot be made leaves the
    mark off (logged once): the background then simply never waits."""

    def __init__(self, store_dir: str, front: bool = False):
        self._map: mmap.mmap | None = None
        self._lock_fd: int | None = None  # a front's: its word's lock lives as long as this descriptor
        self.slot: int | None = WRITER_SLOT
        self._depth = 0
        path = path_for(store_dir)
        try:
            if not front:
                self._map = _map(path, create=True)
            elif (slot := self._claim(path)) is not None:
                # Mapped through the locked descriptor: with the lockf fallback, closing
                # another one of this file drops every lock this process holds on it.
                self.slot, self._map = slot, mmap.mmap(self._lock_fd, FILE_BYTES, access=mmap.ACCESS_WRITE)
            else:
                self.slot = None
        except OSError as e:
            log.warning("foreground mark unavailable (%s): background work will not step aside", e)
            self.close()
            return
        if self.slot is None:
            log.info("every foreground word is held by another front: this one marks nothing")
        self._put(0)  # a mark a killed holder left up

    def _claim(self, path: str) -> int | None:
        """A front's word: the first whose bytes no other front has locked."""
        fd = _open(path)
        try:
            for slot in range(WRITER_SLOT + 1, SLOTS):
                if _lock_word(fd, slot):
                    self._lock_fd, fd = fd, None
                    return slot
            return None
        finally:
            if fd is not None:
                os.close(fd)

    def up(self) -> None:
        self._put(time.monotonic_ns())

    def down(self) -> None:
        self._put(-time.monotonic_ns())

    @contextlib.contextmanager
    def hold(self):
        """Up for the block, nested blocks included: down when the outermost ends."""
        self._depth += 1
        if self._depth == 1:
            self.up()
        try:
            yield
        finally:
            self._depth -= 1
            if not self._depth:
                self.down()

    def _put(self, value: int) -> None:
        if self._map is not None:
            _WORD.pack_into(self._map, self.slot * _WORD.size, value)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # and with it the word's lock
            self._lock_fd = None


class Watch:
    """The background's side: ``wait()`` returns once no word is marked up
    and ``linger_s`` passed since the last mark ended. At most once a second
    the file is looked for again: while it is missing (a store whose writer
    has not started yet), and once mapped, whether it is still the file at
    its path (one deleted and made again by a new writer is another inode)."""

    def __init__(self, store_dir: str, linger_s: float = LINGER_S):
        self._path = path_for(store_dir)
        self._map: mmap.mmap | None = None
        self._ino = 0
        self._looked = float("-inf")
        self._linger = int(linger_s * 1e9)
        self.waited_s = 0.0  # in total: what stepping aside cost the background

    def _values(self) -> tuple[int, ...]:
        now = time.monotonic()
        if now - self._looked >= LOOK_AGAIN_S:
            self._looked = now
            self._look()
        return _WORDS.unpack_from(self._map, 0) if self._map is not None else ()

    def _look(self) -> None:
        try:
            ino = os.stat(self._path).st_ino
        except OSError:
            ino = 0
        if self._map is not None and ino == self._ino:
            return
        self.close()
        if ino:
            # Gone again, or not grown to FILE_BYTES yet (an older release's file): no map.
            with contextlib.suppress(OSError, ValueError):
                self._map, self._ino = _map(self._path, create=False), ino

    def marked(self) -> bool:
        """Whether any word is marked up now (stale or not)."""
        return any(v > 0 for v in self._values())

    def _busy(self, values: tuple[int, ...], now: int) -> bool:
        stale, linger = now - int(STALE_S * 1e9), now - self._linger
        return any(v > stale if v > 0 else -v > linger if v < 0 else False for v in values)

    def wait(self, most_s: float = WAIT_MAX_S) -> float:
        """Until no word is marked or lingered after, or ``most_s`` passed; the seconds waited."""
        values = self._values()
        if not any(values):
            return 0.0
        t0 = now = time.monotonic_ns()
        give_up = t0 + int(most_s * 1e9)
        while self._busy(values, now) and now < give_up:
            time.sleep(POLL_S)
            values = _WORDS.unpack_from(self._map, 0)
            now = time.monotonic_ns()
        waited = (now - t0) / 1e9
        self.waited_s += waited
        return waited

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
