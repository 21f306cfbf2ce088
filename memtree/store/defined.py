"""The index of definitions (schema m009): the names each row of the FTS
index defines (memtree.text.definitions), read by a Python SQL function, so
only a connection that registered it (store/db.py) fills the index; the
triggers queue rows instead (memtree.store.write.fts)."""

from __future__ import annotations

from memtree.text import definitions


def add_names(db, where: str, params: list) -> None:
    """The names the rows of ``nodes n`` matching ``where`` define, into the index."""
    db.execute(
        "INSERT OR REPLACE INTO defined(name, node_rowid, n) SELECT j.key, n.rowid, j.value"
        f" FROM nodes n, json_each({definitions.SQL_FUNCTION}(n.content)) AS j WHERE {where}",
        params,
    )
