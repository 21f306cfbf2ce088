"""A note is something a person or the agent decided to keep: the dedupe
walker supersedes one only when its text is the same after normalising
whitespace and case, and nothing but `forget` removes one (not the pruner's
retention, not the disk budget). Real writer, dedupe and pruner processes."""

from __future__ import annotations

import math

from memtree import protocol
from memtree.recall.embeddings import LOCAL_MODEL
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, actor_procs, deadline_ms, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import rows, start_actor, start_writer

DIM = 256


def unit(cos: float, axis: int) -> list[float]:
    v = [0.0] * DIM
    v[axis], v[axis + 1] = cos, math.sqrt(max(0.0, 1 - cos * cos))
    return v


def test_notes_differing_in_a_number_are_never_superseded_and_no_note_is_pruned_or_purged(tmp_path):
    paths = make_paths(tmp_path)
    config = make_config({"walkers": {"dedupeIntervalMs": 200, "prunerIntervalMs": 200}})
    procs = [start_writer(paths, config)]
    try:
        _run(paths, config, procs)
    finally:
        for p in reversed(procs):
            reap(p)


def _run(paths, config, procs: list) -> None:
    w = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        ids, vecs = {}, {}

        def add(name, text, vec, kind="note", parent=None):
            ids[name] = w.call(protocol.AddNode(kind=kind, content=text, status="live", parent_id=parent))["id"]
            vecs[name] = vec

        def put_vectors(names):
            actor_procs.put_vectors(paths, w, LOCAL_MODEL, ids, vecs, names)

        def status(name):
            got = rows(paths, "SELECT status FROM nodes WHERE id = ?", (ids[name],))
            return got[0][0] if got else None

        # Two distinct notes that differ only in a number, at cosine 0.996 and 0.970.
        add("n1", "Audit finding number 1: the cache key ignores the locale", unit(1.0, 0))
        add("n10", "Audit finding number 10: the cache key ignores the locale", unit(0.996, 0))
        add("m2", "Step 2 of the release: tag the commit", unit(1.0, 2))
        add("m3", "Step 3 of the release: tag the commit", unit(0.970, 2))
        # Positive controls: the same note twice (whitespace and case only), and two near-identical captures.
        add("same_old", "Keep the  deploy key\nrotation WEEKLY", unit(1.0, 4))
        add("same_new", "keep the deploy key rotation weekly ", unit(0.999, 4))
        add("cap_old", "output of the nightly job, run 1 " * 4, unit(1.0, 6), kind="tool_output")
        add("cap_new", "output of the nightly job, run 2 " * 4, unit(0.996, 6), kind="tool_output")
        put_vectors(list(vecs))
        procs.append(start_actor(paths, config, "memtree.actors.walkers.dedupe", "walker.dedupe"))
        wait_until(
            lambda: status("same_old") == "superseded" and status("cap_old") == "superseded",
            timeout=COLD_START_S,
            what="the dedupe pass",
        )
        # A sentinel pair stored now is examined by a later pass: then the first one has ended.
        add("sent_old", "sentinel capture text one " * 4, unit(1.0, 8), kind="tool_output")
        add("sent_new", "sentinel capture text two " * 4, unit(0.999, 8), kind="tool_output")
        put_vectors(["sent_old", "sent_new"])
        wait_until(lambda: status("sent_old") == "superseded", timeout=COLD_START_S, what="the sentinel pair")
        superseded = {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE status = 'superseded'")}
        assert superseded == {ids["same_old"], ids["cap_old"], ids["sent_old"]}

        # Everything else a pruner may remove: a stale note, a note kept under a capture, a disk budget of 4 KiB.
        add("stale_note", "A note some walker marked stale", unit(1.0, 10))
        w.call(protocol.SetStatus(ids=[ids["stale_note"]], status="stale", reason="test"))
        add("holder", "a grep result the agent annotated " * 4, unit(1.0, 12), kind="tool_output")
        add("under", "Note under a capture: this hit is the real bug", unit(1.0, 14), parent=ids["holder"])
        add("plain", "a capture nobody annotated " * 4, unit(1.0, 16), kind="tool_output")
    finally:
        w.close()
    pruner_config = make_config(
        {
            "walkers": {"prunerIntervalMs": 200},
            "storage": {"maxBytes": 4096},
            "retention": {"staleHours": 0, "supersededDays": 0, "prunedDays": 0},
        }
    )
    procs.append(start_actor(paths, pruner_config, "memtree.actors.walkers.pruner", "walker.pruner"))
    captures = ["cap_old", "cap_new", "sent_old", "sent_new", "plain"]
    wait_until(
        lambda: all(status(n) is None for n in captures), timeout=COLD_START_S, what="the pruner purging the captures"
    )
    # One more capture to remove: once it is gone, a whole sweep ran after the ones above.
    w2 = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        last = w2.call(protocol.AddNode(kind="tool_output", content="one more capture " * 8, status="live"))["id"]
    finally:
        w2.close()
    wait_until(
        lambda: not rows(paths, "SELECT 1 FROM nodes WHERE id = ?", (last,)), timeout=COLD_START_S, what="a later sweep"
    )
    notes = {ids[n] for n in ("n1", "n10", "m2", "m3", "same_old", "same_new", "stale_note", "under")}
    assert {r[0] for r in rows(paths, "SELECT id FROM nodes")} == notes | {ids["holder"]}
    assert {r[0]: r[1] for r in rows(paths, "SELECT id, status FROM nodes WHERE kind = 'note'")} == {
        **{i: "live" for i in notes},
        ids["same_old"]: "superseded",
        ids["stale_note"]: "stale",
    }
    purged = {r[0] for r in rows(paths, "SELECT node_id FROM audit WHERE action = 'purge'")}
    assert {ids[n] for n in captures} <= purged and not purged & notes
