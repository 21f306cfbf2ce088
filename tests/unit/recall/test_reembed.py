"""Model safety on a real system: a store holding another model's vectors
refuses semantic search naming both models; `memtree reembed` (the real CLI)
rebuilds them with a progress bar, stops cleanly on Ctrl-C and resumes."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from memtree import protocol
from memtree.recall.embeddings import LOCAL_MODEL
from memtree.runtime.client import Caller
from memtree.store import db as store_db
from memtree.store.vectors import ModelMismatch, check_model, knn
from tests.support import COLD_START_S, PYTHON, deadline, deadline_ms, spawn, wait_until


@pytest.fixture()
def old_model_store(system_factory):
    """Nodes embedded by a model no longer configured (the embed walker off, so
    nothing but `memtree reembed` touches the vectors)."""
    s = system_factory
    s.write_config(actors={"walker.embed": {"enabled": False}})
    s.serve()
    s.wait_running([n for n in s.expected if n != "walker.embed"])
    w = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    ids = {}
    for i in range(120):
        text = f"def helper_{i}(): retry the request with exponential backoff, attempt {i}"
        ids[w.call(protocol.AddNode(kind="file_chunk", content=text, status="live"))["id"]] = text
    stale = w.call(protocol.AddNode(kind="note", content="an older note that went stale later", status="live"))["id"]
    w.call(protocol.SetStatus(ids=[stale], status="stale", reason="test"))
    hashes = dict(_rows(s, "SELECT id, content_hash FROM nodes"))
    items = [{"node_id": n, "content_hash": hashes[n], "vector": [1.0, 0.0, 0.0]} for n in [*ids, stale]]
    w.call(protocol.PutVectors(model="old-model", dim=3, items=items))
    w.close()
    return s, ids, stale


def _rows(s, sql, params=()):
    conn = store_db.open_read(s.paths.db)
    try:
        return [tuple(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def _reembed(s, *args, **kw):
    return s.cli("reembed", *args, timeout=deadline(120), **kw)


def test_mixed_model_store_is_refused_then_reembed_fixes_it(old_model_store):
    s, ids, stale = old_model_store
    conn = store_db.open_read(s.paths.db)
    try:
        with pytest.raises(ModelMismatch) as err:
            check_model(conn, LOCAL_MODEL, 256)
        assert "'old-model' (3 dims)" in err.value.message and f"'{LOCAL_MODEL}' (256 dims)" in err.value.message
        done = _reembed(s, "--batch", "50")
        assert done.returncode == 0, done.stderr
        assert "reembed [" in done.stderr and f"121 vectors stored with {LOCAL_MODEL}" in done.stderr
        assert _rows(s, "SELECT model, dim, count(*) FROM nodes_vec GROUP BY 1, 2") == [(LOCAL_MODEL, 256, 121)]
        check_model(conn, LOCAL_MODEL, 256)  # no longer refused
        from memtree.recall.embeddings import StaticProvider

        q = StaticProvider().embed([ids[next(iter(ids))]])[0]
        hits = knn(conn, q, 5)
        assert hits[0][0] == next(iter(ids)) and stale not in {h[0] for h in hits}  # live only
        again = _reembed(s)
        assert again.returncode == 0 and "0 vectors stored" in again.stderr
    finally:
        conn.close()


def test_reembed_stops_on_ctrl_c_and_a_second_run_resumes(old_model_store):
    s, ids, stale = old_model_store
    # Many one-vector batches, so reembed is still at work whatever the poll below costs on a busy box.
    w = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    more = [
        w.call(
            protocol.AddNode(kind="file_chunk", content=f"def extra_{i}(): parse the header, part {i}", status="live")
        )["id"]
        for i in range(1500)
    ]
    hashes = dict(_rows(s, "SELECT id, content_hash FROM nodes"))
    items = [{"node_id": n, "content_hash": hashes[n], "vector": [1.0, 0.0, 0.0]} for n in more]
    assert w.call(protocol.PutVectors(model="old-model", dim=3, items=items))["stored"] == 1500
    w.close()
    total = 121 + 1500
    poll = store_db.open_read(s.paths.db)  # one connection: each poll sees the newest commit, cheaply
    proc = spawn(
        [PYTHON, "-m", "memtree.cli", "reembed", "--batch", "1"],
        env=s.env,
        cwd=s.project,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def first_batch_in() -> bool:
        """Once a batch is committed (each is one commit), reembed is paused at once, so a
        busy machine cannot let it finish the other 120 before the Ctrl-C reaches it."""
        if poll.execute("SELECT count(*) FROM nodes_vec WHERE model = ?", (LOCAL_MODEL,)).fetchone()[0] == 0:
            return False
        proc.send_signal(signal.SIGSTOP)
        return True

    try:
        wait_until(first_batch_in, timeout=deadline(30), interval=0.005, what="the first re-embedded batch")
        proc.send_signal(signal.SIGINT)  # pending while it is stopped, handled as it goes on
        proc.send_signal(signal.SIGCONT)
        err = proc.communicate(timeout=deadline(30))[1].decode()
    finally:
        poll.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(deadline(5))
    counts = dict(((m, c) for m, _, c in _rows(s, "SELECT model, dim, count(*) FROM nodes_vec GROUP BY 1, 2")))
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    assert counts.get("old-model", 0) > 0 and counts[LOCAL_MODEL] > 0  # stopped part way
    done = _reembed(s)
    assert done.returncode == 0, done.stderr
    assert f"{counts['old-model']} vectors stored" in done.stderr  # only what was left
    assert _rows(s, "SELECT model, count(*) FROM nodes_vec GROUP BY 1") == [(LOCAL_MODEL, total)]


def test_the_embed_walker_moves_every_vector_to_the_configured_model_by_itself(system_factory):
    """After an upgrade that changes the default model: the live nodes' backlog first, then the
    other model's vectors of stale nodes too, so semantic search is not refused for good."""
    s = system_factory
    s.serve()
    s.wait_running(s.expected)
    w = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    try:
        ids = [
            w.call(protocol.AddNode(kind="note", content=f"note {i} about the retry policy", status="live"))["id"]
            for i in range(5)
        ]
        w.call(protocol.SetStatus(ids=ids[:2], status="stale", reason="test"))
        hashes = dict(_rows(s, "SELECT id, content_hash FROM nodes"))
        items = [{"node_id": n, "content_hash": hashes[n], "vector": [1.0, 0.0, 0.0]} for n in ids]
        assert w.call(protocol.PutVectors(model="old-model", dim=3, items=items))["stored"] == 5
        w.call(protocol.AddNode(kind="note", content="a new note wakes the walker", status="live"))
    finally:
        w.close()
    wait_until(
        lambda: _rows(s, "SELECT model, dim, count(*) FROM nodes_vec GROUP BY 1, 2") == [(LOCAL_MODEL, 256, 6)],
        timeout=COLD_START_S,
        what="every vector, the stale nodes' too, of the configured model",
    )
    conn = store_db.open_read(s.paths.db)
    try:
        check_model(conn, LOCAL_MODEL, 256)  # no longer refused
    finally:
        conn.close()


def test_reembed_without_a_running_writer_says_so(system_factory):
    done = _reembed(system_factory)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "no memtree store" in done.stderr and "Traceback" not in done.stderr
