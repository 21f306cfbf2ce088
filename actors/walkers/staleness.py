"""Staleness walker: flags file chunks whose file changed or is gone.

Every ``walkers.stalenessIntervalMs`` it re-stats the files behind one bounded
batch of live ``file_chunk`` nodes (round robin over the live set, by id) and
asks the writer to mark the changed ones stale with ``SetStatus(expect=["live"])``,
so a chunk the read tool superseded meanwhile is left alone. Owns no DB writes.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import unquote

import orjson

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError
from memtree.store.live import status_clause

log = logging.getLogger(__name__)

BATCH = 500  # chunks per tick
CHANGED = "file changed (mtime advanced)"
GONE = "file deleted"


def chunk_path(source_uri: str | None, metadata: str | None) -> str | None:
    """The file behind a chunk: metadata ``path``, else its ``file://`` uri."""
    try:
        path = orjson.loads(metadata or "{}").get("path")
    except orjson.JSONDecodeError:
        path = None
    if isinstance(path, str) and path.startswith("/"):
        return path
    if source_uri and source_uri.startswith("file://"):
        return unquote(source_uri[len("file://"):].split("#", 1)[0]) or None
    return None


def mtime_advanced(stored: int, created_at_ms: int, st: os.stat_result) -> bool:
    """Whether the file's mtime is past the one the chunk was made from.

    The read tool stores nanoseconds; a capture may store milliseconds or
    nothing (0), in which case the chunk's creation time stands in.
    """
    if stored >= 10**15:  # nanoseconds (any date after 1970-01-12)
        return st.st_mtime_ns > stored
    return st.st_mtime_ns // 1_000_000 > (stored or created_at_ms)


def judge(rows: list[tuple], stat=os.stat) -> dict[str, list[str]]:
    """reason -> ids of the chunks that are stale, from (id, uri, metadata, mtime, created_at) rows."""
    out: dict[str, list[str]] = {}
    stats: dict[str, os.stat_result | None] = {}
    for node_id, uri, meta, mtime, created in rows:
        path = chunk_path(uri, meta)
        if path is None:
            continue
        if path not in stats:
            try:
                stats[path] = stat(path)
            except FileNotFoundError:
                stats[path] = None
            except OSError:
                continue  # unreadable now (permissions, a dying mount): judge it next time
        st = stats[path]
        if st is None:
            out.setdefault(GONE, []).append(node_id)
        elif mtime_advanced(mtime or 0, created or 0, st):
            out.setdefault(CHANGED, []).append(node_id)
    return out


class StalenessWalker(Walker):
    name = "walker.staleness"
    interval_ms_key = "stalenessIntervalMs"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.cursor = ""  # the last chunk id checked; the next batch starts after it
        self.info = {"checked": 0, "marked_stale": 0}

    def batch(self, db) -> list[tuple]:
        where, params = status_clause("n", ["live"])
        rows = db.execute(
            f"SELECT n.id, n.source_uri, n.metadata, n.mtime, n.created_at FROM nodes n"
            f" WHERE n.kind = 'file_chunk' AND {where} AND n.id > ? ORDER BY n.id LIMIT ?",
            [*params, self.cursor, BATCH],
        ).fetchall()
        self.cursor = rows[-1][0] if len(rows) == BATCH else ""  # a short batch: wrap around
        return rows

    def sweep(self) -> None:
        db = self.db()
        if db is None:
            return
        rows = self.batch(db)
        self.info["checked"] += len(rows)
        for reason, ids in judge(rows).items():
            try:
                result = self.call_writer(protocol.SetStatus(ids=ids, status="stale", reason=reason, expect=["live"]))
            except MemtreeError as e:
                log.warning("%s: SetStatus refused: %s", self.ctx.name, e.message)
                continue
            if result is None:
                self.cursor = ""  # writer away: look at these again next tick
                return
            changed = result.get("changed") or []
            self.info["marked_stale"] += len(changed)
            if changed:
                log.info("%s: %d chunks stale (%s)", self.ctx.name, len(changed), reason)


if __name__ == "__main__":
    main_for(StalenessWalker)
