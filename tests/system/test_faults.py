"""Issue 2's fault cases end to end: real supervisor, writer, walkers, front.

Notes go in through the MCP SDK's stdio client against `memtree serve` (as
Claude Code runs it) or through the writer socket; outcomes are read back
from the real SQLite file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from anyio.from_thread import start_blocking_portal

from memtree import protocol
from memtree.errors import CallTimeout, Unavailable
from memtree.runtime.client import Caller
from memtree.store.db import open_read
from tests.support import COLD_START_S, PYTHON, wait_until
from tests.support.front_harness import ids_in


def _statuses(system, ids) -> dict[str, str]:
    conn = open_read(system.paths.db)
    try:
        marks = ",".join("?" * len(ids))
        return dict(conn.execute(f"SELECT id, status FROM nodes WHERE id IN ({marks})", list(ids)).fetchall())
    finally:
        conn.close()


def _note_count(system) -> int:
    conn = open_read(system.paths.db)
    try:
        return conn.execute("SELECT count(*) FROM nodes WHERE kind='note'").fetchone()[0]
    finally:
        conn.close()


def _writer(system, timeout_ms: int = 3000) -> Caller:
    return Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=timeout_ms)


def _note(caller: Caller, text: str, timeout_ms: int | None = None) -> str:
    return caller.call(protocol.AddNode(kind="note", content=text), timeout_ms=timeout_ms)["id"]


def _text(i: int, topic: str) -> str:
    return f"note {i} about {topic}: long enough to pass the filter walker's minimum size rule."


@contextlib.contextmanager
def _mcp(system):
    """`memtree serve` through the MCP SDK stdio client; yields call(name, args) -> (is_error, text)."""
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(system.env)
    params = StdioServerParameters(command=PYTHON, args=["-m", "memtree.cli", "serve"], cwd=system.project, env=env)
    with start_blocking_portal() as portal:
        # Allows for cold interpreters (supervisor, front, writer, walkers) on 2 cores.
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3)) as client:

            def call(name, args):
                res = portal.call(client.call_tool, name, args)
                return res.is_error, "\n".join(c.text for c in res.content)

            yield call


def _note_via_mcp(call, text: str) -> str:
    until = time.monotonic() + COLD_START_S * 2
    while True:  # the writer may still be starting
        err, out = call("note", {"text": text})
        if not err or time.monotonic() > until:
            break
        time.sleep(0.2)
    assert not err, out
    return out.split()[0]


def test_mcp_note_goes_live_while_a_tiny_one_and_a_duplicate_are_dropped(system_factory):
    system_factory.write_config()
    with _mcp(system_factory) as call:
        keep = _note_via_mcp(call, "The ledger service reconciles invoices nightly at 02:00 UTC.")
        other = _note_via_mcp(call, "Feature flags are read from flags.yaml at startup, never at runtime.")
        tiny = _note_via_mcp(call, "ok")
        dup = _note_via_mcp(call, "The ledger service reconciles invoices nightly at 02:00 UTC.")
        ids = {keep, other, tiny, dup}
        assert len(ids) == 4
        final = wait_until(
            lambda: (s := _statuses(system_factory, ids)) and "pending" not in s.values() and s,
            timeout=COLD_START_S,
            what="the filter walker to decide every note",
        )
        assert {i for i, s in final.items() if s == "live"} == {keep, other}
        assert {i for i, s in final.items() if s == "dropped"} == {tiny, dup}
        err, out = call("recall", {"query": "ledger reconciles invoices", "mode": "keyword"})
        assert not err and ids_in(out) == {keep}  # the dropped duplicate never comes back
        err, out = call("recall", {"query": "flags yaml startup", "mode": "keyword"})
        assert not err and ids_in(out) == {other}


def test_killed_writer_is_restarted_and_no_acknowledged_note_is_lost(system):
    caller = _writer(system)
    acked = [_note(caller, _text(i, "the writer outage")) for i in range(5)]
    count_before = _note_count(system)
    old = system.pid("writer")
    os.kill(old, signal.SIGKILL)

    # A write during the outage either succeeds once the writer is back or is a clear error.
    try:
        acked.append(_note(caller, _text(99, "the outage itself"), timeout_ms=int(COLD_START_S * 1000)))
        during = "acknowledged"
    except (Unavailable, CallTimeout) as e:
        assert "write.sock" in e.message and ("nothing is listening" in e.message or "no reply" in e.message)
        during = "refused"

    new = wait_until(
        lambda: (a := system.actor("writer", {"RUNNING"})) and a["pid"] != old and a["pid"],
        timeout=COLD_START_S,
        what="a new writer RUNNING",
    )
    assert new != old
    acked.append(_note(caller, _text(100, "after the restart"), timeout_ms=int(COLD_START_S * 1000)))
    caller.close()
    statuses = _statuses(system, acked)
    assert set(statuses) == set(acked), f"lost acknowledged notes ({during} during the outage)"
    assert _note_count(system) == count_before + len(acked) - 5
    assert system.actor("writer")["restarts"] == 1


def test_notes_written_while_the_filter_is_dead_go_live_after_it_returns(system):
    caller = _writer(system)
    before = system.pids()
    os.kill(before["walker.filter"], signal.SIGKILL)
    ids = [_note(caller, _text(i, "the filter outage")) for i in range(10)]
    caller.close()
    new = wait_until(
        lambda: (a := system.actor("walker.filter", {"RUNNING"})) and a["pid"] != before["walker.filter"] and a["pid"],
        timeout=COLD_START_S,
        what="a new walker.filter RUNNING",
    )
    final = wait_until(
        lambda: (s := _statuses(system, ids)) and set(s.values()) == {"live"} and s,
        timeout=COLD_START_S,
        what="the notes live",
    )
    assert set(final) == set(ids)
    after = system.pids()
    assert after["walker.filter"] == new
    assert {k: v for k, v in after.items() if k != "walker.filter"} == {
        k: v for k, v in before.items() if k != "walker.filter"
    }


def test_restarted_filter_walker_keeps_promoting_notes(system):
    old = system.pid("walker.filter")
    new = system.restart("filter")
    assert new != old
    caller = _writer(system)
    nid = _note(caller, _text(1, "the restarted walker"))
    caller.close()
    wait_until(
        lambda: _statuses(system, [nid]) == {nid: "live"},
        timeout=COLD_START_S,
        what="the note promoted by the restarted walker",
    )
    assert system.pid("walker.filter") == new


def test_fatal_walker_leaves_notes_and_search_working(system_factory, tmp_path):
    system_factory.write_crashy_config(tmp_path / "crash", max_restarts=2)
    with _mcp(system_factory) as call:
        wait_until(lambda: system_factory.actor("crashy", {"FATAL"}), timeout=COLD_START_S * 2, what="crashy FATAL")
        nid = _note_via_mcp(call, "The FATAL walker does not stop the cache warmer from being documented.")
        found = wait_until(
            lambda: ids_in(call("recall", {"query": "cache warmer documented"})[1]),
            timeout=COLD_START_S,
            what="the note searchable",
        )
        assert found == {nid}
        assert system_factory.actor("crashy")["state"] == "FATAL"
        assert {a["state"] for a in system_factory.status() if a["name"] != "crashy"} == {"RUNNING"}
