"""Staleness walker: flags file chunks whose file changed or is gone.

Every ``walkers.stalenessIntervalMs`` it re-stats the files behind one bounded
batch of live ``file_chunk`` nodes (round robin over the live set, by id) and
asks the writer to mark the changed ones stale with ``SetStatus(expect=["live"])``,
so a chunk the read tool superseded meanwhile is left alone. Owns no DB writes.
"""

from __future__ import annotations

import logging
import os

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError
from memtree.recall import freshness
from memtree.store import sweeps

log = logging.getLogger(__name__)

BATCH = 500  # chunks per tick
CHANGED, GONE = freshness.REASON, freshness.GONE
mtime_changed = freshness.mtime_changed


def judge(rows: list[tuple], stat=os.stat) -> dict[str, list[str]]:
    """reason -> ids of the chunks that are stale, from (id, uri, metadata, mtime, created_at) rows."""
    out: dict[str, list[str]] = {}
    stats: dict[str, object] = {}

    def cached_stat(path):  # chunks of one file share one stat
        if path not in stats:
            try:
                stats[path] = stat(path)
            except OSError as e:
                stats[path] = e
        if isinstance(stats[path], OSError):
            raise stats[path]
        return stats[path]

    for node_id, uri, meta, mtime, created in rows:
        node = {"kind": "file_chunk", "source_uri": uri, "metadata": meta, "mtime": mtime, "created_at": created}
        reason = freshness.disk_change(node, stat=cached_stat)
        if reason:
            out.setdefault(reason, []).append(node_id)
    return out


class StalenessWalker(Walker):
    name = "walker.staleness"
    interval_ms_key = "stalenessIntervalMs"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.cursor = ""  # the last chunk id checked; the next batch starts after it
        self.info = {"checked": 0, "marked_stale": 0}

    def batch(self, db) -> list[tuple]:
        rows = sweeps.live_chunks_after(db, self.cursor, BATCH)
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
