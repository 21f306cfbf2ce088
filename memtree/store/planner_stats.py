"""Fixed planner statistics for the nodes table (sqlite_stat1), written once.

A store never runs ANALYZE: its shape changes by the minute and ANALYZE reads
every row. Without statistics SQLite takes every index as equally selective,
and for ``parent_id = ? AND status = 'live'`` (a file's chunks, a node's
children) it walked nodes_status_created: every live node of the store, for a
file's few children, in reads, compose, forget and the capture path alike.

These rows describe the shape every store has, whatever its size: a parent has
a handful of children, a content hash or a source uri a node or two, a session
some thousands, while one status or one kind holds a large share of the
store. SQLite documents filling sqlite_stat1 by hand for this (lang_analyze:
"the application can ... make the query planner behave in a fixed way").
The row count is a large store's, so a full scan is never estimated cheap.
"""

from __future__ import annotations

ROWS = 1_000_000
# index -> rows per distinct value of its first column, first two columns, ...
NODES = {
    "sqlite_autoindex_nodes_1": "1",  # id
    "nodes_parent": "10",
    "nodes_status_created": "200000 1",
    "nodes_kind_created": "150000 1",
    "nodes_hash": "2",
    "nodes_source": "2",
    "nodes_session": "2000",
    "nodes_id_state": "1 1 1 1",
}


def pin(db) -> None:
    """Write the rows (in the caller's transaction) and make this connection's planner use them;
    other connections read them when they load the schema."""
    db.execute("ANALYZE sqlite_schema")  # creates sqlite_stat1 without reading any table of ours
    db.execute("DELETE FROM sqlite_stat1 WHERE tbl = 'nodes'")
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'nodes'")}
    db.executemany(
        "INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES ('nodes', ?, ?)",
        [(name, f"{ROWS} {stat}") for name, stat in NODES.items() if name in indexes],
    )
    db.execute("ANALYZE sqlite_schema")  # reloads the statistics into this connection's planner
