"""The disk budget (``storage.maxBytes``): how big the store is (``store_bytes``,
the one definition), and what goes first.

Removal order when the store is over budget: rows already pruned (out of
every index, kept only for audit), then superseded captures, then
stale ones, then the oldest captures of any other status, each oldest first.
Only captures (``tool_output``, ``file_chunk``) are candidates: notes,
sessions, file roots and summaries never are, nor any node whose metadata
says ``"pinned": true``, nor a capture holding a note (a note is removed by
nothing but forget, and keeps what it annotates). A capture goes with its
children (a grep result's hits), so nothing is left orphaned.
"""

from __future__ import annotations

import os

from memtree.store.kinds import CAPTURE_KINDS
from memtree.store.live import ANY_STATUS, status_clause

# Statuses in removal order; the last step takes whatever capture is left, oldest first.
# Rows already pruned (out of every index, kept for audit) are deleted before anything else.
ORDER = (("pruned",), ("superseded",), ("stale",), ("pending", "live", "dropped", "forgotten"))
ROW_OVERHEAD = 200  # bytes per row besides its content (ids, metadata, indexes): an estimate
TARGET = 0.9  # prune down to this fraction of the budget, so one capture does not start it again
AUDIT_SHARE = 0.1  # of the budget, for audit rows; older ones are compacted (store/write/bookkeeping.py)


def file_bytes(db_path: str) -> int:
    """Bytes of the files on disk (the database and its write-ahead log): shown
    beside the store's size, never compared with the budget (the WAL is
    truncated after each budget pass, so the two meet then)."""
    total = 0
    for suffix in ("", "-wal"):
        try:
            total += os.path.getsize(db_path + suffix)
        except OSError:
            pass
    return total


def store_bytes(db) -> int:
    """The store's size, the one the budget is about (pruner, doctor, ctl status):
    bytes in the pages that hold data as committed, WAL included, whatever
    table they hold (nodes, indexes, vectors, and bookkeeping alike). Free pages
    are not counted: a budget pass hands them back to the OS."""
    size = db.execute("PRAGMA page_size").fetchone()[0]
    count = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    return (count - free) * size


def captured_bytes(db) -> int:
    """Bytes of the tool output and file text the stored nodes were made from."""
    where, params = status_clause("n", ANY_STATUS)
    return db.execute(f"SELECT COALESCE(SUM(n.original_bytes), 0) FROM nodes n WHERE {where}", params).fetchone()[0]


def bytes_per_content_byte(db) -> float:
    """Pages in use per byte of stored row (content + overhead): the FTS index
    and the other indexes make a row cost more than its text."""
    where, params = status_clause("n", ANY_STATUS)
    stored = db.execute(
        f"SELECT COALESCE(SUM(length(CAST(n.content AS BLOB)) + {ROW_OVERHEAD}), 0) FROM nodes n WHERE {where}", params
    ).fetchone()[0]
    return max(1.0, store_bytes(db) / stored) if stored else 1.0


def victims(db, need_bytes: int, limit: int) -> list[tuple[str, str, int]]:
    """(id, status, estimated bytes) of captures to remove, in removal order,
    until ``need_bytes`` is covered or ``limit`` rows are chosen; children
    follow their parent."""
    out: list[tuple[str, str, int]] = []
    freed = 0
    kinds = ",".join("?" * len(CAPTURE_KINDS))
    for statuses in ORDER:
        where, params = status_clause("n", statuses)
        # Superseded and stale: longest in that status first. The rest: oldest capture
        # first, by when it was captured (a spooled capture's status changes later).
        order = "n.updated_at, n.created_at" if len(statuses) == 1 else "n.created_at, n.id"
        rows = db.execute(
            f"SELECT n.id, n.status, length(CAST(n.content AS BLOB)) + {ROW_OVERHEAD} FROM nodes n"
            f" LEFT JOIN nodes p ON p.id = n.parent_id"
            f" WHERE {where} AND n.kind IN ({kinds})"
            f" AND (p.id IS NULL OR p.kind NOT IN ({kinds}))"  # top-level captures; children follow
            f" AND COALESCE(json_extract(n.metadata, '$.pinned'), 0) = 0"
            f" AND NOT EXISTS (SELECT 1 FROM nodes c WHERE c.parent_id = n.id AND c.kind = 'note')"  # a kept note's context
            f" ORDER BY {order} LIMIT ?",
            [*params, *CAPTURE_KINDS, *CAPTURE_KINDS, limit],
        ).fetchall()
        for node_id, status, size in rows:
            group = [(node_id, status, size), *children(db, node_id)]
            out.extend(group)
            freed += sum(g[2] for g in group)
            if freed >= need_bytes or len(out) >= limit:
                return out
    return out


def children(db, node_id: str) -> list[tuple[str, str, int]]:
    where, params = status_clause("n", ANY_STATUS)
    return [
        tuple(r)
        for r in db.execute(
            f"SELECT n.id, n.status, length(CAST(n.content AS BLOB)) + {ROW_OVERHEAD} FROM nodes n"
            f" WHERE n.parent_id = ? AND {where}",
            [node_id, *params],
        )
    ]


RATIO_FROM_BYTES = 1048576  # captured bytes before the stored-per-captured ratio means something


def summary(db_path: str, max_bytes: int, db=None) -> str:
    """One line for ``memtree ctl status``: size, budget, bytes stored per byte captured."""
    files = file_bytes(db_path)
    if db is None:
        return (
            f"store: {files / 1048576:.1f} MiB of files on disk (budget storage.maxBytes {max_bytes / 1048576:.0f} MiB)"
        )
    size = store_bytes(db)
    line = (
        f"store: {size / 1048576:.1f} MiB (budget storage.maxBytes {max_bytes / 1048576:.0f} MiB;"
        f" files {files / 1048576:.1f} MiB with the WAL)"
    )
    captured = captured_bytes(db)
    if captured >= RATIO_FROM_BYTES:
        line += f", {size / captured:.2f} bytes stored per byte captured"
    elif captured:  # a young store is mostly SQLite's fixed pages: a ratio would mislead
        amount = f"{captured / 1024:.0f} KiB" if captured >= 1024 else f"{captured} bytes"
        line += f", {amount} captured (bytes stored per byte captured shown from {RATIO_FROM_BYTES // 1048576} MiB on)"
    return line
