"""Vectors through the real writer into a real SQLite file, read back with
sqlite-vec: KNN over live nodes only, filters inside the SQL, the model
check, and PutVectors/Supersede refusing what they must."""

from __future__ import annotations

import pytest

from memtree import protocol
from memtree.runtime.client import Caller
from memtree.errors import BadRequest
from memtree.store.vectors import ModelMismatch, check_model, knn
from tests.actor_procs import read_db, rows, start_writer
from tests.support import make_paths, reap
from tests.support import test_config as make_config


@pytest.fixture()
def writer(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config())
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=10000)
    yield paths, caller
    caller.close()
    reap(proc)


@pytest.fixture()
def store(writer):
    paths, w = writer

    def node(content, kind="note", status="live"):
        nid = w.call(protocol.AddNode(kind=kind, content=content, status=status))["id"]
        return nid, rows(paths, "SELECT content_hash FROM nodes WHERE id=?", (nid,))[0][0]

    return paths, w, node


def put(w, model, dim, items):
    return w.call(protocol.PutVectors(model=model, dim=dim, items=items))


def test_knn_ranks_live_nodes_by_cosine_and_leaves_out_the_rest(store):
    paths, w, node = store
    east, h_east = node("east pointing note")
    north, h_north = node("north pointing note")
    northish, h_northish = node("north-north-east note")
    gone, h_gone = node("a north note the user forgets")
    chunk, h_chunk = node("north as a file chunk", kind="file_chunk")
    res = put(w, "m", 2, [
        {"node_id": east, "content_hash": h_east, "vector": [1.0, 0.0]},
        {"node_id": north, "content_hash": h_north, "vector": [0.0, 1.0]},
        {"node_id": northish, "content_hash": h_northish, "vector": [0.3, 0.95]},
        {"node_id": gone, "content_hash": h_gone, "vector": [0.0, 1.0]},
        {"node_id": chunk, "content_hash": h_chunk, "vector": [0.01, 1.0]},
    ])
    assert res == {"stored": 5, "skipped": []}
    w.call(protocol.Forget(node_id=gone, reason="test"))
    db = read_db(paths)
    try:
        hits = knn(db, [0.0, 1.0], 10)
        assert [h[0] for h in hits][:3] == [north, chunk, northish]
        assert {h[0] for h in hits} == {north, chunk, northish, east}  # the forgotten one never
        assert hits[0][1] == pytest.approx(0.0, abs=1e-6) and hits[-1][0] == east
        assert [h[0] for h in knn(db, [0.0, 1.0], 10, {"kind": ["file_chunk"]})] == [chunk]
        assert [h[0] for h in knn(db, [0.0, 1.0], 1)] == [north]
        check_model(db, "m", 2)  # same model: fine
        with pytest.raises(ModelMismatch) as err:
            check_model(db, "other-model", 384)
        assert "'m' (2 dims)" in err.value.message and "'other-model' (384 dims)" in err.value.message
        assert "memtree reembed" in err.value.message
    finally:
        db.close()


def test_put_vectors_skips_nodes_not_indexed_or_with_other_content_and_checks_shape(store):
    paths, w, node = store
    live, h_live = node("a live note with enough text")
    dropped, h_dropped = node("a note the filter dropped", status="pending")
    w.call(protocol.SetStatus(ids=[dropped], status="dropped", reason="test"))
    res = put(w, "m", 2, [
        {"node_id": live, "content_hash": "not-its-hash", "vector": [1.0, 0.0]},
        {"node_id": dropped, "content_hash": h_dropped, "vector": [1.0, 0.0]},
    ])
    assert res == {"stored": 0, "skipped": [live, dropped]}
    with pytest.raises(BadRequest, match="must be 2 numbers"):
        put(w, "m", 2, [{"node_id": live, "content_hash": h_live, "vector": [1.0]}])
    assert rows(paths, "SELECT count(*) FROM nodes_vec") == [(0,)]
    # A vector of another model for the same node replaces the old one.
    put(w, "m", 2, [{"node_id": live, "content_hash": h_live, "vector": [1.0, 0.0]}])
    put(w, "m2", 3, [{"node_id": live, "content_hash": h_live, "vector": [1.0, 0.0, 0.0]}])
    assert rows(paths, "SELECT node_id, model, dim FROM nodes_vec") == [(live, "m2", 3)]


def test_supersede_keeps_the_newer_with_edge_and_scored_audit_and_refuses_nonsense(store):
    paths, w, node = store
    old, _ = node("older near-duplicate note text")
    new, _ = node("newer near-duplicate note text")
    other_kind, _ = node("a chunk, another kind", kind="file_chunk")
    with pytest.raises(BadRequest, match="itself"):
        w.call(protocol.Supersede(keep_id=new, old_id=new, score=1.0))
    with pytest.raises(BadRequest, match="one kind"):
        w.call(protocol.Supersede(keep_id=other_kind, old_id=old, score=0.99))
    assert w.call(protocol.Supersede(keep_id=new, old_id=old, score=0.9812)) == {"superseded": True}
    assert rows(paths, "SELECT id, status FROM nodes WHERE id IN (?, ?) ORDER BY id", (old, new)) == \
        sorted([(old, "superseded"), (new, "live")])
    assert rows(paths, "SELECT src_id, dst_id, kind FROM edges") == [(new, old, "supersedes")]
    audit = rows(paths, "SELECT node_id, reason, detail FROM audit WHERE action = 'supersede'")
    assert len(audit) == 1 and audit[0][0] == old and "0.9812" in audit[0][1] and '"score":0.9812' in audit[0][2]
    # Not live any more: a second supersede changes nothing.
    assert w.call(protocol.Supersede(keep_id=new, old_id=old, score=0.99)) == {"superseded": False}
