"""FTS5 incremental merge, a bounded step at a time (``MergeFts``, sent by the
pruner after its housekeeping when FTS5 flushed segments since the index last
settled: memtree.store.fts_index).

Every write transaction flushes a small segment; FTS5's own automerge (run
inside the writer's commit) only merges once 4 pile up on a level, so a
store that grows by small group commits keeps 10-20 segments, and every term
of every query is looked up in each (a snippet lookup cost ~4x more on a
65k-node store than after merging). With ``usermerge`` 2, FTS5's ``merge``
command folds any two segments of a level into the next one, at most
``pages`` leaf pages per step: outside the hot commit, bounded, and a store
settles at one segment per level (each row rewritten once per level, as an
LSM tree; never the whole index, as 'optimize' does).
"""

from __future__ import annotations

from memtree.errors import BadRequest
from memtree.store import fts_index

USERMERGE = 2  # segments on one level that the 'merge' command folds (FTS5's default: 4, as automerge)
MAX_PAGES = 10_000


def merge(tx, pages: int) -> dict:
    """One merge step of at most ``pages`` pages; ``more`` says whether it
    changed the index (so another step may find more to merge)."""
    if isinstance(pages, bool) or not isinstance(pages, int) or not 1 <= pages <= MAX_PAGES:
        raise BadRequest(f"pages must be an integer between 1 and {MAX_PAGES}, got {pages!r}")
    db = tx.db
    row = db.execute("SELECT v FROM nodes_fts_config WHERE k = 'usermerge'").fetchone()
    if row is None or row[0] != USERMERGE:
        db.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES('usermerge', ?)", (USERMERGE,))
    before = fts_index.structure(db)
    if before is None:
        return {"segments": 0, "more": False}
    db.execute("INSERT INTO nodes_fts(nodes_fts, rank) VALUES('merge', ?)", (pages,))
    after = fts_index.structure(db)
    return {"segments_before": before.segments, "segments": after.segments, "more": after.record != before.record}
