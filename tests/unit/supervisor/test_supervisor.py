"""The supervisor with real processes: restarts, watchdog, FATAL, standby takeover."""

import os
import signal

from memtree import protocol
from memtree.errors import MemtreeError
from memtree.runtime.client import Caller
from tests.conftest import MISSED_BEATS
from tests.support import COLD_START_S, deadline, deadline_ms, wait_until


def _replaced(system, name: str, old_pid: int, what: str) -> int:
    """The pid of ``name``'s replacement once it is RUNNING (a cold interpreter start of it allowed for)."""

    def new_running_pid():
        actor = system.actor(name, {"RUNNING"})
        return actor["pid"] if actor and actor["pid"] != old_pid else None

    return wait_until(new_running_pid, timeout=COLD_START_S, what=what)


def test_killed_walker_restarts_with_a_new_pid_and_other_pids_are_unchanged(system):
    before = system.pids()
    os.kill(before["walker.filter"], signal.SIGKILL)
    new = _replaced(system, "walker.filter", before["walker.filter"], "a new walker.filter RUNNING")
    after = system.pids()
    assert new != before["walker.filter"]
    assert {k: v for k, v in after.items() if k != "walker.filter"} == {
        k: v for k, v in before.items() if k != "walker.filter"
    }
    assert system.actor("walker.filter")["restarts"] == 1
    assert "walker.filter: exited signal=9, restart in" in system.log_tail(lines=50)


def test_stopped_walker_is_found_by_missed_heartbeats_killed_and_restarted(system):
    before = system.pids()
    os.kill(before["walker.filter"], signal.SIGSTOP)
    new = _replaced(system, "walker.filter", before["walker.filter"], "the stopped walker.filter replaced")
    assert new != before["walker.filter"]
    assert system.pids()["writer"] == before["writer"]
    log = system.log_tail(lines=50)
    assert (
        "walker.filter: no heartbeat for" in log
        and f"({MISSED_BEATS} missed), SIGKILL pid={before['walker.filter']}" in log
    )
    assert system.actor("walker.filter")["restarts"] == 1


def test_crashing_actor_goes_fatal_after_max_restarts_while_the_rest_keep_running(system_factory, tmp_path):
    flag = tmp_path / "crash"
    system_factory.write_crashy_config(flag, max_restarts=3)
    system_factory.serve()
    system = system_factory
    system.wait_running()
    before = system.pids()
    crashy = wait_until(lambda: system.actor("crashy", {"FATAL"}), timeout=COLD_START_S * 2, what="crashy FATAL")
    assert crashy["restarts"] == 3 and crashy["pid"] is None
    assert system.pids() == before  # the others never moved
    assert "crashy: FATAL, 3 restarts in 60s" in system.log_tail(lines=80)

    # An operator start is not a crash: FATAL is cleared and it runs once it can.
    flag.unlink()
    done = system.ctl("start", "crashy")
    assert done.returncode == 0, done.stderr
    assert system.actor("crashy")["state"] == "RUNNING"
    assert system.pids()["writer"] == before["writer"]


def test_second_supervisor_stands_by_and_takes_over_when_the_holder_dies(system_factory):
    system = system_factory
    system.write_config()
    first, second, actors = system.serve_two()
    writers = {a["supervisor_pid"]: a["state"] for a in actors if a["name"] == "writer"}
    assert writers == {first.pid: "RUNNING", second.pid: "STANDBY"}
    # Every standby says what it waits for: the lock its counterpart in the first supervisor holds.
    holders = {a["name"]: a["pid"] for a in actors if a["supervisor_pid"] == first.pid}
    assert {a["name"]: (a["state"], a["info"]) for a in actors if a["supervisor_pid"] == second.pid} == {
        name: ("STANDBY", {"waiting": f"the {name} lock held by pid {pid} (supervisor {first.pid})"})
        for name, pid in holders.items()
    }
    assert not [a for a in actors if a["supervisor_pid"] == first.pid and "waiting" in a["info"]]
    table = system.ctl("status")
    assert table.returncode == 0, table.stderr
    standby_lines = [line for line in table.stdout.splitlines() if " STANDBY " in line]
    assert len(standby_lines) == len(holders) and all(
        f"waiting=the {line.split()[0]} lock held by pid {holders[line.split()[0]]}" in line for line in standby_lines
    ), table.stdout

    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=deadline(10))
    # The standby takes the lock once the kernel drops the dead holder's flock.
    actors = system.wait_running(count=1)
    assert {a["supervisor_pid"] for a in actors} == {second.pid}

    caller = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(2000))
    try:

        def write():
            try:
                return caller.call(
                    protocol.AddNode(kind="note", content="written after the takeover " * 4, status="live")
                )
            except MemtreeError:
                return None

        result = wait_until(write, timeout=COLD_START_S, what="a write through the new writer")
        assert result["id"]
        assert caller.call(protocol.Ping())["pid"] == system.pid("writer")
    finally:
        caller.close()


def test_actor_without_ready_is_killed_at_the_start_timeout_and_counted_as_a_crash(system_factory):
    s = system_factory
    # Alone, so no real actor's cold start races the 1 s start timeout.
    alone = {name: {"enabled": False} for name in s.expected}
    s.write_config(
        {"supervisor": {"startTimeoutS": 1, "maxRestarts": 1, "restartPeriodS": 600}},
        actors={**alone, "mute": {"module": "tests.support.actors.mute"}},
    )
    s.serve()
    mute = wait_until(lambda: s.actor("mute", {"FATAL"}), timeout=COLD_START_S, what="mute FATAL")
    assert mute["restarts"] == 1
    assert [a["name"] for a in s.status()] == ["mute"]
    log = s.log_tail(lines=80)
    assert log.count("mute: no READY within 1s, SIGKILL pid=") == 2
    assert "mute: FATAL, 1 restarts in 600s" in log


def test_children_do_not_outlive_a_supervisor_killed_with_sigkill(system):
    pids = list(system.pids().values())
    sup = system.procs[0]
    os.kill(sup.pid, signal.SIGKILL)  # only the supervisor, not its group
    sup.wait(timeout=deadline(10))
    # PR_SET_PDEATHSIG sends each child SIGTERM when the supervisor dies.
    assert len(pids) >= 2
    wait_until(lambda: system.leftovers() == [], timeout=COLD_START_S, what="children of the killed supervisor gone")
