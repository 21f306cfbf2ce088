"""Rows written on a store connection in-process, as the writer's own code
would write them, or as a bare connection (an older memtree) could."""

from __future__ import annotations

from memtree.store.write import fts


def insert(db, name: str, content: str, status: str = "live") -> None:
    """A note row with id ``name``, through the nodes triggers only."""
    db.execute(
        "INSERT INTO nodes(id, kind, content, content_hash, status, created_at, updated_at)"
        " VALUES (?, 'note', ?, ?, ?, 1, 1)",
        (name, content, f"hash-{name}", status),
    )


def writer_tx(db, work, deferred: bool = True) -> None:
    """``work()`` in one transaction as the writer runs it (actors/writer.py
    _begin/_commit): FTS rows deferred to one statement when ``deferred``, and
    the names of the rows the triggers queued read before COMMIT."""
    db.execute("BEGIN IMMEDIATE")
    if deferred:
        fts.defer(db)
    work()
    if deferred:
        fts.index_deferred(db)
    fts.index_queued_definitions(db)
    db.execute("COMMIT")
