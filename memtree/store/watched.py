"""Reads for the FileChanged hook (memtree/hooks/file_changed.py): the files memtree holds
live chunks of, and a file's live chunks. Plain DB-API (stdlib ``sqlite3`` or apsw)."""

from __future__ import annotations

from memtree.store.live import status_clause


def live_files(conn, root: str, limit: int) -> list[str]:
    """Paths inside ``root`` with live (or just captured, pending) file chunks, newest first."""
    where, params = status_clause("n", ("live", "pending"))
    prefix = "file://" + root.rstrip("/") + "/"
    rows = conn.execute(
        f"SELECT p.source_uri, max(n.created_at) AS at FROM nodes n JOIN nodes p ON p.id = n.parent_id"
        f" WHERE n.kind = 'file_chunk' AND p.kind = 'file' AND {where}"
        f" AND substr(p.source_uri, 1, ?) = ? GROUP BY p.source_uri ORDER BY at DESC LIMIT ?",
        [*params, len(prefix), prefix, limit],
    ).fetchall()
    return [r[0][len("file://") :] for r in rows]


def live_chunks(conn, path: str) -> list[tuple[str, int, int]]:
    """(id, mtime, created_at) of the live or pending chunks of one file: under its root, and
    grep hits whose ``file://`` uri names it."""
    where, params = status_clause("n", ("live", "pending"))
    uri = f"file://{path}"
    rows = conn.execute(
        f"SELECT n.id, n.mtime, n.created_at FROM nodes n LEFT JOIN nodes p ON p.id = n.parent_id"
        f" WHERE n.kind = 'file_chunk' AND {where}"
        f" AND ((p.kind = 'file' AND p.source_uri = ?) OR substr(n.source_uri, 1, ?) = ?)",
        [*params, uri, len(uri) + 2, uri + "#L"],
    ).fetchall()
    return [(r[0], int(r[1] or 0), int(r[2] or 0)) for r in rows]
