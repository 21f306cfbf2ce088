"""The writer's WAL checkpoints, copied on a thread and connection of their own.

A PASSIVE checkpoint copies the WAL's frames into the database file and
syncs it: 15 ms for a thousand frames here, in which a writer that ran it
itself answered nobody (about three a second during an embedding drain).
SQLite lets a checkpoint run on another connection while the writer appends
to the WAL, and apsw lets go of the GIL while it runs, so the writer asks
this thread for one (``request``) and goes on answering.

The WAL starts over from its beginning only at a write that finds every
frame checkpointed. Frames the writer committed during the thread's pass are
left behind by it, so the writer copies those last few itself, between two
batches (about a millisecond for tens of frames): actors/writer.py,
``_checkpoint_if_due``.
"""

from __future__ import annotations

import logging
import threading

import apsw

from memtree.runtime import priority
from memtree.store.write.writable import STORAGE_ERRORS, describe

log = logging.getLogger(__name__)


class Checkpointer:
    """A thread that runs one PASSIVE checkpoint of ``path`` per request."""

    def __init__(self, path: str, name: str = "wal-checkpoint"):
        self._path = path
        self._due = threading.Event()
        self._idle = threading.Event()  # no request unfinished
        self._idle.set()
        self._stopping = False
        self.passes = 0
        self._took: int | None = None  # frames the last pass took in, until the writer looks
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def busy(self) -> bool:
        return not self._idle.is_set()

    def request(self) -> None:
        self._idle.clear()
        self._due.set()

    def wait(self, timeout_s: float) -> bool:
        """Until the pass asked for is done (False: not within ``timeout_s``)."""
        return self._idle.wait(timeout_s)

    def take(self) -> int | None:
        """How many WAL frames the finished pass copied (None: none finished
        since the last look, or it copied none)."""
        took, self._took = self._took, None
        return took

    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the thread once its pass (if one runs) is done."""
        self._stopping = True
        self._due.set()
        self._thread.join(timeout_s)

    def _run(self) -> None:
        # Woken after a commit, it must not take the core from the writer it was woken by.
        priority.background_thread()
        try:
            # Opened here, used only here. It never writes a row, so it never
            # autocheckpoints; a PASSIVE checkpoint never calls the busy handler.
            conn = apsw.Connection(self._path, flags=apsw.SQLITE_OPEN_READWRITE)
            # A connection learns the file is in WAL mode when it first reads it; until
            # then a checkpoint is a no-op that answers (-1, -1).
            conn.execute("PRAGMA journal_mode").fetchall()
        except apsw.Error as e:
            log.error("WAL checkpoint thread: cannot open the store (%s); the writer checkpoints inline", e)
            return
        try:
            while True:
                self._due.wait()
                self._due.clear()
                if self._stopping:
                    return
                self._took = self._pass(conn)
                self._idle.set()
        finally:
            conn.close()
            self._idle.set()  # nobody waits on a thread that is gone

    def _pass(self, conn) -> int | None:
        try:
            frames, copied = conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
        except (apsw.BusyError, apsw.LockedError):
            return None  # another connection is checkpointing: it does the work
        except STORAGE_ERRORS as e:  # committed already; a later pass catches up
            log.warning("WAL checkpoint failed: %s", describe(e))
            return None
        except apsw.Error:
            log.error("WAL checkpoint failed", exc_info=True)
            return None
        self.passes += 1
        # A reader's older snapshot held some back: the writer cannot finish it cheaply either.
        return copied if copied >= frames else None
