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


def test_m008_gives_every_vector_its_4bit_code_and_the_first_pass_waits_for_it(tmp_path):
    """A store written before m008 has no 4-bit codes: a reader opened on it
    then answers KNN by the exact scan (the same nearest), and once migrated
    every vector has its code (filled without naming each one in vec_log), and
    the first pass answers the same."""
    import numpy as np

    from memtree.store import vector_index, vectors
    from memtree.store.schema import migrate

    path = str(tmp_path / "store.db")
    conn = apsw.Connection(path)
    names = [name for name, _ in MIGRATIONS]
    upto = names.index("m008_fine_codes")
    kept = MIGRATIONS[:]
    rng = np.random.default_rng(3)
    vecs = rng.standard_normal((800, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    try:
        MIGRATIONS[:] = kept[:upto]
        migrate(conn)
        with conn:
            for i, v in enumerate(vecs):
                conn.execute(
                    "INSERT INTO nodes(id, kind, content, content_hash, created_at, updated_at, status)"
                    " VALUES (?, 'file_chunk', 'c', 'h', 1, 1, 'live')",
                    (f"n{i}",),
                )
                conn.execute(
                    "INSERT INTO nodes_vec(node_id, model, dim, embedding, embedded_at, code) VALUES (?, 'm', 16, ?, 1, ?)",
                    (f"n{i}", v.tobytes(), vector_index.code_of(v)),
                )
        logged = conn.execute("SELECT count(*) FROM vec_log").fetchone()[0]
        assert logged == len(vecs)  # one row a vector inserted
        reader = store_db.open_read(path)
        query = vecs[5] + 0.05 * vecs[9]
        exact = [i for i, _ in vectors.knn(reader, query, 5)]
        assert exact[0] == "n5"
        assert vector_index.candidates(reader, "m", 16, query, {}, 100, keep=20) is None  # no codes yet
        assert [i for i, _ in vectors.knn(reader, query, 5, model="m")] == exact
        reader.close()
        MIGRATIONS[:] = kept
        assert migrate(conn) == names[upto:]
    finally:
        MIGRATIONS[:] = kept
    assert conn.execute("SELECT count(*), count(fine) FROM nodes_vec").fetchone() == (len(vecs), len(vecs))
    assert conn.execute("SELECT count(*) FROM vec_log").fetchone()[0] == logged  # the fill named none of them
    fine = dict(conn.execute("SELECT node_id, fine FROM nodes_vec"))
    assert fine["n7"] == vector_index.fine_of(vecs[7])
    conn.close()
    vector_index.forget_cache()
    reader = store_db.open_read(path)
    try:
        assert vector_index.candidates(reader, "m", 16, query, {}, 100, keep=20) is not None  # the first pass answers
        assert [i for i, _ in vectors.knn(reader, query, 5, model="m")] == exact
    finally:
        reader.close()
