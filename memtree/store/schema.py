"""Schema migrations: registered in order, each applied once in its own
transaction together with its bookkeeping row (sqlite-utils / llm style)."""

from __future__ import annotations

from collections.abc import Callable

from memtree.ids import now_ms
from memtree.store.live import INDEXED, sql_list, status_clause

MIGRATIONS: list[tuple[str, Callable]] = []


def migration(fn: Callable) -> Callable:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


@migration
def m001_initial(db) -> None:
    idx = sql_list(INDEXED)
    db.execute(f"""
    CREATE TABLE nodes(
        id TEXT PRIMARY KEY,
        parent_id TEXT,
        kind TEXT NOT NULL,
        source_uri TEXT,
        content TEXT NOT NULL DEFAULT '',
        content_hash TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        mtime INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        truncated INTEGER NOT NULL DEFAULT 0,
        original_bytes INTEGER NOT NULL DEFAULT 0,
        metadata TEXT NOT NULL DEFAULT '{{}}',
        session_id TEXT
    );
    CREATE INDEX nodes_parent ON nodes(parent_id);
    CREATE INDEX nodes_status_created ON nodes(status, created_at);
    CREATE INDEX nodes_hash ON nodes(content_hash);
    CREATE INDEX nodes_source ON nodes(source_uri);
    CREATE INDEX nodes_session ON nodes(session_id);
    CREATE INDEX nodes_kind_created ON nodes(kind, created_at);

    CREATE TABLE edges(
        src_id TEXT NOT NULL,
        dst_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (src_id, dst_id, kind)
    ) WITHOUT ROWID;
    CREATE INDEX edges_dst ON edges(dst_id);

    -- External-content FTS5 over nodes; only indexed statuses are in it.
    CREATE VIRTUAL TABLE nodes_fts USING fts5(
        content, source_uri, content='nodes', content_rowid='rowid',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER nodes_fts_ins AFTER INSERT ON nodes WHEN new.status IN {idx} BEGIN
        INSERT INTO nodes_fts(rowid, content, source_uri) VALUES (new.rowid, new.content, new.source_uri);
    END;
    CREATE TRIGGER nodes_fts_del AFTER DELETE ON nodes WHEN old.status IN {idx} BEGIN
        INSERT INTO nodes_fts(nodes_fts, rowid, content, source_uri)
        VALUES ('delete', old.rowid, old.content, old.source_uri);
    END;
    CREATE TRIGGER nodes_fts_upd_out AFTER UPDATE OF content, source_uri, status ON nodes
    WHEN old.status IN {idx} AND (new.status NOT IN {idx}
        OR new.content IS NOT old.content OR new.source_uri IS NOT old.source_uri) BEGIN
        INSERT INTO nodes_fts(nodes_fts, rowid, content, source_uri)
        VALUES ('delete', old.rowid, old.content, old.source_uri);
    END;
    CREATE TRIGGER nodes_fts_upd_in AFTER UPDATE OF content, source_uri, status ON nodes
    WHEN new.status IN {idx} AND (old.status NOT IN {idx}
        OR new.content IS NOT old.content OR new.source_uri IS NOT old.source_uri) BEGIN
        INSERT INTO nodes_fts(rowid, content, source_uri) VALUES (new.rowid, new.content, new.source_uri);
    END;

    -- Vectors carry their model and dimension, so a model change is detected.
    CREATE TABLE nodes_vec(
        node_id TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        embedding BLOB NOT NULL,
        embedded_at INTEGER NOT NULL
    );

    CREATE TABLE audit(
        seq INTEGER PRIMARY KEY,
        at INTEGER NOT NULL,
        actor TEXT NOT NULL,
        action TEXT NOT NULL,
        node_id TEXT,
        from_status TEXT,
        to_status TEXT,
        reason TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '{{}}'
    );
    CREATE INDEX audit_node ON audit(node_id);

    CREATE TABLE tombstones(
        content_hash TEXT PRIMARY KEY,
        node_id TEXT,
        reason TEXT NOT NULL,
        at INTEGER NOT NULL
    );

    -- Spool entries already committed: a crash mid-drain never applies one twice.
    CREATE TABLE spool_applied(entry_id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID;

    CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
    """)


@migration
def m002_nodes_vec_model(db) -> None:
    # The model-safety check (store/vectors.check_model) asks "any vector of
    # another model?" on every semantic search: an index answers without a scan.
    db.execute("CREATE INDEX IF NOT EXISTS nodes_vec_model ON nodes_vec(model, dim)")


@migration
def m003_capture_keys(db) -> None:
    # One capture stored once: a hook payload's key (tool_use_id + hash of its
    # stored content) and the reply it got, honoured on the direct and the spool path.
    db.execute(
        "CREATE TABLE IF NOT EXISTS capture_keys(key TEXT PRIMARY KEY, result TEXT NOT NULL,"
        " at INTEGER NOT NULL) WITHOUT ROWID"
    )


@migration
def m004_bookkeeping_retention(db) -> None:
    # Bookkeeping has its own bounded retention (store/write/bookkeeping.py):
    # an applied-spool id is kept only while the draining file it guards exists
    # (``file`` names it), and audit rows past their share of the budget are
    # compacted into per-month counts.
    db.execute("ALTER TABLE spool_applied ADD COLUMN file TEXT")
    db.execute(
        "CREATE TABLE IF NOT EXISTS audit_rollup(month TEXT NOT NULL, actor TEXT NOT NULL, action TEXT NOT NULL,"
        " n INTEGER NOT NULL, first_at INTEGER NOT NULL, last_at INTEGER NOT NULL,"
        " PRIMARY KEY (month, actor, action)) WITHOUT ROWID"
    )


@migration
def m005_vector_index(db) -> None:
    # Sign-bit codes beside the vectors and a log of the nodes whose vector,
    # status, kind or time changed, so a reader's in-memory first pass
    # (store/vector_index.py) stays in step with every write path without
    # any of them knowing: the triggers run in the writer's transaction.
    from memtree.store.vector_index import code_of

    db.execute("ALTER TABLE nodes_vec ADD COLUMN code BLOB")
    rows = db.execute("SELECT rowid, embedding FROM nodes_vec").fetchall()
    db.executemany("UPDATE nodes_vec SET code = ? WHERE rowid = ?", [(code_of(e), r) for r, e in rows])
    # vec_log names nodes_vec rowids (the reader's key: one integer lookup per
    # rerank candidate). The covering index gives the reader a node's state
    # without reading the row, whose content (before status) overflows.
    db.execute("""
    CREATE INDEX nodes_id_state ON nodes(id, status, kind, created_at);
    CREATE TABLE vec_log(seq INTEGER PRIMARY KEY AUTOINCREMENT, vec_rowid INTEGER NOT NULL);
    CREATE TRIGGER vec_log_ins AFTER INSERT ON nodes_vec BEGIN
        INSERT INTO vec_log(vec_rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER vec_log_upd AFTER UPDATE ON nodes_vec BEGIN
        INSERT INTO vec_log(vec_rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER vec_log_del AFTER DELETE ON nodes_vec BEGIN
        INSERT INTO vec_log(vec_rowid) VALUES (old.rowid);
    END;
    CREATE TRIGGER vec_log_node AFTER UPDATE OF status, kind, created_at ON nodes
    WHEN old.status IS NOT new.status OR old.kind IS NOT new.kind OR old.created_at IS NOT new.created_at BEGIN
        INSERT INTO vec_log(vec_rowid) SELECT rowid FROM nodes_vec WHERE node_id = new.id;
    END;
    CREATE TRIGGER vec_log_node_del AFTER DELETE ON nodes BEGIN
        INSERT INTO vec_log(vec_rowid) SELECT rowid FROM nodes_vec WHERE node_id = old.id;
    END;
    INSERT OR IGNORE INTO counters(name, value) VALUES ('vec_log_trimmed', 0);
    """)


@migration
def m006_planner_stats(db) -> None:
    # Fixed planner statistics (memtree/store/planner_stats.py): without them SQLite
    # walked a whole-store index (every live node) for a file's or a node's few children.
    from memtree.store.planner_stats import pin

    pin(db)


@migration
def m007_fts_deferred(db) -> None:
    # The FTS triggers step aside for the rows a writer transaction inserted
    # (rowid above ``fts_defer.mark``, a row only while the writer's batch is
    # open): each statement that fires an FTS5 insert opens a statement
    # savepoint, and FTS5 flushes its pending terms to a new segment at every
    # savepoint, so a batch of n inserts wrote n segments for automerge to fold.
    # The writer indexes those rows in one statement before COMMIT
    # (memtree.store.write.fts.index_deferred); committed, the table is empty
    # and the triggers keep the index exact for any other write.
    # One update trigger, not m001's two: SQLite fires a row's triggers newest
    # first, so a content change ran the insert of the new text before the
    # delete of the old one, and the delete took the row out of the index.
    idx = sql_list(INDEXED)
    kept = "NOT EXISTS (SELECT 1 FROM fts_defer WHERE mark < {}.rowid)"
    db.execute(f"""
    CREATE TABLE fts_defer(mark INTEGER NOT NULL);
    DROP TRIGGER nodes_fts_ins;
    DROP TRIGGER nodes_fts_del;
    DROP TRIGGER nodes_fts_upd_out;
    DROP TRIGGER nodes_fts_upd_in;
    CREATE TRIGGER nodes_fts_ins AFTER INSERT ON nodes WHEN new.status IN {idx} AND {kept.format("new")} BEGIN
        INSERT INTO nodes_fts(rowid, content, source_uri) VALUES (new.rowid, new.content, new.source_uri);
    END;
    CREATE TRIGGER nodes_fts_del AFTER DELETE ON nodes WHEN old.status IN {idx} AND {kept.format("old")} BEGIN
        INSERT INTO nodes_fts(nodes_fts, rowid, content, source_uri)
        VALUES ('delete', old.rowid, old.content, old.source_uri);
    END;
    CREATE TRIGGER nodes_fts_upd AFTER UPDATE OF content, source_uri, status ON nodes
    WHEN (old.status IN {idx} OR new.status IN {idx}) AND ((old.status IN {idx}) IS NOT (new.status IN {idx})
        OR new.content IS NOT old.content OR new.source_uri IS NOT old.source_uri) AND {kept.format("new")} BEGIN
        INSERT INTO nodes_fts(nodes_fts, rowid, content, source_uri)
        SELECT 'delete', old.rowid, old.content, old.source_uri WHERE old.status IN {idx};
        INSERT INTO nodes_fts(rowid, content, source_uri)
        SELECT new.rowid, new.content, new.source_uri WHERE new.status IN {idx};
    END;
    """)
    # The rows that bug took out, back in (an anti-join on the docsize table, not a rebuild: a
    # big store starts at once); what their lost delete left in old segments goes with
    # `memtree doctor --fix`.
    where, params = status_clause("n", INDEXED)
    db.execute(
        f"INSERT INTO nodes_fts(rowid, content, source_uri) SELECT n.rowid, n.content, n.source_uri FROM nodes n"
        f" WHERE {where} AND n.rowid NOT IN (SELECT d.id FROM nodes_fts_docsize d)",
        params,
    )


@migration
def m008_fine_codes(db) -> None:
    # A 4-bit code beside each vector's sign bits (vector_index.fine_of): the
    # reader's second pass, so the exact rerank reads 200 vectors, not 1,000.
    # Filled in slices of rowids (a million vectors are 1 GB); the update
    # trigger steps aside meanwhile, or vec_log would name every vector: the
    # trigger's DDL changes the schema cookie, so a reader loads afresh anyway.
    from memtree.store.vector_index import fine_of

    db.execute("ALTER TABLE nodes_vec ADD COLUMN fine BLOB")
    db.execute("DROP TRIGGER vec_log_upd")
    after = 0
    while True:
        rows = db.execute(
            "SELECT rowid, embedding FROM nodes_vec WHERE rowid > ? ORDER BY rowid LIMIT 4096", (after,)
        ).fetchall()
        if not rows:
            break
        db.executemany("UPDATE nodes_vec SET fine = ? WHERE rowid = ?", [(fine_of(e), r) for r, e in rows])
        after = rows[-1][0]
    db.execute("""
    CREATE TRIGGER vec_log_upd AFTER UPDATE ON nodes_vec BEGIN
        INSERT INTO vec_log(vec_rowid) VALUES (new.rowid);
    END;
    """)


@migration
def m009_definitions(db) -> None:
    # The names each indexed row defines (memtree.text.definitions), so a search
    # for a symbol looks its definitions up: the FTS phrases "def name" OR "class
    # name" walked the doclists of "def" and "class" (half a million rows each
    # at a million) for every symbol queried. Its rows are the FTS index's, by
    # m007's conditions. The names are read by a Python function, which a
    # trigger cannot count on (any SQLite can write the file), so the triggers
    # only queue a row (``defined_todo``) and drop its names; the writer reads
    # the queue's before each COMMIT, and its deferred rows' at their own
    # indexing (memtree.store.write.fts). A row's names are dropped on delete
    # unconditionally: a row that had none deletes nothing.
    from memtree.store import defined
    from memtree.text import definitions

    definitions.register(db)  # store/db.py gives it to every connection; this one may be bare
    idx = sql_list(INDEXED)
    kept = "NOT EXISTS (SELECT 1 FROM fts_defer WHERE mark < {}.rowid)"
    db.execute(f"""
    CREATE TABLE defined(
        name TEXT NOT NULL,
        node_rowid INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (name, node_rowid)
    ) WITHOUT ROWID;
    CREATE INDEX defined_node ON defined(node_rowid);
    CREATE TABLE defined_todo(node_rowid INTEGER PRIMARY KEY);
    CREATE TRIGGER defined_ins AFTER INSERT ON nodes WHEN new.status IN {idx} AND {kept.format("new")} BEGIN
        INSERT OR IGNORE INTO defined_todo(node_rowid) VALUES (new.rowid);
    END;
    CREATE TRIGGER defined_del AFTER DELETE ON nodes BEGIN
        DELETE FROM defined WHERE node_rowid = old.rowid;
    END;
    CREATE TRIGGER defined_upd AFTER UPDATE OF content, status ON nodes
    WHEN (old.status IN {idx} OR new.status IN {idx}) AND ((old.status IN {idx}) IS NOT (new.status IN {idx})
        OR new.content IS NOT old.content) AND {kept.format("new")} BEGIN
        DELETE FROM defined WHERE node_rowid = old.rowid;
        INSERT OR IGNORE INTO defined_todo(node_rowid) SELECT new.rowid WHERE new.status IN {idx};
    END;
    """)
    where, params = status_clause("n", INDEXED)
    defined.add_names(db, where, params)


def migrate(db) -> list[str]:
    """Apply pending migrations; return the names applied now."""
    db.execute("CREATE TABLE IF NOT EXISTS schema_migrations(name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    done = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
    applied = []
    for name, fn in MIGRATIONS:
        if name in done:
            continue
        with db:  # one transaction: the migration and its bookkeeping row
            fn(db)
            db.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (?, ?)", (name, now_ms()))
        applied.append(name)
    return applied
