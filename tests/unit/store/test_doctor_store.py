"""`memtree doctor`'s store check on a real running system: the vectors the
writer keeps on purpose (stale and superseded nodes) are healthy; vectors of
purged or forgotten nodes, nodes missing from the FTS index and FTS rows of
missing nodes are damage, each named, and `--fix` repairs exactly that."""

from __future__ import annotations

import apsw

from memtree import protocol
from memtree.recall.embeddings import LOCAL_MODEL
from memtree.runtime.client import Caller
from tests.support import deadline_ms
from tests.support.actor_procs import rows
from tests.unit.ops.test_doctor import doctor

DIM = 256  # the bundled model's dimension, so the embed walker's own vectors do not mix with these


def _vec(axis: int) -> list[float]:
    v = [0.0] * DIM
    v[axis % DIM] = 1.0
    return v


def test_kept_vectors_of_stale_and_superseded_nodes_are_healthy_and_real_damage_is_named_and_fixed(system):
    w = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        ids = {
            name: w.call(
                protocol.AddNode(kind="tool_output", content=f"doctor store check row {name} " * 4, status="live")
            )["id"]
            for name in ("live", "stale", "old", "new", "forgotten", "purged")
        }
        hashes = dict(rows(system.paths, "SELECT id, content_hash FROM nodes"))
        w.call(
            protocol.PutVectors(
                model=LOCAL_MODEL,
                dim=DIM,
                items=[
                    {"node_id": nid, "content_hash": hashes[nid], "vector": _vec(i)}
                    for i, nid in enumerate(ids.values())
                ],
            )
        )
        w.call(protocol.SetStatus(ids=[ids["stale"]], status="stale", reason="file changed"))
        assert w.call(protocol.Supersede(keep_id=ids["new"], old_id=ids["old"], score=0.99))["superseded"]
    finally:
        w.close()
    kept = {ids[n] for n in ("live", "stale", "old", "new", "forgotten", "purged")}
    assert {r[0] for r in rows(system.paths, "SELECT node_id FROM nodes_vec")} == kept

    code, checks = doctor(system)
    assert checks["store"]["status"] == "ok", checks["store"]  # stale and superseded keep their vectors on purpose
    assert f"{len(kept)} vectors" in checks["store"]["message"]

    # Damage, each of its own kind, made behind the writer's back.
    db = apsw.Connection(system.paths.db)
    db.set_busy_timeout(5000)
    with db:
        # a vector left behind by a forgotten node, and one whose node row was purged
        db.execute("UPDATE nodes SET status = 'forgotten', content = '' WHERE id = ?", (ids["forgotten"],))
        db.execute("DELETE FROM nodes WHERE id = ?", (ids["purged"],))
        # a searchable node missing from the FTS index, and an FTS row of no node
        rowid, content, uri = db.execute(
            "SELECT rowid, content, source_uri FROM nodes WHERE id = ?", (ids["live"],)
        ).fetchone()
        db.execute(
            "INSERT INTO nodes_fts(nodes_fts, rowid, content, source_uri) VALUES('delete', ?, ?, ?)",
            (rowid, content, uri),
        )
        db.execute("INSERT INTO nodes_fts(rowid, content, source_uri) VALUES (987654321, 'ghost row', '')")
    db.close()
    code, checks = doctor(system)
    msg = checks["store"]["message"]
    assert checks["store"]["status"] == "FAIL", checks["store"]
    assert "2 vectors belong to purged or forgotten nodes" in msg, msg
    assert "1 searchable nodes missing from the FTS index" in msg, msg
    assert "1 FTS rows of no searchable node" in msg, msg

    code, checks = doctor(system, "--fix")
    assert checks["store"]["status"] == "ok" and checks["store"]["message"].startswith("fixed"), checks["store"]
    # Exactly the stray vectors went; the kept ones stay.
    assert {r[0] for r in rows(system.paths, "SELECT node_id FROM nodes_vec")} == {
        ids[n] for n in ("live", "stale", "old", "new")
    }
    assert rows(system.paths, "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH 'ghost'") == [(0,)]
