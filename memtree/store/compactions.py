"""Reads for the brief after a compaction or a resume (memtree/recall/compaction.py): the
session's latest compaction summary (an ``observation`` with ``metadata.origin = "compact"``,
stored by the PostCompact hook) and what the session captured. Plain DB-API, current nodes
(live or pending: the PostCompact hook's summary and a session's last captures are pending
until the filter walker, which starts beside the SessionStart hook, gets to them)."""

from __future__ import annotations

import json

from memtree.store.live import CURRENT, status_clause


def latest_summary(conn, session_id: str) -> tuple[str, str, int] | None:
    """(id, content, created_at) of the session's newest compaction summary."""
    where, params = status_clause("n", CURRENT)
    row = conn.execute(
        f"SELECT n.id, n.content, n.created_at FROM nodes n WHERE n.kind = 'observation' AND n.session_id = ?"
        f" AND n.source_uri = ? AND {where} ORDER BY n.created_at DESC LIMIT 1",
        [session_id, f"compact:{session_id[:200]}", *params],
    ).fetchone()
    return (row[0], row[1], int(row[2] or 0)) if row else None


def touched(conn, session_id: str, limit: int) -> list[dict]:
    """The session's captures (files read, commands, searches), newest first:
    ``limit`` of them, a native Read counted once however many symbol chunks
    it was stored as (its chunks share the file, the ``read`` range and the
    time; one of them stands for it)."""
    where, params = status_clause("n", CURRENT)
    one_read = (
        "CASE WHEN n.kind = 'file_chunk' AND json_valid(n.metadata) THEN coalesce(json_extract(n.metadata, '$.path')"
        " || '|' || json_extract(n.metadata, '$.read') || '|' || n.created_at, n.id) ELSE n.id END"
    )
    rows = conn.execute(
        f"SELECT n.id, n.kind, n.metadata, max(n.created_at) AS at FROM nodes n WHERE n.session_id = ?"
        f" AND n.kind IN ('file_chunk', 'tool_output') AND n.parent_id IN (SELECT p.id FROM nodes p"
        f" WHERE p.kind IN ('file', 'session')) AND {where}"
        # A Grep's chunks stand under their files; the search is listed once, by its output.
        " AND NOT (n.kind = 'file_chunk' AND json_valid(n.metadata) AND json_extract(n.metadata, '$.tool') = 'Grep')"
        f" GROUP BY {one_read} ORDER BY at DESC LIMIT ?",
        [session_id, *params, limit],
    ).fetchall()
    out = []
    for nid, kind, meta, at in rows:
        try:
            m = json.loads(meta or "{}")
        except ValueError:
            m = {}
        out.append({"id": nid, "kind": kind, "meta": m if isinstance(m, dict) else {}, "created_at": int(at or 0)})
    return out
