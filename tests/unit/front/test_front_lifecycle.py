"""The front's lifecycle rules, with a client holding stdin open as Claude Code
does: SIGTERM ends it within a second, so does its supervisor dying, and
`ctl shutdown` never needs the SIGKILL fallback for it."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time

import psutil
import zmq
from anyio.from_thread import start_blocking_portal

from memtree import protocol
from memtree.actors.base import ActorContext
from tests.support import COLD_START_S, PYTHON, close_bound, deadline, deadline_ms, make_paths, reap, wait_until
from tests.support import test_config as make_config

# The rule from issue 7: gone within 1 s (before: it waited for the next
# line on stdin, i.e. until the supervisor's SIGKILL 5 s later). A deadline:
# stretched on a slow box, but kept under the 5 s that would mean the old bug.
GONE_WITHIN_S = min(deadline(1.0), 4.0)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_sigterm_ends_the_front_within_a_second_while_the_client_holds_stdin_open(tmp_path):
    from mcp import Client, StdioServerParameters

    paths = make_paths(tmp_path)
    pull = zmq.Context.instance().socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    pull.bind(paths.endpoint("sup-test.hb"))
    env = {
        **os.environ,
        **ActorContext("mcp", paths, make_config(), paths.endpoint("sup-test.hb")).child_env(),
        "PYTHONPATH": os.getcwd(),
    }
    cmd = f"exec {shlex.quote(PYTHON)} -m memtree.actors.mcp_front 2>>{shlex.quote(paths.log_file('mcp'))}"
    params = StdioServerParameters(command="/bin/sh", args=["-c", cmd], env=env, cwd=paths.project_root)
    pid = None
    try:
        with start_blocking_portal() as portal:
            # Allows for a cold interpreter importing the mcp SDK on a loaded box.
            with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S)) as client:
                names = {t.name for t in portal.call(client.list_tools).tools}
                assert "read" in names
                assert pull.poll(int(COLD_START_S * 1000)), "no heartbeat from the front"
                pid = protocol.decode(pull.recv()).body.pid
                control = psutil.Process(pid)
                assert control.status() != psutil.STATUS_ZOMBIE  # positive control: it is serving
                sent = time.monotonic()
                os.kill(pid, signal.SIGTERM)
                wait_until(
                    lambda: gone(pid),
                    timeout=GONE_WITHIN_S,
                    interval=0.01,
                    what="the front to exit after SIGTERM with stdin open",
                )
                took = time.monotonic() - sent
        assert took < GONE_WITHIN_S
        with open(paths.log_file("mcp")) as f:
            assert "stop requested by signal" in f.read()
    finally:
        close_bound(pull, paths.endpoint("sup-test.hb"))
        if pid is not None and not gone(pid):
            os.kill(pid, signal.SIGKILL)


def _serve_with_open_stdin(s) -> tuple[subprocess.Popen, dict[str, int]]:
    s.write_config()
    # Claude Code's side of the pipes: held open, never written.
    proc = s.serve(front=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    actors = s.wait_running(["mcp", *s.expected])
    return proc, {a["name"]: a["pid"] for a in actors}


def test_the_front_exits_within_a_second_when_its_supervisor_is_killed(system_factory):
    proc, pids = _serve_with_open_stdin(system_factory)
    front = pids["mcp"]
    assert psutil.Process(front).ppid() == proc.pid
    proc.kill()  # SIGKILL: the supervisor gets no chance to stop anyone
    proc.wait(timeout=COLD_START_S)
    wait_until(lambda: gone(front), timeout=GONE_WITHIN_S, interval=0.01, what="the orphaned front to exit")
    # The other actors get the same SIGTERM; they may take longer to finish cleanly.
    wait_until(lambda: all(gone(p) for p in pids.values()), timeout=COLD_START_S, what="every orphaned actor gone")


def test_ctl_shutdown_with_a_session_connected_stops_the_front_without_sigkill(system_factory):
    s = system_factory
    proc, pids = _serve_with_open_stdin(s)
    done = s.ctl("shutdown")
    assert done.returncode == 0, done.stderr
    # Allows for every actor's clean exit on a loaded box; the front's own
    # promptness is what the SIGKILL check below pins.
    proc.wait(timeout=COLD_START_S)
    wait_until(lambda: all(gone(p) for p in pids.values()), timeout=COLD_START_S, what="every actor gone")
    log = s.log_tail(lines=80)
    assert "mcp: still alive" not in log and "SIGKILL" not in log, log
    assert "supervisor: exited" in log, log


def test_a_tool_call_doing_seconds_of_work_does_not_cost_the_session_its_front(system_factory):
    """The heartbeat shares the front's event loop with every tool call: the
    work must run in worker threads or missed beats get the front killed."""
    from mcp import Client, StdioServerParameters

    from memtree.paths import prepare_store
    from memtree.runtime.client import Caller
    from tests.support.actor_procs import start_writer

    s = system_factory
    # Seeded before the system starts, by a writer allowed big content: 24 MB
    # of non-ASCII text, which costs the one token counter per character (8 MB
    # took 0.75 s on a quiet box once redaction got faster: under the window).
    seed_conf = make_config({"capture": {"maxBytes": 30_000_000}})
    prepare_store(s.paths)
    writer = start_writer(s.paths, seed_conf)
    caller = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(60_000))
    try:
        big = caller.call(protocol.AddNode(kind="note", content="é" * 12_000_000))["id"]
        caller.call(protocol.SetStatus(ids=[big], status="live", reason="test"))
    finally:
        caller.close()
        reap(writer)

    # The kill window is what is tested, not a deadline: it must stay below the work (the positive
    # control below), so it is not stretched (stretched 8x it outlasted the work on a loaded box).
    hb_ms, missed = 200, 4  # the supervisor kills an actor after 0.8 s without a beat
    s.write_config({"supervisor": {"heartbeatMs": hb_ms, "missedHeartbeats": missed}})
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "memtree.cli", "serve"], cwd=s.project, env={**os.environ, **s.env}
    )
    with start_blocking_portal() as portal:
        # Allows for cold interpreters (supervisor, front, writer, walkers) on 2 cores.
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3)) as client:
            front_pid = next(a["pid"] for a in s.wait_running(["mcp", "writer"]) if a["name"] == "mcp")
            started = time.monotonic()
            res = portal.call(client.call_tool, "recall", {"ids": [big]})
            took = time.monotonic() - started
            assert not res.is_error, res.content[0].text
            assert big in res.content[0].text and "cut to fit" in res.content[0].text
            # Positive control: the call kept the front busy past the kill window.
            assert took > missed * hb_ms / 1000, f"only {took:.2f}s of work: the test proves nothing"
            assert s.pid("mcp") == front_pid
    log = s.log_tail(lines=200)
    assert "mcp: no heartbeat" not in log, log  # other actors may miss beats on a loaded box
