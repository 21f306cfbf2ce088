"""Busy is not hung: a writer call that runs for several heartbeat periods
keeps its writer (the pulse thread beats with busy_s), and a loop stuck in
one handler past supervisor.busyLimitS is still killed."""

import threading
import time

from memtree import protocol
from memtree.errors import MemtreeError
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, deadline, deadline_ms, wait_until

# The kill window is what is tested, not a deadline: it must stay below the work (the positive
# control), so it is not stretched by slowness; the pulse thread beats every 200 ms regardless.
HB_MS, MISSED = 200, 3  # the supervisor kills an actor after 0.6 s without a beat
# 8 MB of a million distinct words: indexing them (FTS) takes seconds. (8 MB
# of one repeated character no longer did: redaction skips what has no hint.)
BIG = " ".join(f"w{i}" for i in range(1_000_000))


def _config(system, **sup):
    system.write_config(
        {"supervisor": {"heartbeatMs": HB_MS, "missedHeartbeats": MISSED, **sup}, "capture": {"maxBytes": 10_000_000}}
    )
    system.serve()
    system.wait_running(["writer"])
    return system.pid("writer")


def _watch_busy(system, stop: threading.Event, seen: list) -> None:
    while not stop.wait(0.05):
        row = system.actor("writer")
        if row and isinstance(row.get("info"), dict) and "busy_s" in row["info"]:
            seen.append(row["info"]["busy_s"])


def test_a_writer_call_lasting_several_heartbeat_periods_does_not_get_the_writer_killed(system_factory):
    s = system_factory
    pid = _config(s)
    seen: list = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_busy, args=(s, stop, seen))
    watcher.start()
    caller = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(120_000))
    try:
        started = time.monotonic()
        node = caller.call(protocol.AddNode(kind="note", content=BIG))["id"]
        took = time.monotonic() - started
    finally:
        caller.close()
        stop.set()
        watcher.join(timeout=deadline(10))
    # Positive control: the call kept the writer's loop busy past the kill window.
    assert took > MISSED * HB_MS / 1000, f"only {took:.2f}s of work: the test proves nothing"
    assert seen and max(seen) > 0, "status never showed the writer busy"
    row = s.actor("writer")
    assert (row["pid"], row["restarts"], row["state"]) == (pid, 0, "RUNNING")
    assert node
    log = s.log_tail(lines=200)
    assert "writer: no heartbeat" not in log and "writer: busy in one handler" not in log, log


def test_a_writer_stuck_in_one_call_past_the_busy_limit_is_killed_and_restarted(system_factory):
    s = system_factory
    # Well under the call's work (seconds on a slow box, about one on a fast one: a limit of 1 s
    # let the call finish first there, unkilled), above a beat period.
    pid = _config(s, busyLimitS=0.3)
    # Its own positive control is the test above: the same call, the default limit, no kill.
    # The call gets no reply (its writer is killed under it): it is not waited for long.
    caller = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=3000)
    try:
        caller.call(protocol.AddNode(kind="note", content=BIG * 2))
    except MemtreeError:
        pass  # the writer died under the call (no reply): expected
    finally:
        caller.close()
    new = wait_until(
        lambda: (s.actor("writer", {"RUNNING"}) or {}).get("pid") not in (None, pid),
        timeout=COLD_START_S,
        what="a new writer after the busy kill",
    )
    assert new
    log = s.log_tail(lines=200)
    assert "writer: busy in one handler for" in log and f"SIGKILL pid={pid}" in log, log
    assert "writer: no heartbeat" not in log, log
