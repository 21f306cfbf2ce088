"""The writer's side of the FTS index: the rows of a batch indexed in one
statement, the index of definitions kept beside it, and incremental merges a
bounded step at a time.

Deferred indexing: between ``defer`` (after BEGIN) and ``index_deferred``
(before COMMIT) the FTS triggers leave alone every row inserted after the
mark (schema m007), and ``index_deferred`` indexes those still in an indexed
status, as they are at the end, and the names they define. FTS5 flushes its
pending terms at each statement savepoint, and every trigger-firing insert
opens one: a batch of n rows wrote n one-row segments; now it writes one. A
rebuild of the whole index inside the transaction calls ``settle`` first (the
deferred rows would be indexed twice); a merge or an optimize need not: a
deferred row is not in the index yet, so nothing of it is left behind.

Definitions (schema m009): the names each indexed row defines, read by
Python (memtree.text.definitions), so the triggers only queue a row;
``index_queued_definitions`` reads the queue's before every COMMIT.

Merges (``MergeFts``, sent by the pruner after its housekeeping when FTS5
flushed segments since the index last settled: memtree.store.fts_index).
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

import json

from memtree.errors import BadRequest
from memtree.store import defined, fts_index
from memtree.store.live import ANY_STATUS, INDEXED, status_clause

USERMERGE = 2  # segments on one level that the 'merge' command folds (FTS5's default: 4, as automerge)
MAX_PAGES = 10_000


def defer(db) -> None:
    """Rows inserted from now on are indexed by ``index_deferred`` (inside a transaction)."""
    where, params = status_clause("n", ANY_STATUS)  # the highest rowid of every status: the mark
    db.execute(f"INSERT INTO fts_defer(mark) SELECT coalesce(max(n.rowid), 0) FROM nodes n WHERE {where}", params)


def index_deferred(db) -> None:
    """Index the rows inserted since ``defer`` that are in an indexed status now,
    and let the triggers index every write again."""
    marks = [r[0] for r in db.execute("DELETE FROM fts_defer RETURNING mark")]
    if not marks:
        return
    where, params = status_clause("n", INDEXED)
    db.execute(
        "INSERT INTO nodes_fts(rowid, content, source_uri)"
        f" SELECT n.rowid, n.content, n.source_uri FROM nodes n WHERE n.rowid > ? AND {where}",
        [min(marks), *params],
    )
    defined.add_names(db, f"n.rowid > ? AND {where}", [min(marks), *params])


def index_queued_definitions(db) -> None:
    """The names of the rows the triggers queued (schema m009) that are
    still indexed, into the index of definitions: before every COMMIT."""
    rowids = [r[0] for r in db.execute("DELETE FROM defined_todo RETURNING node_rowid")]
    if rowids:
        where, params = status_clause("n", INDEXED)
        defined.add_names(db, f"n.rowid IN (SELECT value FROM json_each(?)) AND {where}", [json.dumps(rowids), *params])


def settle(db) -> None:
    """The deferred rows indexed now, for a statement that rewrites the whole
    index; deferring goes on after it if it was on."""
    if db.execute("SELECT 1 FROM fts_defer").fetchone() is not None:
        index_deferred(db)
        defer(db)


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
