"""Store integrity for ``memtree doctor``: SQLite's quick check, and the
derived indexes against the nodes they derive from (read-only)."""

from __future__ import annotations

from memtree.store.live import INDEXED, status_clause


def check(db_path: str) -> tuple[list[str], str]:
    """(problems, one line of facts) for the store at ``db_path``."""
    import apsw

    from memtree.store.db import open_read, schema_ready

    try:
        db = open_read(db_path)
    except apsw.Error as e:
        return [f"cannot open {db_path}: {e}"], ""
    try:
        if not schema_ready(db):
            return [], "empty store (no schema yet)"
        problems = []
        quick = [r[0] for r in db.execute("PRAGMA quick_check(5)")]
        if quick != ["ok"]:
            problems.append("quick_check: " + "; ".join(quick))
        indexed, iparams = status_clause("n", INDEXED)
        have = db.execute("SELECT count(*) FROM nodes_fts_docsize").fetchone()[0]
        # By identity, not by count: a missing row and a stray one would cancel out.
        # The writer keeps the vectors of stale and superseded nodes on purpose (dedupe
        # compares against them, recall can name them); only a vector whose node is
        # gone or out of every index is damage.
        checks = [
            (
                f"SELECT count(*) FROM nodes n WHERE {indexed} AND n.rowid NOT IN (SELECT d.id FROM nodes_fts_docsize d)",
                "{} searchable nodes missing from the FTS index",
            ),
            (
                f"SELECT count(*) FROM nodes_fts_docsize d WHERE d.id NOT IN (SELECT n.rowid FROM nodes n WHERE {indexed})",
                "{} FTS rows of no searchable node",
            ),
            (
                f"SELECT count(*) FROM nodes_vec v WHERE v.node_id NOT IN (SELECT n.id FROM nodes n WHERE {indexed})",
                "{} vectors belong to purged or forgotten nodes",
            ),
        ]
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'defined'").fetchone():  # m009 on
            checks.append(
                (
                    "SELECT count(DISTINCT d.node_rowid) FROM defined d"
                    f" WHERE d.node_rowid NOT IN (SELECT n.rowid FROM nodes n WHERE {indexed})",
                    "{} nodes out of the FTS index keep their definitions indexed",
                )
            )
        for sql, problem in checks:
            found = db.execute(sql, iparams).fetchone()[0]
            if found:
                problems.append(problem.format(found))
        models = [r[0] for r in db.execute("SELECT DISTINCT model || '/' || dim FROM nodes_vec")]
        if len(models) > 1:
            problems.append(f"vectors of {len(models)} models mixed ({', '.join(models)}); run `memtree reembed`")
        nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
        vectors = db.execute("SELECT count(*) FROM nodes_vec").fetchone()[0]
        return problems, f"quick_check ok, {nodes} nodes, FTS {have} rows, {vectors} vectors"
    finally:
        db.close()
