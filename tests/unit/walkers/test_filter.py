"""The filter walker as a real process beside a real writer."""

from __future__ import annotations

from memtree import protocol
from memtree.actors.walkers.filter import decide
from memtree.runtime.client import Caller
from memtree.store.triage import Pending
from tests.support import COLD_START_S, deadline_ms, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import HeartbeatSink, rows, start_actor, start_writer

LONG = "x" * 60  # over the default capture.filterMinSize (50 bytes)


def add(caller, content, **kw):
    kw.setdefault("kind", "note")
    return caller.call(protocol.AddNode(content=content, **kw))["id"]


def statuses(paths) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for node_id, status in rows(paths, "SELECT id, status FROM nodes WHERE kind NOT IN ('session','file')"):
        out.setdefault(status, set()).add(node_id)
    return out


def no_pending(paths):
    return rows(paths, "SELECT count(*) FROM nodes WHERE status='pending'") == [(0,)]


def write_mix(caller):
    """Nodes covering every branch of the rule; returns (expected live, expected dropped)."""
    kept = add(caller, "an established fact that is long enough to keep around", status="live")
    normal = add(caller, "a normal observation that is long enough to be kept " + LONG)
    small = add(caller, "tiny")
    dup_of_live = add(caller, "an established fact that is long enough to keep around")
    first = add(caller, "the same output twice, first copy wins the race " + LONG)
    second = add(caller, "the same output twice, first copy wins the race " + LONG)
    out = add(caller, "grep output with two hits " + LONG, kind="tool_output")
    hits = [
        add(caller, "hit", kind="file_chunk", parent_id=out),
        add(caller, "hit two", kind="file_chunk", parent_id=out),
    ]
    tiny_out = add(caller, "no", kind="tool_output")
    tiny_hit = add(caller, "hit under a dropped parent " + LONG, kind="file_chunk", parent_id=tiny_out)
    live = {kept, normal, first, out, *hits}
    dropped = {small, dup_of_live, second, tiny_out, tiny_hit}
    return live, dropped, {"small": small, "dup": dup_of_live, "kept": kept, "second": second, "first": first}


def test_small_and_duplicate_nodes_are_dropped_while_normal_ones_go_live(filter_system):
    paths, caller, start_filter = filter_system
    proc = start_filter()
    live, dropped, ids = write_mix(caller)
    # Cold interpreter start plus one event or sweep round on a loaded box.
    wait_until(lambda: no_pending(paths), timeout=COLD_START_S, what="no pending nodes")
    assert statuses(paths) == {"live": live, "dropped": dropped}
    reasons = dict(rows(paths, "SELECT node_id, reason FROM audit WHERE actor='walker.filter' AND to_status='dropped'"))
    assert reasons[ids["small"]] == "too small"
    assert reasons[ids["dup"]] == f"duplicate of {ids['kept']}"
    assert reasons[ids["second"]] == f"duplicate of {ids['first']}"
    assert proc.poll() is None


def test_nodes_written_while_the_filter_is_down_are_handled_when_it_starts(filter_system):
    paths, caller, start_filter = filter_system
    live, dropped, ids = write_mix(caller)
    assert statuses(paths)["pending"] == (live | dropped) - {ids["kept"]}  # nothing decided yet
    start_filter()
    wait_until(lambda: no_pending(paths), timeout=COLD_START_S, what="the sweep after start")
    assert statuses(paths) == {"live": live, "dropped": dropped}


def test_the_filter_keeps_running_without_a_writer_and_catches_up_when_it_returns(tmp_path):
    paths = make_paths(tmp_path)
    config = make_config()
    filt = start_actor(paths, config, "memtree.actors.walkers.filter", "walker.filter")
    writer = None
    try:
        # The filter starts before any store or writer exists; it must wait, not die.
        writer = start_writer(paths, config)
        caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
        try:
            nid = add(caller, "written once the writer is up " + LONG)
        finally:
            caller.close()
        wait_until(
            lambda: rows(paths, "SELECT status FROM nodes WHERE id=?", (nid,)) == [("live",)],
            timeout=COLD_START_S,
            what="the note going live",
        )
        assert filt.poll() is None
    finally:
        if writer is not None:
            reap(writer)
        reap(filt)


def pending(node_id, parent=None, kind="note", digest="h", size=100, parent_kind=None, parent_status=None):
    return Pending((node_id, parent, kind, digest, size, parent_kind, parent_status))


def test_decide_leaves_children_of_an_undecided_parent_pending():
    batch = [
        pending("C", parent="P", parent_kind="tool_output", parent_status="pending"),
        pending("D", parent="Q", parent_kind="tool_output", parent_status="live"),
        pending("E", digest="e", size=10),
    ]
    assert decide(batch, {}, 50) == {"D": ("live", "parent live"), "E": ("dropped", "too small")}


def test_a_backlog_over_one_sweep_clears_without_waiting_for_the_next_sweep_interval(tmp_path):
    from memtree.actors.walkers import filter as filter_walker

    backlog = filter_walker.BATCH * filter_walker.PASSES_PER_SWEEP + 300  # more than one sweep takes
    paths = make_paths(tmp_path)
    # No safety sweep within the test: only the first sweep at start and its continuation.
    config = make_config({"walkers": {"filterIntervalMs": 3_600_000}})
    writer = start_writer(paths, config)
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    sink = HeartbeatSink(paths)
    filt = None
    try:
        ids = {add(caller, f"note {i} written before the filter starts " + LONG) for i in range(backlog)}
        filt = start_actor(paths, config, "memtree.actors.walkers.filter", "walker.filter", sink.endpoint)
        sink.wait_state("walker.filter", "running")
        wait_until(lambda: no_pending(paths), timeout=COLD_START_S, what="the whole backlog decided")
        assert statuses(paths) == {"live": ids}
    finally:
        caller.close()
        sink.close()
        for p in (filt, writer):
            if p is not None:
                reap(p)
