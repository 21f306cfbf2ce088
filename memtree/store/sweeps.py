"""Read queries for sweeps over the store: the staleness walker's batches of
live file chunks, the pruner's due rows, and the rows ``memtree redact
--rescan`` must re-clean."""

from __future__ import annotations

from memtree.store.kinds import ROOT_KINDS
from memtree.store.live import LIVE, NOT_FORGOTTEN, status_clause


def live_chunks_after(conn, cursor: str, limit: int) -> list[tuple]:
    """(id, source_uri, metadata, mtime, created_at) of live file chunks with
    an id after ``cursor``, in id order: a walker's next batch."""
    where, params = status_clause("n", LIVE)
    return conn.execute(
        f"SELECT n.id, n.source_uri, n.metadata, n.mtime, n.created_at FROM nodes n"
        f" WHERE n.kind = 'file_chunk' AND {where} AND n.id > ? ORDER BY n.id LIMIT ?",
        [*params, cursor, limit],
    ).fetchall()


def cleaned_before(conn, version: int) -> list[str]:
    """Ids of stored rows (not forgotten, not a root) that a gate older than
    ``version`` cleaned."""
    where, params = status_clause("n", NOT_FORGOTTEN)
    roots = ", ".join("?" * len(ROOT_KINDS))
    return [
        r[0]
        for r in conn.execute(
            f"SELECT n.id FROM nodes n WHERE {where} AND n.kind NOT IN ({roots})"
            f" AND coalesce(json_extract(n.metadata, '$.redaction'), 0) < ?",
            [*params, *ROOT_KINDS, version],
        )
    ]


def due(conn, status: str, cutoff_ms: int, limit: int) -> list[str]:
    """Ids of nodes in ``status`` whose last change is older than ``cutoff_ms``,
    oldest first; never a note (nothing but forget removes one)."""
    where, params = status_clause("n", [status])
    return [
        r[0]
        for r in conn.execute(
            f"SELECT n.id FROM nodes n WHERE {where} AND n.kind != 'note' AND n.updated_at < ?"
            f" ORDER BY n.updated_at LIMIT ?",
            [*params, cutoff_ms, limit],
        )
    ]
