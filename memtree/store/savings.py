"""Read side of the savings meter: the ``shown`` audit rows the writer records
when it replaces a large native output (memtree/capture/savings.py)."""

from __future__ import annotations

import json


def shown_rows(conn, since_ms: int = 0) -> list[tuple[int, dict]]:
    """(at, detail) of every replaced output recorded since ``since_ms``, oldest first."""
    out = []
    for at, detail in conn.execute("SELECT at, detail FROM audit WHERE action = 'shown' AND at >= ? ORDER BY at",
                                   (since_ms,)):
        try:
            d = json.loads(detail) if detail else {}
        except ValueError:
            continue
        if isinstance(d, dict):
            out.append((at, d))
    return out


def stored_text(conn, node_id: str) -> str:
    """What memtree holds behind an id a wrapped tool's answer named: a tool output's
    content, or a file root's live chunks (the whole file as stored)."""
    from memtree.store.live import ALL_STATUSES, status_clause

    where, params = status_clause("n", [s for s in ALL_STATUSES if s != "forgotten"])
    row = conn.execute(f"SELECT n.kind, n.content FROM nodes n WHERE n.id = ? AND {where}",
                       [node_id, *params]).fetchone()
    if row is None:
        return ""
    if row[0] != "file":
        return row[1] or ""
    live, lparams = status_clause("c")
    return "".join(r[0] or "" for r in conn.execute(
        f"SELECT c.content FROM nodes c WHERE c.parent_id = ? AND c.kind = 'file_chunk' AND {live}"
        f" ORDER BY json_extract(c.metadata, '$.start')", [node_id, *lparams]))


def captured_sessions(conn) -> set[str]:
    """Sessions the store holds captures of (memtree was installed there)."""
    from memtree.store.live import ALL_STATUSES, status_clause

    where, params = status_clause("n", list(ALL_STATUSES))
    return {r[0] for r in conn.execute(f"SELECT DISTINCT n.session_id FROM nodes n WHERE n.session_id IS NOT NULL"
                                       f" AND {where}", params)}
