"""Read queries for sweeps over the store: the staleness walker's batches of
live file chunks, the pruner's due rows, and the rows ``memtree redact
--rescan`` (and the filter walker, after an upgrade) must re-clean."""

from __future__ import annotations

import orjson

from memtree.gate import redact_text, redact_value
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
    return [
        r[0]
        for r in conn.execute(
            f"SELECT n.id FROM nodes n WHERE {where} AND {_OLDER_GATE}", [*params, *ROOT_KINDS, version]
        )
    ]


# A row an older gate cleaned (its mark in the metadata), not a root: after the
# status filter, with ROOT_KINDS and the version as its parameters.
_OLDER_GATE = (
    f"n.kind NOT IN ({', '.join('?' * len(ROOT_KINDS))}) AND coalesce(json_extract(n.metadata, '$.redaction'), 0) < ?"
)


def older_gate_count(conn, version: int) -> int:
    """How many rows ``cleaned_before`` would list (one pass over the table)."""
    where, params = status_clause("n", NOT_FORGOTTEN)
    sql = f"SELECT count(*) FROM nodes n WHERE {where} AND {_OLDER_GATE}"
    return conn.execute(sql, [*params, *ROOT_KINDS, version]).fetchone()[0]


def older_gate_rows(conn, version: int, after: int, span: int, limit: int) -> tuple[list[tuple], int | None]:
    """(rowid, id, content, source_uri, metadata, content_hash) of up to
    ``limit`` rows cleaned by a gate older than ``version`` (as
    ``cleaned_before``) with a rowid in ``(after, after + span]``, in rowid
    order, and the rowid the next call goes on from (None: past the last
    row): a bounded step of a walk over the whole table (the mark is in the
    metadata, which no index holds)."""
    where, params = status_clause("n", NOT_FORGOTTEN)
    rows = conn.execute(
        f"SELECT n.rowid, n.id, n.content, n.source_uri, n.metadata, n.content_hash FROM nodes n"
        f" WHERE n.rowid > ? AND n.rowid <= ? AND {where} AND {_OLDER_GATE} ORDER BY n.rowid LIMIT ?",
        [after, after + span, *params, *ROOT_KINDS, version, limit],
    ).fetchall()
    if len(rows) == limit:
        return rows, rows[-1][0]
    high = conn.execute("SELECT coalesce(max(rowid), 0) FROM nodes").fetchone()[0]
    return rows, after + span if after + span < high else None


def regate(content: str, source_uri: str | None, meta: dict) -> tuple[str, str | None, dict]:
    """A stored row's content, source URI and metadata as the current gate
    makes them: what ``memtree.store.write.rescan.reredact`` writes and what
    ``gate_keeps`` compares, computed in one place."""
    uri = redact_text(source_uri)[0] if isinstance(source_uri, str) and source_uri else source_uri
    return redact_text(content)[0], uri, redact_value(meta)[0] if meta else {}


def gate_keeps(content: str, source_uri: str | None, metadata: str | None) -> bool:
    """Whether the current gate leaves a stored row's text as it is (``regate``):
    its content, its source URI and its metadata but its redaction mark."""
    try:
        meta = orjson.loads(metadata or "{}")
    except orjson.JSONDecodeError:
        return False
    if not isinstance(meta, dict):
        return False
    meta.pop("redaction", None)
    return regate(content, source_uri, meta) == (content, source_uri, meta)


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
