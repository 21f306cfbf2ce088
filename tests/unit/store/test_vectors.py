"""Vectors through the real writer into a real SQLite file, read back with
sqlite-vec: KNN over live nodes only, filters inside the SQL, the model
check, and PutVectors/Supersede refusing what they must."""

from __future__ import annotations

import pytest

from memtree import protocol
from memtree.errors import BadRequest
from memtree.runtime.client import Caller
from memtree.store.vectors import ModelMismatch, check_model, knn
from tests.support import deadline, deadline_ms, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import read_db, rows, start_writer


@pytest.fixture()
def writer(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config())
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
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
    res = put(
        w,
        "m",
        2,
        [
            {"node_id": east, "content_hash": h_east, "vector": [1.0, 0.0]},
            {"node_id": north, "content_hash": h_north, "vector": [0.0, 1.0]},
            {"node_id": northish, "content_hash": h_northish, "vector": [0.3, 0.95]},
            {"node_id": gone, "content_hash": h_gone, "vector": [0.0, 1.0]},
            {"node_id": chunk, "content_hash": h_chunk, "vector": [0.01, 1.0]},
        ],
    )
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


def test_a_zero_vector_has_no_distance_and_is_left_out_of_every_knn(store, monkeypatch):
    from memtree.store import vector_index

    paths, w, node = store
    near, h_near = node("a note near the query")
    far, h_far = node("a note far from the query")
    empty, h_empty = node("a note of no known token")
    items = [
        {"node_id": near, "content_hash": h_near, "vector": [0.0, 1.0]},
        {"node_id": far, "content_hash": h_far, "vector": [1.0, 0.0]},
        {"node_id": empty, "content_hash": h_empty, "vector": [0.0, 0.0]},
    ]
    assert put(w, "m", 2, items) == {"stored": 3, "skipped": []}
    db = read_db(paths)
    try:
        assert [h[0] for h in knn(db, [0.0, 1.0], 10)] == [near, far]  # the exact scan
        monkeypatch.setattr(vector_index, "EXACT_FACTOR", 0)  # the first pass and its rerank
        assert [h[0] for h in knn(db, [0.0, 1.0], 10, model="m")] == [near, far]
    finally:
        db.close()


def test_put_vectors_skips_nodes_not_indexed_or_with_other_content_and_checks_shape(store):
    paths, w, node = store
    live, h_live = node("a live note with enough text")
    dropped, h_dropped = node("a note the filter dropped", status="pending")
    w.call(protocol.SetStatus(ids=[dropped], status="dropped", reason="test"))
    res = put(
        w,
        "m",
        2,
        [
            {"node_id": live, "content_hash": "not-its-hash", "vector": [1.0, 0.0]},
            {"node_id": dropped, "content_hash": h_dropped, "vector": [1.0, 0.0]},
        ],
    )
    assert res == {"stored": 0, "skipped": [live, dropped]}
    for bad in ([1.0], [1.0, "0"], [1.0, None], [1.0, [0.0]], "1.0,0.0"):
        with pytest.raises(BadRequest, match="must be 2 numbers"):
            put(w, "m", 2, [{"node_id": live, "content_hash": h_live, "vector": bad}])
    assert rows(paths, "SELECT count(*) FROM nodes_vec") == [(0,)]
    # A vector of another model for the same node replaces the old one.
    put(w, "m", 2, [{"node_id": live, "content_hash": h_live, "vector": [1.0, 0.0]}])
    put(w, "m2", 3, [{"node_id": live, "content_hash": h_live, "vector": [1.0, 0.0, 0.0]}])
    assert rows(paths, "SELECT node_id, model, dim FROM nodes_vec") == [(live, "m2", 3)]


def test_put_vectors_takes_base64_float32_and_refuses_what_is_not_dim_finite_numbers(store):
    """The embed walker sends base64 of the float32 bytes (store/vectors.to_wire);
    both forms store the same bytes and codes. A vector of the wrong length, bad
    base64, a NaN or an infinity is refused, and then nothing of the call is stored."""
    import base64
    import struct

    from memtree.store import vector_index
    from memtree.store.vectors import to_wire

    paths, w, node = store
    a, h_a = node("a note sent as a list")
    b, h_b = node("a note sent as base64")
    vec = [0.25, -1.5, 3.0]
    f32 = struct.pack("<3f", *vec)
    assert to_wire(vec) == base64.b64encode(f32).decode()
    bad_vectors = (
        base64.b64encode(struct.pack("<2f", 1.0, 2.0)).decode(),  # two numbers, not three
        base64.b64encode(f32).decode()[:-1],  # not base64 any more
        base64.b64encode(struct.pack("<3f", 1.0, float("nan"), 0.0)).decode(),
        base64.b64encode(struct.pack("<3f", float("inf"), 0.0, 0.0)).decode(),
        [1e39, 0.0, 0.0],  # past float32: an infinity
        {"b64": to_wire(vec)},
    )
    for bad in bad_vectors:
        items = [
            {"node_id": a, "content_hash": h_a, "vector": vec},  # a good one first: refused with the call
            {"node_id": b, "content_hash": h_b, "vector": bad},
        ]
        with pytest.raises(BadRequest, match=f"vector of {b} must be"):
            put(w, "m", 3, items)
    assert rows(paths, "SELECT count(*) FROM nodes_vec") == [(0,)]
    # Positive control: the list and the base64 of the same numbers store the same bytes and codes.
    res = put(
        w,
        "m",
        3,
        [
            {"node_id": a, "content_hash": h_a, "vector": vec},
            {"node_id": b, "content_hash": h_b, "vector": to_wire(vec)},
        ],
    )
    assert res == {"stored": 2, "skipped": []}
    want = (f32, vector_index.code_of(vec), vector_index.fine_of(vec))
    assert rows(paths, "SELECT node_id, embedding, code, fine FROM nodes_vec ORDER BY node_id") == sorted(
        [(a, *want), (b, *want)]
    )


def test_codes_of_many_vectors_are_the_one_vector_formulas():
    """vector_index.codes_of (PutVectors computes a call's codes at once) against
    the sign bits and 4-bit codes written out plainly for one vector at a time:
    random vectors of odd and even dimension, a zero vector, one with a NaN or
    an infinity (a query vector may hold one) and one of huge values."""
    import numpy as np

    from memtree.store import vector_index
    from memtree.store.vector_index import FINE_LEVELS

    def sign_bits(v):
        out = bytearray((len(v) + 63) // 64 * 8)
        for i, x in enumerate(v):
            if x > 0:
                out[i >> 3] |= 128 >> (i & 7)
        return bytes(out)

    def four_bits(v):
        top = float(np.abs(v).max())
        scale = top / FINE_LEVELS if top > 0 and np.isfinite(top) else 1.0
        q = np.clip(np.rint(np.nan_to_num(v) / np.float32(scale)), -FINE_LEVELS, FINE_LEVELS).astype(int) + 8
        q = list(q) + [8] * (len(q) % 2)
        return np.float32(scale).tobytes() + bytes(q[i] << 4 | q[i + 1] for i in range(0, len(q), 2))

    rng = np.random.default_rng(11)
    for dim in (3, 64, 255, 384):
        m = rng.standard_normal((40, dim)).astype(np.float32)
        m[1] = 0.0
        m[2, dim // 2] = np.nan
        m[3, 0] = np.inf
        m[4] *= np.float32(1e30)
        codes, fines = vector_index.codes_of(m)
        assert codes == [sign_bits(v) for v in m]
        assert fines == [four_bits(v) for v in m]
        assert [vector_index.code_of(v) for v in m] == codes
        assert [vector_index.fine_of(v.tobytes()) for v in m] == fines


def test_the_embed_walkers_lookups_return_exactly_their_nodes(store):
    """other_model_nodes (index ranges, not a scan), unembedded (by id) and newest, by set equality."""
    from memtree.store.vectors import newest, other_model_nodes, unembedded

    paths, w, node = store
    ids = {}
    for name in ("same", "other_dim", "other_model", "stale_other"):
        ids[name] = node(f"the {name} note, with a vector")
    ids["bare"] = node("a live note without a vector")
    ids["pending"] = node("a pending note without a vector", status="pending")
    ids["file_root"] = node("", kind="file")
    for name, model, dim in (("same", "m", 2), ("other_dim", "m", 3), ("other_model", "n", 2), ("stale_other", "a", 2)):
        nid, digest = ids[name]
        put(w, model, dim, [{"node_id": nid, "content_hash": digest, "vector": [1.0] + [0.0] * (dim - 1)}])
    w.call(protocol.SetStatus(ids=[ids["stale_other"][0]], status="stale", reason="test"))
    db = read_db(paths)
    try:
        got = {r[0] for r in other_model_nodes(db, "m", 2, 10)}
        assert got == {ids[k][0] for k in ("other_dim", "other_model", "stale_other")}
        asked = [i for i, _ in ids.values()] + ["no-such-id"]
        assert {r[0] for r in unembedded(db, "m", asked)} == {ids["bare"][0], ids["other_model"][0]}
        assert unembedded(db, "m", []) == []
        last = rows(paths, "SELECT created_at, id FROM nodes WHERE id = ?", (ids["bare"][0],))[0]
        assert newest(db) == tuple(last)  # the pending note and the file root came after it, and are not chunks
    finally:
        db.close()


def test_supersede_keeps_the_newer_with_edge_and_scored_audit_and_refuses_nonsense(store):
    paths, w, node = store
    old, _ = node("older near-duplicate output text", kind="tool_output")  # a note is superseded only word for word
    new, _ = node("newer near-duplicate output text", kind="tool_output")
    other_kind, _ = node("a chunk, another kind", kind="file_chunk")
    with pytest.raises(BadRequest, match="itself"):
        w.call(protocol.Supersede(keep_id=new, old_id=new, score=1.0))
    with pytest.raises(BadRequest, match="one kind"):
        w.call(protocol.Supersede(keep_id=other_kind, old_id=old, score=0.99))
    assert w.call(protocol.Supersede(keep_id=new, old_id=old, score=0.9812)) == {"superseded": True}
    assert rows(paths, "SELECT id, status FROM nodes WHERE id IN (?, ?) ORDER BY id", (old, new)) == sorted(
        [(old, "superseded"), (new, "live")]
    )
    assert rows(paths, "SELECT src_id, dst_id, kind FROM edges") == [(new, old, "supersedes")]
    audit = rows(paths, "SELECT node_id, reason, detail FROM audit WHERE action = 'supersede'")
    assert len(audit) == 1 and audit[0][0] == old and "0.9812" in audit[0][1] and '"score":0.9812' in audit[0][2]
    # Not live any more: a second supersede changes nothing.
    assert w.call(protocol.Supersede(keep_id=new, old_id=old, score=0.99)) == {"superseded": False}


def test_first_pass_never_lets_nearer_non_live_vectors_starve_the_live_hit(store, monkeypatch):
    """The sign-bit first pass cuts to RERANK candidates; 250 non-live vectors
    identical to the query and 600 live ones pointing away must not push the
    one live near vector out, and the cached pass follows status changes made
    after it loaded (the vec_log triggers)."""
    from memtree.store import vector_index

    monkeypatch.setattr(vector_index, "RERANK", 100)  # a cut well below the 250 hidden ones that keep vectors
    monkeypatch.setattr(vector_index, "RERANK_EXACT", 50)  # and by_fine keeps 50 of those 100 for k = 6
    paths, w, _node = store
    dim = 16
    query = [1.0] * dim
    away = [-1.0] * (dim - 1) + [1.0]

    def add(n, prefix, status="live"):
        # file chunks: notes are kept (no status change reaches them)
        ids = [
            w.call(protocol.AddNode(kind="file_chunk", content=f"{prefix} chunk number {i}", status=status))["id"]
            for i in range(n)
        ]
        hashes = dict(rows(paths, f"SELECT id, content_hash FROM nodes WHERE id IN ({','.join('?' * n)})", ids))
        return ids, hashes

    far, far_h = add(600, "far live")
    mid, mid_h = add(5, "middling live")
    near, near_h = add(300, "near hidden")
    (hit,), hit_h = add(1, "the live near")
    items = [{"node_id": i, "content_hash": far_h[i], "vector": away} for i in far]
    # Each a little further than the last (3 + j of 16 signs flipped): one right answer, no ties.
    items += [
        {"node_id": i, "content_hash": mid_h[i], "vector": [-1.0] * (3 + j) + [1.0] * (dim - 3 - j)}
        for j, i in enumerate(mid)
    ]
    items += [{"node_id": i, "content_hash": near_h[i], "vector": query} for i in near]
    items += [{"node_id": hit, "content_hash": hit_h[hit], "vector": [1.0] * (dim - 1) + [-1.0]}]
    for i in range(0, len(items), 300):
        assert put(w, "m", dim, items[i : i + 300])["skipped"] == []
    # Vectors first, statuses after: the way a live node later goes stale, superseded, dropped or pruned.
    # (dropped and pruned nodes lose their vectors; stale and superseded keep them.)
    for part, status in zip(
        (near[:150], near[150:250], near[250:275], near[275:]), ("stale", "superseded", "dropped", "pruned")
    ):
        assert sorted(w.call(protocol.SetStatus(ids=part, status=status, reason="test"))["changed"]) == sorted(part)
    db = read_db(paths)
    try:
        exact = [i for i, _ in knn(db, query, 6)]  # no model: the exact scan, the reference
        hits = [i for i, _ in knn(db, query, 6, model="m")]
        assert hits == exact == [hit, *mid]
        # Positive control: the hidden ones are what the first pass would have found unfiltered.
        stale = {i for i, _ in knn(db, query, 150, {"status": ["stale"]}, model="m")}
        assert stale == set(near[:150])
        # The cache loaded above; a status change after it must reach the next query.
        w.call(protocol.SetStatus(ids=[hit], status="stale", reason="test"))
        assert [i for i, _ in knn(db, query, 5, model="m")] == mid
        w.call(protocol.SetStatus(ids=near[:20], status="live", reason="test", expect=["stale"]))
        back = {i for i, _ in knn(db, query, 20, model="m")}
        assert back == set(near[:20])  # live again: found again, and nothing else ties with them
        w.call(protocol.Forget(node_id=near[0], reason="test"))
        assert {i for i, _ in knn(db, query, 19, model="m")} == set(near[1:20])
    finally:
        db.close()


def _file_bytes(paths) -> bytes:
    import os

    return b"".join(open(paths.db + s, "rb").read() for s in ("", "-wal") if os.path.exists(paths.db + s))


def test_forget_erases_the_vector_and_its_sign_bits_from_the_file(store):
    """A forgotten node's float vector and its first-pass code are gone from
    the raw bytes of the store and WAL; a kept node's stay (positive control)."""
    import random

    from memtree.store.vector_index import code_of
    from memtree.store.vectors import to_blob

    paths, w, node = store
    rng = random.Random(17)
    gone, h_gone = node("a note whose vector the user forgets")
    kept, h_kept = node("a note whose vector stays")
    vec_gone = [rng.uniform(-1, 1) for _ in range(256)]
    vec_kept = [rng.uniform(-1, 1) for _ in range(256)]
    put(
        w,
        "m",
        256,
        [
            {"node_id": gone, "content_hash": h_gone, "vector": vec_gone},
            {"node_id": kept, "content_hash": h_kept, "vector": vec_kept},
        ],
    )
    blob_gone, code_gone = to_blob(vec_gone), code_of(to_blob(vec_gone))
    blob_kept, code_kept = to_blob(vec_kept), code_of(to_blob(vec_kept))
    assert len(code_gone) == 32 and code_gone != code_kept
    assert rows(paths, "SELECT code FROM nodes_vec WHERE node_id = ?", (gone,)) == [(code_gone,)]
    raw = _file_bytes(paths)
    assert blob_gone in raw and code_gone in raw  # the scan below can see them
    w.call(protocol.Forget(node_id=gone, reason="test"))
    # The writer truncates the WAL right after a Forget's commit: wait for it.
    wait_until(lambda: blob_gone not in _file_bytes(paths), timeout=deadline(10), what="the forgotten vector off disk")
    raw = _file_bytes(paths)
    assert code_gone not in raw
    assert blob_kept in raw and code_kept in raw


def test_a_vacuum_behind_a_loaded_first_pass_makes_it_load_again(store, monkeypatch):
    """A VACUUM may renumber vector rowids with no vec_log entry; the reader's
    cached first pass notices the schema cookie it bumps and loads again, and
    answers exactly as the exact scan does before and after."""
    import math

    import apsw

    from memtree.store import vector_index

    monkeypatch.setattr(vector_index, "RERANK", 20)  # the first pass answers (more than 3 x 20 live vectors)
    paths, w, _node = store
    dim = 16
    ids = [
        w.call(protocol.AddNode(kind="file_chunk", content=f"vacuum chunk {i}", status="live"))["id"] for i in range(90)
    ]
    hashes = dict(rows(paths, f"SELECT id, content_hash FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids))
    vecs = {nid: [math.sin(j * 1.3 + k * 0.7 + j * k * 0.01) for k in range(dim)] for j, nid in enumerate(ids)}
    assert (
        put(w, "m", dim, [{"node_id": i, "content_hash": hashes[i], "vector": vecs[i]} for i in ids])["skipped"] == []
    )
    for nid in ids[:10]:  # holes below the rest
        w.call(protocol.Forget(node_id=nid, reason="test"))
    query = vecs[ids[40]]
    db = read_db(paths)
    try:
        first = [i for i, _ in knn(db, query, 5, model="m")]
        assert first == [i for i, _ in knn(db, query, 5)] and ids[40] in first
        (idx,) = [v for k, v in vector_index._CACHE.items() if k[0] == paths.db and k[4] == "m"]
        loaded_under = idx.schema
        maint = apsw.Connection(paths.db)
        try:
            maint.set_busy_timeout(10_000)
            maint.execute("VACUUM")
        finally:
            maint.close()
        assert db.execute("PRAGMA schema_version").fetchone()[0] != loaded_under  # the VACUUM bumped it
        again = [i for i, _ in knn(db, query, 5, model="m")]
        assert idx.schema != loaded_under  # loaded again under the new cookie
        assert again == [i for i, _ in knn(db, query, 5)] == first
    finally:
        db.close()


def test_by_fine_orders_slots_by_the_query_against_their_4bit_codes():
    """The second pass: each slot's score is the query's dot product with its
    4-bit code decoded (fine_of: levels -7..7 times the vector's scale), in
    slices of any size; and it tells apart two vectors whose sign bits agree,
    the nearer first."""
    import numpy as np

    from memtree.store import vector_index

    rng = np.random.default_rng(7)
    dim = 255  # odd: the last byte is half padding
    vecs = rng.standard_normal((500, dim)).astype(np.float32)
    rows = [(i, vector_index.code_of(v), vector_index.fine_of(v), "live", "file_chunk", 0) for i, v in enumerate(vecs)]
    idx = vector_index._Codes(np, 4, dim)
    idx.apply(rows)
    q = rng.standard_normal(dim).astype(np.float32)
    slots = rng.permutation(500)[:300]

    def decoded(v):
        blob = vector_index.fine_of(v)
        scale = np.frombuffer(blob[:4], "<f4")[0]
        b = np.frombuffer(blob[4:], np.uint8).astype(np.int64)
        levels = np.stack([(b >> 4) - 8, (b & 15) - 8], 1).reshape(-1)[:dim]
        assert levels.min() >= -7 and levels.max() <= 7
        assert np.abs(levels * scale - v).max() <= scale / 2 + 1e-6  # within half a level
        return levels * np.float64(scale)

    est = np.array([decoded(v) @ q.astype(np.float64) for v in vecs[slots]])
    want = np.argsort(-est, kind="stable")
    for step in (7, 1024):
        got = vector_index.by_fine(idx, slots, q.tobytes(), dim, step=step)
        assert got[:50].tolist() == want[:50].tolist()
        assert sorted(got.tolist()) == list(range(300))
        # The best 50 only: the same 50, in the same order.
        assert vector_index.by_fine(idx, slots, q.tobytes(), dim, step=step, keep=50).tolist() == want[:50].tolist()
    # Same signs everywhere, so the same Hamming distance: the 4-bit codes put the
    # vector that leans the query's way first.
    q2 = np.array([3.0, 0.1] + [0.0] * 62, np.float32)
    near = np.array([0.9, 0.1] + [0.05] * 62, np.float32)
    far = np.array([0.1, 0.9] + [0.05] * 62, np.float32)
    assert vector_index.code_of(near) == vector_index.code_of(far)
    two = vector_index._Codes(np, 1, 64)
    two.apply(
        [
            (1, vector_index.code_of(far), vector_index.fine_of(far), "live", "note", 0),
            (2, vector_index.code_of(near), vector_index.fine_of(near), "live", "note", 0),
        ]
    )
    assert vector_index.by_fine(two, np.array([0, 1]), q2, 64).tolist() == [1, 0]


def test_the_first_pass_drops_the_slots_of_vectors_that_left(store, monkeypatch):
    """A store under a budget renews its vectors (new ones take new rowids):
    the cached first pass keeps a slot per vector that left only until they
    outnumber GONE_MAX and the slots still held, so its arrays stay within
    twice the vectors present, and it answers as the exact scan does after."""
    from memtree.store import vector_index

    monkeypatch.setattr(vector_index, "RERANK", 10)  # the first pass answers (more than 3 x 10 live vectors)
    monkeypatch.setattr(vector_index, "GONE_MAX", 8)
    paths, w, _node = store
    dim = 16
    ids = [
        w.call(protocol.AddNode(kind="file_chunk", content=f"renewed chunk {i}", status="live"))["id"]
        for i in range(60)
    ]
    hashes = dict(rows(paths, f"SELECT id, content_hash FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids))
    vecs = {nid: [(-1.0) ** (j >> k & 1) for k in range(dim)] for j, nid in enumerate(ids)}
    assert (
        put(w, "m", dim, [{"node_id": i, "content_hash": hashes[i], "vector": vecs[i]} for i in ids])["skipped"] == []
    )
    query = vecs[ids[50]]
    db = read_db(paths)
    try:
        assert knn(db, query, 1, model="m")[0][0] == ids[50]
        (idx,) = [v for k, v in vector_index._CACHE.items() if k[0] == paths.db and k[4] == "m"]
        assert len(idx.rowids) == 60
        # Positive control: a few gone (5 <= max(8, 55 held)) keep their slots.
        assert sorted(w.call(protocol.SetStatus(ids=ids[:5], status="dropped", reason="test"))["changed"]) == sorted(
            ids[:5]
        )
        knn(db, query, 1, model="m")
        assert len(idx.rowids) == 60 and int((idx.status == vector_index.GONE).sum()) == 5
        # 40 gone, 20 held: the gone slots go, the order and the answers stay.
        assert len(w.call(protocol.SetStatus(ids=ids[5:40], status="dropped", reason="test"))["changed"]) == 35
        hits = [i for i, _ in knn(db, query, 5, model="m")]
        assert len(idx.rowids) == 20 and not (idx.status == vector_index.GONE).any()
        assert list(idx.rowids) == sorted(idx.rowids)
        assert hits == [i for i, _ in knn(db, query, 5)] and hits[0] == ids[50]
    finally:
        db.close()
