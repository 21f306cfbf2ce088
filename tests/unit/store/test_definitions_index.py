"""The index of definitions (schema m009, memtree.text.definitions): after
every commit it holds exactly the names the FTS index's rows define, however
the rows got there (the writer's triggers, its deferred batch, a bare SQLite
connection, a rebuild, a migration), and a search for a symbol reads its
definitions from it, filtered by the live predicate and ranked as FTS5's
MATCH of ``"def name" OR "class name"`` ranked them. Real SQLite files, a
real writer process."""

from __future__ import annotations

import apsw
import pytest

from memtree import protocol
from memtree.recall import search
from memtree.store import integrity, reads
from memtree.store.live import INDEXED
from memtree.store.schema import MIGRATIONS, migrate
from memtree.store.write import mutations
from memtree.store.write.mutations import Tx
from memtree.text import definitions
from tests.support import make_paths
from tests.support import test_config as make_config
from tests.support.actor_procs import read_db, running_writer
from tests.support.store_rows import insert, writer_tx


def indexed(db) -> set[tuple[str, str, int]]:
    rows = db.execute("SELECT n.id, d.name, d.n FROM defined d JOIN nodes n ON n.rowid = d.node_rowid")
    return {tuple(r) for r in rows}


def expected(db) -> set[tuple[str, str, int]]:
    """What the index should hold: every indexed row's names, read afresh."""
    marks = ",".join("?" * len(INDEXED))
    rows = db.execute(f"SELECT id, content FROM nodes WHERE status IN ({marks})", INDEXED)
    return {(i, name, n) for i, text in rows for name, n in definitions.folded_counts(text).items()}


def test_names_are_found_anywhere_a_def_or_class_phrase_is_and_folded():
    text = "class Session:\n    async def get_in(self):\n        pass\n\npublic class Job {}\nmy_def nope\ndef get_in(): ..."
    assert definitions.folded_counts(text) == {"session": 1, "get_in": 2, "job": 1}
    assert definitions.folded_counts("no definitions, a classic default") == {}
    assert definitions.defines(text, "get_in") and definitions.defines(text, "Session")
    assert not definitions.defines(text, "Job")  # ranking's boost: a line that starts with the definition


def test_every_way_a_row_changes_leaves_the_index_exact(db, path):
    def first():
        insert(db, "plain", "def alpha():\n    return 1\nclass Beta: pass")
        insert(db, "hidden", "def gamma(): pass", status="dropped")  # not indexed: no names
        insert(db, "prose", "nothing defined here")

    writer_tx(db, first, deferred=False)
    assert indexed(db) == {("plain", "alpha", 1), ("plain", "beta", 1)}  # positive control, by hand
    assert indexed(db) == expected(db)

    def batch():  # the writer's deferred rows: added, changed and dropped inside the transaction
        insert(db, "batch-kept", "def delta(): pass\ndef delta(): pass")
        insert(db, "batch-rewritten", "def epsilon(): pass")
        insert(db, "batch-dropped", "def zeta(): pass")
        db.execute("UPDATE nodes SET content = 'class Eta: pass' WHERE id = 'batch-rewritten'")
        db.execute("UPDATE nodes SET status = 'dropped' WHERE id = 'batch-dropped'")

    writer_tx(db, batch)
    assert {r for r in indexed(db) if r[0].startswith("batch")} == {
        ("batch-kept", "delta", 2),
        ("batch-rewritten", "eta", 1),
    }
    assert indexed(db) == expected(db)

    def changes():
        db.execute("UPDATE nodes SET content = 'def theta(): pass' WHERE id = 'plain'")  # alpha, beta gone
        db.execute("UPDATE nodes SET status = 'live' WHERE id = 'hidden'")  # gamma in
        db.execute("UPDATE nodes SET status = 'stale' WHERE id = 'batch-kept'")  # still indexed: delta stays
        db.execute("DELETE FROM nodes WHERE id = 'batch-rewritten'")  # eta gone

    writer_tx(db, changes, deferred=False)
    assert indexed(db) == {("plain", "theta", 1), ("hidden", "gamma", 1), ("batch-kept", "delta", 2)}
    assert indexed(db) == expected(db)

    # A bare SQLite connection (no memtree function) can still write: its rows wait in
    # the queue, their names gone at once, and the writer's next commit reads the new ones.
    bare = apsw.Connection(path)
    bare.set_busy_timeout(5000)
    with bare:
        insert(bare, "bare", "class Iota: pass")
        bare.execute("UPDATE nodes SET content = 'def kappa(): pass' WHERE id = 'plain'")
    bare.close()
    assert ("plain", "theta", 1) not in indexed(db) and not {r for r in indexed(db) if r[0] == "bare"}
    writer_tx(db, lambda: None, deferred=False)
    assert indexed(db) == expected(db) >= {("bare", "iota", 1), ("plain", "kappa", 1)}
    assert db.execute("SELECT count(*) FROM defined_todo").fetchone()[0] == 0
    assert integrity.check(path)[0] == []


def test_damage_is_named_by_doctor_and_rebuilt_from_nodes(db, path):
    writer_tx(db, lambda: (insert(db, "a", "def lam(): pass"), insert(db, "b", "class Mu: pass")), deferred=False)
    with db:  # a stray name (its node out of the index) and a lost one
        db.execute("INSERT INTO defined(name, node_rowid, n) VALUES ('nu', 999, 1)")
        db.execute("DELETE FROM defined WHERE name = 'mu'")
    assert integrity.check(path)[0] == ["1 nodes out of the FTS index keep their definitions indexed"]
    with db:
        mutations.rebuild_indexes(Tx(db, make_config(), "test"), "test")
    assert indexed(db) == expected(db) == {("a", "lam", 1), ("b", "mu", 1)}
    assert integrity.check(path)[0] == []


def test_a_store_from_before_m009_gets_the_names_of_its_indexed_rows(tmp_path):
    path = str(tmp_path / "store.db")
    conn = apsw.Connection(path)  # bare: the migration brings its own function
    names = [name for name, _ in MIGRATIONS]
    upto = names.index("m009_definitions")
    kept = MIGRATIONS[:]
    try:
        MIGRATIONS[:] = kept[:upto]
        migrate(conn)
        insert(conn, "old", "def omicron(): pass\nclass Pi: pass")
        insert(conn, "gone", "def rho(): pass", status="forgotten")
        MIGRATIONS[:] = kept
        assert migrate(conn) == names[upto:]
    finally:
        MIGRATIONS[:] = kept
    assert indexed(conn) == {("old", "omicron", 1), ("old", "pi", 1)}
    conn.close()


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    paths = make_paths(tmp_path_factory.mktemp("defining"))
    with running_writer(paths, make_config()) as w:

        def add(content):
            return w.call(protocol.AddNode(kind="note", content=content, status="live"))["id"]

        ids = {
            "short": add("def get_in(keys, coll):\n    return coll"),
            "long": add("def get_in(path, cfg):\n" + "    x = step(x)\n" * 40),
            "twice": add("def get_in(a): pass\n\ndef get_in(a, b): pass"),
            "klass": add("class Get_In:\n    pass"),
            "other": add("def get_into(x): pass\nget_in is called here but not defined"),
            "stale": add("def get_in(hidden): pass"),
            "filler": add("def unrelated(): pass"),
        }
        assert w.call(protocol.SetStatus(ids=[ids["stale"]], status="stale", reason="test"))["changed"] == [
            ids["stale"]
        ]
        yield paths, ids, w


def test_a_symbols_definitions_come_from_the_index_filtered_and_ranked_as_fts5_ranked_them(store):
    paths, ids, _ = store
    conn = read_db(paths)
    try:
        got = search.defining_candidates(conn, "get_in", {})
        want = {ids[k] for k in ("short", "long", "twice", "klass")}
        assert {r[0]["id"] for r in got} == want  # not get_into, not the mere mention, not the stale one
        stale = search.defining_candidates(conn, "get_in", {"status": ["stale"]})
        assert {r[0]["id"] for r in stale} == {ids["stale"]}  # positive control: the hidden row is there
        # FTS5's ranking of the phrases, with equally rare counts (as the search ran it before).
        fts_rank = conn.execute(
            "SELECT n.id, -memtree_bm25(nodes_fts, 1, 1) FROM nodes_fts JOIN nodes n ON n.rowid = nodes_fts.rowid"
            " WHERE nodes_fts MATCH '\"def get_in\" OR \"class get_in\"' AND n.status = 'live' ORDER BY 2 DESC"
        ).fetchall()
        assert [r[0] for r in fts_rank] == [r[0]["id"] for r in got]
        assert all(abs(a[1] - b[1]) < 1e-9 for a, b in zip(fts_rank, got, strict=True))
        assert got[0][0]["id"] == ids["twice"]  # two definitions in a short row rank first
        assert reads.defining(conn, ["GET_IN", "get_in"], {}, 2) == got[:2]  # folded, deduplicated, limited
    finally:
        conn.close()


def test_the_writer_indexes_each_commits_names_and_a_bare_connections_at_its_next(store):
    paths, ids, w = store
    node = w.call(protocol.AddNode(kind="note", content="class Sigma: pass", status="live"))["id"]
    conn = read_db(paths)
    try:
        assert {r[0]["id"] for r in search.defining_candidates(conn, "sigma", {})} == {node}
        bare = apsw.Connection(paths.db)
        bare.set_busy_timeout(5000)
        with bare:
            bare.execute("UPDATE nodes SET content = 'class Tau: pass' WHERE id = ?", (node,))
        bare.close()
        assert search.defining_candidates(conn, "sigma", {}) == []
        assert search.defining_candidates(conn, "tau", {}) == []  # queued
        w.call(protocol.AddNode(kind="note", content="any write commits", status="live"))
        assert {r[0]["id"] for r in search.defining_candidates(conn, "tau", {})} == {node}
    finally:
        conn.close()
