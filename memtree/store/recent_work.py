"""What the store holds from recent work, for the session brief (memtree.recall.brief).

Plain DB-API reads (stdlib ``sqlite3`` or apsw) of current nodes: live, and
pending ones the filter has not triaged yet (a session's last captures often
are, when the next one starts: the filter walker stopped with the session, and
starts again beside this hook). Standard library only: the SessionStart hook
runs this under ``python -I -S``.
"""

from __future__ import annotations

import json

from memtree.store import uris
from memtree.store.live import CURRENT, status_clause


def _meta(text) -> dict:
    try:
        m = json.loads(text or "{}")
    except ValueError:
        return {}
    return m if isinstance(m, dict) else {}


def totals(conn) -> tuple[int, int, int]:
    """(current captures, sessions they came from, newest created_at)."""
    where, params = status_clause("n", CURRENT)
    row = conn.execute(
        f"SELECT count(*), count(DISTINCT n.session_id), max(n.created_at) FROM nodes n"
        f" WHERE {where} AND n.kind NOT IN ('session', 'file')",
        params,
    ).fetchone()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def notes(conn, limit: int) -> list[dict]:
    where, params = status_clause("n", CURRENT)
    rows = conn.execute(
        f"SELECT n.id, n.kind, n.content, n.created_at, n.session_id FROM nodes n"
        f" WHERE n.kind IN ('note', 'observation') AND {where}"
        f" ORDER BY n.created_at DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [dict(zip(("id", "kind", "content", "created_at", "session_id"), r)) for r in rows]


def files(conn, limit: int) -> list[dict]:
    """Files read, newest first: path, the line ranges seen, the newest chunk's id."""
    where, params = status_clause("n", CURRENT)
    rows = conn.execute(
        f"SELECT n.id, n.metadata, n.created_at, n.session_id, p.source_uri FROM nodes n"
        f" JOIN nodes p ON p.id = n.parent_id"
        f" WHERE n.kind = 'file_chunk' AND p.kind = 'file' AND {where}"
        f" ORDER BY n.created_at DESC LIMIT 400",
        params,
    ).fetchall()
    out: dict[str, dict] = {}
    for nid, meta, at, sid, uri in rows:
        path = uris.file_path(uri) or ""
        m = _meta(meta)
        f = out.setdefault(
            path,
            {"path": path, "id": nid, "created_at": at, "session_id": sid, "ranges": [], "total": m.get("total_lines")},
        )
        if isinstance(m.get("start"), int) and isinstance(m.get("end"), int):
            f["ranges"].append((m["start"], m["end"], m.get("symbol")))
        if len(out) > limit:
            del out[path]
            break
    return list(out.values())[:limit]


def tool_outputs(conn, limit: int) -> list[dict]:
    """Commands and searches, newest first, with their metadata."""
    where, params = status_clause("n", CURRENT)
    rows = conn.execute(
        f"SELECT n.id, n.metadata, n.created_at, n.session_id FROM nodes n"
        f" WHERE n.kind = 'tool_output' AND {where}"
        f" ORDER BY n.created_at DESC LIMIT ?",
        [*params, limit],
    ).fetchall()
    return [{"id": r[0], "meta": _meta(r[1]), "created_at": r[2], "session_id": r[3]} for r in rows]


__all__ = ["totals", "notes", "files", "tool_outputs"]


def open_snapshot(db_path: str, timeout_s: float):
    """A read-only sqlite3 connection for the session brief (the stdlib driver:
    a hook loads no apsw or sqlite-vec), or None when the store cannot be read
    within ``timeout_s`` (a writer mid-checkpoint) or has no schema yet."""
    import sqlite3
    from urllib.parse import quote

    try:
        conn = sqlite3.connect(f"file:{quote(db_path)}?mode=ro", uri=True, timeout=timeout_s)
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'nodes'").fetchone() is None:
            conn.close()
            return None
        return conn
    except sqlite3.Error:
        return None
