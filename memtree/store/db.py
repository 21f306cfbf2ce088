"""Connections. Only the writer opens one for writing (tests pin this)."""

from __future__ import annotations

import os

import apsw
import sqlite_vec

from memtree.store import bm25
from memtree.text import definitions

BUSY_TIMEOUT_MS = 5000
# A statement inside a transaction keeps the prior image of each page it changes
# (its statement journal: a failing statement is undone alone). Past SQLite's
# 64 KiB default that journal moves to a temp file for the rest of the
# transaction; a node insert changes nine b-trees, now and then more than
# 64 KiB of pages, and from then on every insert of the batch wrote its pages
# there (~7 pwrites a note). Twice the default keeps them in memory. A bigger
# statement still spills, so memory stays bounded. Past 128 KiB SQLite 3.54's
# spill itself fails (SQLITE_FULL: tests/unit/store/test_db_tune.py).
STMT_JOURNAL_SPILL_BYTES = 128 * 1024


def _extend(conn: apsw.Connection) -> None:
    """What every connection carries: sqlite-vec, the BM25 a search ranks
    with when it knows the counts (store/bm25.py), and the names a row
    defines, which the index of definitions' triggers call (text/definitions.py)."""
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec.loadable_path())
    conn.enable_load_extension(False)
    bm25.register(conn)
    definitions.register(conn)


def tune_process() -> bool:
    """Process-wide SQLite settings for the writer (STMT_JOURNAL_SPILL_BYTES).
    SQLite takes them only while it is shut down: done before the process's
    first connection, else not at all (False)."""
    if apsw.connections():
        return False
    apsw.shutdown()
    try:
        apsw.config(apsw.SQLITE_CONFIG_STMTJRNL_SPILL, STMT_JOURNAL_SPILL_BYTES)
    finally:
        apsw.initialize()
    return True


def open_write(path: str) -> apsw.Connection:
    """The single write connection: busy timeout first, WAL, sqlite-vec, migrations."""
    from memtree.store.schema import migrate

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    conn = apsw.Connection(path)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    _incremental_vacuum_mode(conn)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA secure_delete=ON")  # freed pages are zeroed: forgotten text leaves the file
    _extend(conn)
    migrate(conn)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.chmod(path + suffix, 0o600)
    return conn


def _incremental_vacuum_mode(conn: apsw.Connection) -> None:
    """auto_vacuum=INCREMENTAL, so the disk budget can hand freed pages back
    (``Reclaim``). A new file takes the mode before its first table; an older
    store needs one VACUUM, which cannot run inside a migration's transaction."""
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        return
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    if conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None:
        conn.execute("VACUUM").fetchall()


def open_read(path: str, cache_kib: int | None = None) -> apsw.Connection:
    """A read-only connection (front, walkers). Raises apsw.CantOpenError if
    the store does not exist yet. ``cache_kib``: its page cache's bound
    (SQLite's default is 2 MiB a connection)."""
    conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    if cache_kib is not None:
        conn.execute(f"PRAGMA cache_size = -{int(cache_kib)}")
    _extend(conn)
    return conn


def checkpoint(conn: apsw.Connection, mode: str) -> int:
    """Checkpoint the WAL (``PASSIVE`` never waits for readers; ``TRUNCATE``
    also empties the file); 1 when a reader kept it from completing."""
    if mode not in ("PASSIVE", "FULL", "RESTART", "TRUNCATE"):
        raise ValueError(f"unknown checkpoint mode {mode!r}")
    return conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()[0][0]


def schema_ready(conn: apsw.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name='nodes'").fetchone()
    return row is not None
