"""Migrations run once, in order, and leave existing data alone."""

from __future__ import annotations

import os
import stat

import apsw
import pytest

from memtree.store import db as store_db
from memtree.store.schema import MIGRATIONS


def test_migrations_apply_once_and_keep_rows_on_reopen(tmp_path):
    path = str(tmp_path / "store.db")
    conn = store_db.open_write(path)
    applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    assert applied == [name for name, _ in MIGRATIONS] and applied[0] == "m001_initial"
    conn.execute(
        "INSERT INTO nodes(id, kind, content, content_hash, created_at, updated_at, status)"
        " VALUES ('N1', 'note', 'kept across reopen', 'h', 1, 1, 'live')"
    )
    conn.close()

    again = store_db.open_write(path)  # a second writer start on an existing store
    try:
        assert [tuple(r) for r in again.execute("SELECT name FROM schema_migrations")] == [(n,) for n, _ in MIGRATIONS]
        assert again.execute("SELECT id, content FROM nodes").fetchall() == [("N1", "kept across reopen")]
        # the FTS triggers still index the row written before the reopen
        assert again.execute("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH 'reopen'").fetchall() != []
        assert again.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        again.close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_a_reader_cannot_write(tmp_path):
    path = str(tmp_path / "store.db")
    store_db.open_write(path).close()
    reader = store_db.open_read(path)
    try:
        with pytest.raises(apsw.ReadOnlyError):
            reader.execute("INSERT INTO counters(name, value) VALUES ('x', 1)")
    finally:
        reader.close()


def test_m007_puts_back_the_rows_a_content_change_took_out_of_the_fts_index(tmp_path):
    from memtree.store import integrity
    from memtree.store.schema import migrate

    path = str(tmp_path / "store.db")
    conn = apsw.Connection(path)
    names = [name for name, _ in MIGRATIONS]
    upto = names.index("m007_fts_deferred")
    kept = MIGRATIONS[:]
    try:
        MIGRATIONS[:] = kept[:upto]  # a store written before m007
        migrate(conn)
        for nid, text in (("rewritten", "quoted lines before the scrub"), ("untouched", "never changed")):
            conn.execute(
                "INSERT INTO nodes(id, kind, content, content_hash, created_at, updated_at, status)"
                " VALUES (?, 'note', ?, 'h', 1, 1, 'live')",
                (nid, text),
            )
        with conn:  # m001's update triggers: the new text in, then the row out
            conn.execute("UPDATE nodes SET content = 'scrubbed remainder' WHERE id = 'rewritten'")
        assert integrity.check(path)[0] == ["1 searchable nodes missing from the FTS index"]
        MIGRATIONS[:] = kept
        assert migrate(conn) == names[upto:]
    finally:
        MIGRATIONS[:] = kept
    hits = conn.execute(
        "SELECT n.id FROM nodes_fts f JOIN nodes n ON n.rowid = f.rowid WHERE nodes_fts MATCH 'remainder OR changed'"
    ).fetchall()
    assert sorted(h[0] for h in hits) == ["rewritten", "untouched"]
    assert integrity.check(path)[0] == []
    conn.close()
