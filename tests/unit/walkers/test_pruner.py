"""The pruner walker, and the whole life of a file chunk, with real processes:
pending -> live (filter) -> stale (staleness) -> superseded (read) -> pruned
(pruner) -> row deleted with its audit kept (pruner, Purge)."""

from __future__ import annotations

import contextlib
import os

from memtree import protocol
from memtree.runtime.client import Caller
from memtree.tools.read import read
from tests import support
from tests.support import COLD_START_S, deadline_ms, reap, wait_until
from tests.support.actor_procs import start_actor
from tests.support.tools_harness import Harness

FAST = {"walkers": {"stalenessIntervalMs": 200, "prunerIntervalMs": 200, "filterIntervalMs": 200}}


def _status(h, node_id: str):
    rows = h.rows("SELECT status FROM nodes WHERE id=?", (node_id,))
    return rows[0][0] if rows else None


@contextlib.contextmanager
def _walking(tmp_path):
    """A tools harness and ``walker(module, name, config=None)`` starting walkers on its store;
    every walker is reaped and the harness closed after."""
    h, procs = Harness(tmp_path, FAST), []

    def walker(module: str, name: str, config=None):
        procs.append(start_actor(h.paths, config or h.config, f"memtree.actors.walkers.{module}", name))
        return procs[-1]

    try:
        yield h, walker
    finally:
        for p in procs:
            reap(p)
        h.close()


def _retention(**retention):
    return support.test_config({**FAST, "retention": retention})


def _fts_hits(h, word: str) -> int:
    return h.rows("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (word,))[0][0]


def test_a_chunk_goes_pending_live_stale_superseded_pruned_then_its_row_is_deleted(tmp_path):
    with _walking(tmp_path) as (h, walker):
        full = h.write("mod.py", "def f():\n    return 1\n")
        h.run(read, "mod.py")  # the file root exists, as a hook capture would find it
        root = h.rows("SELECT id FROM nodes WHERE kind='file'")[0][0]
        caller = Caller(h.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(5000))
        captured = caller.call(
            protocol.AddNode(
                kind="file_chunk",
                content="captured zebracorn text of mod.py lines 1-2, long enough to keep",
                parent_id=root,
                source_uri=f"file://{full}#L1-2",
                metadata={"path": full, "start": 1, "end": 2},
                status="pending",
                mtime=os.stat(full).st_mtime_ns,
            )
        )["id"]
        caller.close()
        walker("filter", "walker.filter")
        wait_until(lambda: _status(h, captured) == "live", timeout=COLD_START_S, what="filter promotes it")
        walker("staleness", "walker.staleness")
        st = os.stat(full)
        os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        wait_until(lambda: _status(h, captured) == "stale", timeout=COLD_START_S, what="staleness marks it")
        h.run(read, "mod.py")  # the read tool supersedes the stale chunk
        assert _status(h, captured) == "superseded"
        new_live = {r[0] for r in h.rows("SELECT id FROM nodes WHERE kind='file_chunk' AND status='live'")}
        assert new_live
        assert _fts_hits(h, "zebracorn") == 1  # superseded is still searchable by status name
        keep_rows = walker("pruner", "walker.pruner", _retention(supersededDays=0, prunedDays=30))
        wait_until(lambda: _status(h, captured) == "pruned", timeout=COLD_START_S, what="pruner prunes it")
        assert _fts_hits(h, "zebracorn") == 0  # left the index with the status change; the row stays
        reap(keep_rows)
        walker("pruner", "walker.pruner", _retention(supersededDays=0, prunedDays=0))
        wait_until(lambda: _status(h, captured) is None, timeout=COLD_START_S, what="pruner deletes the row")
        moves = [
            (a, f, t)
            for a, f, t in h.rows(
                "SELECT action, from_status, to_status FROM audit WHERE node_id=? ORDER BY seq", (captured,)
            )
        ]
        assert [(f, t) for _, f, t in moves] == [
            (None, "pending"),
            ("pending", "live"),
            ("live", "stale"),
            ("stale", "superseded"),
            ("superseded", "pruned"),
            ("pruned", None),
        ]
        assert moves[-1][0] == "purge"
        assert not h.rows("SELECT 1 FROM edges WHERE dst_id=? OR src_id=?", (captured, captured))
        # Positive control: the new live chunks were not touched by any of it.
        assert {r[0] for r in h.rows("SELECT id FROM nodes WHERE kind='file_chunk' AND status='live'")} == new_live


def test_stale_nodes_are_pruned_after_stale_hours_and_others_are_not(tmp_path):
    with _walking(tmp_path) as (h, walker):
        for name in ("gone.py", "kept.py"):
            h.write(name, "def g():\n    return 2\n")
            h.run(read, name)
        ids = dict(h.rows("SELECT id, source_uri FROM nodes WHERE kind='file_chunk'"))
        gone = {i for i, u in ids.items() if "gone.py" in u}
        kept = set(ids) - gone
        os.unlink(os.path.join(h.root, "gone.py"))
        walker("staleness", "walker.staleness")
        wait_until(lambda: all(_status(h, i) == "stale" for i in gone), timeout=COLD_START_S, what="stale")
        walker("pruner", "walker.pruner", _retention(staleHours=0, prunedDays=30))
        wait_until(lambda: all(_status(h, i) == "pruned" for i in gone), timeout=COLD_START_S, what="pruned")
        assert {i for i in ids if _status(h, i) == "live"} == kept
        reasons = {r[0] for r in h.rows("SELECT reason FROM audit WHERE to_status='pruned'")}
        assert reasons == {"stale for more than 0 hours"}


def test_superseded_nodes_younger_than_superseded_days_stay(tmp_path):
    with _walking(tmp_path) as (h, walker):
        full = h.write("a.py", "def a():\n    return 3\n")
        h.run(read, "a.py")
        old = {r[0] for r in h.rows("SELECT id FROM nodes WHERE kind='file_chunk'")}
        with open(full, "a") as f:
            f.write("\ndef b():\n    return 4\n")
        st = os.stat(full)
        os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        h.run(read, "a.py")
        assert all(_status(h, i) == "superseded" for i in old)
        h.write("gone.py", "def g():\n    return 5\n")
        h.run(read, "gone.py")
        gone = {r[0] for r in h.rows("SELECT id FROM nodes WHERE kind='file_chunk' AND source_uri LIKE '%gone.py%'")}
        os.unlink(os.path.join(h.root, "gone.py"))
        walker("staleness", "walker.staleness")
        wait_until(lambda: all(_status(h, i) == "stale" for i in gone), timeout=COLD_START_S, what="stale")
        # staleHours 0 prunes the stale control; supersededDays stays at its default (7).
        walker("pruner", "walker.pruner", _retention(staleHours=0))
        wait_until(lambda: all(_status(h, i) == "pruned" for i in gone), timeout=COLD_START_S, what="control pruned")
        assert {i for i in old if _status(h, i) == "superseded"} == old
