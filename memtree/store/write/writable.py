"""Can the writer write? A full disk or a database file made read-only is
noticed at once, said clearly, and retried with a capped backoff until it
clears by itself: the writer never crash-loops on it and never acknowledges
a write it could not commit.
"""

from __future__ import annotations

import os
import time

import apsw

# What SQLite raises when the bytes cannot reach the disk: SQLITE_FULL (no
# space), SQLITE_IOERR (a failed write, e.g. a file size limit), SQLITE_READONLY.
STORAGE_ERRORS = (apsw.FullError, apsw.IOError, apsw.ReadOnlyError)
FIRST_RETRY_S = 0.25
MAX_RETRY_S = 2.0  # bounds how long after space returns the writer notices


def describe(exc: BaseException) -> str:
    if isinstance(exc, apsw.FullError):
        return "disk full"
    if isinstance(exc, apsw.ReadOnlyError):
        return "the database is read-only"
    return f"a disk write failed ({type(exc).__name__}; disk full or a file size limit?)"


def file_read_only(path: str) -> bool:
    """True when the database file lost its write permission (mode bits, so
    root notices too) or cannot be written (read-only mount)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return not st.st_mode & 0o222 or not os.access(path, os.W_OK)


class Writability:
    """The writer's view of its storage: ``problem`` is None while writes work."""

    def __init__(self, db_path: str, clock=time.monotonic):
        self.db_path = db_path
        self.clock = clock
        self.problem: str | None = None
        self.since = 0.0
        self.backoff = 0.0
        self.retry_at = 0.0

    def check_file(self) -> str | None:
        """Notice a read-only database file (one stat); returns the problem, if any."""
        if file_read_only(self.db_path):
            if self.problem is None or not self.problem.startswith("database file"):
                self.failed(f"database file {self.db_path} is read-only")
            return self.problem
        if self.problem is not None and self.problem.startswith("database file"):
            self.retry_at = self.clock()  # writable again by the same check: try at once
        return None

    def failed(self, reason: str) -> None:
        now = self.clock()
        if self.problem is None:
            self.since, self.backoff = now, FIRST_RETRY_S
        else:
            self.backoff = min(MAX_RETRY_S, self.backoff * 2)
        self.problem = reason
        self.retry_at = now + self.backoff

    def may_try(self) -> bool:
        return self.problem is None or self.clock() >= self.retry_at

    def cleared(self) -> float | None:
        """Writes work again: seconds the problem lasted (None if there was none)."""
        if self.problem is None:
            return None
        lasted = self.clock() - self.since
        self.problem = None
        return lasted

    def message(self) -> str:
        return (
            f"the writer cannot store anything: {self.problem}; nothing was stored, "
            f"it retries by itself every {self.backoff:g}s at most"
        )
