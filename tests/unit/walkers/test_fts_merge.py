"""FTS5 merging scheduled by the pruner, on a running memtree: small group
commits pile segments up; the pruner's sweep sends bounded ``MergeFts`` steps
to the writer until every level holds one segment, the index answers exactly
as before, and a store with no writes since gets no merge step at all."""

from __future__ import annotations

from memtree import protocol
from memtree.runtime.client import Caller
from memtree.store import db as store_db
from memtree.store import fts_index
from tests.support import COLD_START_S, deadline_ms, wait_until


def _structure(system):
    conn = store_db.open_read(system.paths.db)
    try:
        return fts_index.structure(conn)
    finally:
        conn.close()


def _matches(system, word: str) -> set[str]:
    conn = store_db.open_read(system.paths.db)
    try:
        return {
            r[0]
            for r in conn.execute(
                "SELECT n.id FROM nodes_fts JOIN nodes n ON n.rowid = nodes_fts.rowid WHERE nodes_fts MATCH ?", (word,)
            )
        }
    finally:
        conn.close()


def _pruner_info(system) -> dict:
    row = system.actor("walker.pruner", {"RUNNING"})
    return (row or {}).get("info") or {}


def _add(caller, i: int) -> str:
    word = "quokka" if i % 2 else "wallaby"
    text = f"note {i}: a {word} seen at site {i * 7919}, " + " ".join(f"w{i}x{k}" for k in range(i % 7 + 3))
    return caller.call(protocol.AddNode(kind="note", content=text, status="live"))["id"]


def test_the_pruner_merges_fts_segments_after_writes_and_sends_nothing_when_idle(system_factory):
    s = system_factory
    s.write_config({"walkers": {"prunerIntervalMs": 200}})
    s.serve()
    s.wait_running(["writer", "walker.pruner"])
    assert s.ctl("stop", "walker.pruner").returncode == 0
    caller = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        ids = [_add(caller, i) for i in range(60)]  # one call at a time: one commit, one FTS segment each
        before = _structure(s)
        # Positive control: automerge alone leaves levels holding several segments.
        assert max(before.levels) >= 2, before.levels
        quokkas = {nid for i, nid in enumerate(ids) if i % 2}
        assert _matches(s, "quokka") == quokkas and _matches(s, "wallaby") == set(ids) - quokkas

        assert s.ctl("start", "walker.pruner").returncode == 0
        s.wait_running(["walker.pruner"])
        wait_until(lambda: max(_structure(s).levels) <= 1, timeout=COLD_START_S, what="segments merged")
        after = _structure(s)
        assert after.segments < before.segments and after.writes == before.writes
        assert _matches(s, "quokka") == quokkas and _matches(s, "wallaby") == set(ids) - quokkas
        assert _matches(s, "platypus") == set()
        wait_until(lambda: _pruner_info(s).get("fts_merge_steps", 0) >= 1, timeout=COLD_START_S, what="steps shown")

        # Idle: sweep after sweep, no merge step (nothing was written since the index settled).
        steps = _pruner_info(s)["fts_merge_steps"]
        checks = _pruner_info(s)["fts_checks"]
        wait_until(lambda: _pruner_info(s).get("fts_checks", 0) >= checks + 5, timeout=COLD_START_S, what="sweeps")
        assert _pruner_info(s)["fts_merge_steps"] == steps

        # A write: the next sweeps merge again, and settle again.
        more = [_add(caller, i) for i in range(60, 70)]
        wait_until(lambda: _pruner_info(s).get("fts_merge_steps", 0) > steps, timeout=COLD_START_S, what="merged")
        assert _matches(s, "quokka") == quokkas | {nid for i, nid in zip(range(60, 70), more) if i % 2}
    finally:
        caller.close()
