"""The dedupe walker as a real process beside the real writer, on vectors
stored through the real PutVectors call: exact id sets for what is
superseded and what is left alone."""

from __future__ import annotations

import math

import pytest

from memtree import protocol
from memtree.recall.embeddings import LOCAL_MODEL
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, actor_procs, deadline_ms, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import rows, start_actor, start_writer

DIM = 256


def unit(cos: float, axis: int = 0) -> list[float]:
    """A unit vector at cosine ``cos`` from basis vector ``axis`` (tilted toward axis+1)."""
    v = [0.0] * DIM
    v[axis], v[axis + 1] = cos, math.sqrt(max(0.0, 1 - cos * cos))
    return v


def basis(axis: int) -> list[float]:
    return unit(1.0, axis)


@pytest.fixture()
def store(tmp_path):
    paths = make_paths(tmp_path)
    config = make_config({"walkers": {"dedupeIntervalMs": 200}})
    writer = start_writer(paths, config)
    w = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    procs = [writer]
    yield paths, config, w, procs
    w.close()
    for p in reversed(procs):
        reap(p)


def test_dedupe_supersedes_the_older_near_duplicate_and_leaves_the_rest(store):
    paths, config, w, procs = store
    nodes = {}

    def add(name, kind="tool_output", parent=None, text=None):  # notes: tests/unit/walkers/test_notes_kept.py
        nodes[name] = w.call(
            protocol.AddNode(kind=kind, content=text or f"content of {name} " * 5, status="live", parent_id=parent)
        )["id"]

    log = "make build: compiled 214 modules of the parser, the planner and the store; 0 warnings; "

    vecs = {}
    add("old", text=log * 3 + "took 12.1 s")
    add("new", text=log * 3 + "took 12.4 s")
    vecs.update(old=basis(0), new=unit(0.99))  # a pair at 0.99, its texts a number apart
    add("alike_a", kind="file_chunk", text="def get_name(self):\n    return self._name\n")
    add("alike_b", kind="file_chunk", text="def name_of(self):\n    return self.name\n")
    vecs.update(alike_a=basis(12), alike_b=unit(0.995, 12))  # close vectors, other code: neither stands in
    other_root = w.call(protocol.AddNode(kind="file", content="", status="live"))["id"]
    add("twin_old", kind="file_chunk", text="def close(self):\n    self.sock.close()\n")
    add("twin_new", kind="file_chunk", parent=other_root, text="def close(self):\n        self.sock.close()")
    vecs.update(twin_old=basis(14), twin_new=unit(0.999, 14))  # the same code in two files, but for spaces
    add("below_a")
    add("below_b")
    vecs.update(below_a=basis(2), below_b=unit(0.965, 2))  # just below 0.97
    add("as_note", kind="note")
    add("as_chunk", kind="file_chunk")
    vecs.update(as_note=basis(4), as_chunk=basis(4))  # kinds differ
    add("forgotten")
    add("keeps")
    vecs.update(forgotten=basis(6), keeps=basis(6))  # one is forgotten first
    root = w.call(protocol.AddNode(kind="file", content="", status="live"))["id"]
    add("m1", kind="file_chunk", parent=root)
    add("m2", kind="file_chunk", parent=root)
    vecs.update(m1=basis(8), m2=unit(0.999, 8))  # two chunks of one file

    def put_vectors(names):
        actor_procs.put_vectors(paths, w, LOCAL_MODEL, nodes, vecs, names)

    def is_superseded(name):
        return rows(paths, "SELECT status FROM nodes WHERE id=?", (nodes[name],)) == [("superseded",)]

    put_vectors(list(vecs))
    w.call(protocol.Forget(node_id=nodes["forgotten"], reason="the user asked"))

    procs.append(start_actor(paths, config, "memtree.actors.walkers.dedupe", "walker.dedupe"))
    wait_until(lambda: is_superseded("old") and is_superseded("twin_old"), timeout=COLD_START_S, what="the first pass")
    # The pass that did it may still be running (pairs go best first, one
    # Supersede call each). A sentinel pair stored now is examined by a later
    # pass, which starts only once that one has ended: then nothing else is due.
    add("sentinel_old", text=log + "sentinel, run 1")
    add("sentinel_new", text=log + "sentinel, run 2")
    vecs.update(sentinel_old=basis(10), sentinel_new=unit(0.999, 10))
    put_vectors(["sentinel_old", "sentinel_new"])
    wait_until(lambda: is_superseded("sentinel_old"), timeout=COLD_START_S, what="the sentinel pair deduped")
    superseded = {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE status = 'superseded'")}
    assert superseded == {nodes["old"], nodes["twin_old"], nodes["sentinel_old"]}
    assert rows(paths, "SELECT status FROM nodes WHERE id=?", (nodes["forgotten"],)) == [("forgotten",)]
    assert set(rows(paths, "SELECT src_id, dst_id FROM edges WHERE kind = 'supersedes'")) == {
        (nodes["new"], nodes["old"]),
        (nodes["twin_new"], nodes["twin_old"]),
        (nodes["sentinel_new"], nodes["sentinel_old"]),
    }
    audit = dict(
        rows(paths, "SELECT node_id, detail FROM audit WHERE action = 'supersede' AND actor = 'walker.dedupe'")
    )
    assert set(audit) == {nodes["old"], nodes["twin_old"], nodes["sentinel_old"]}
    assert '"score":0.99' in audit[nodes["old"]] and nodes["new"] in audit[nodes["old"]]
