"""The wrapped bash tool: real bash processes, a real writer, a real SQLite file."""

from __future__ import annotations

import os
import re

import psutil
import pytest

from memtree import tokens
from memtree.tools.bash import bash
from tests.support import COLD_START_S, deadline, wait_until
from tests.support.tools_harness import Harness, stored_node_id


def test_command_exit_stdout_and_stderr_are_stored(h):
    out = h.run(bash, "pwd; echo to-stderr >&2; exit 3")
    node = stored_node_id(out)
    assert "exit 3" in out and h.root in out and "to-stderr" in out
    kind, content, code, cmd = h.rows(
        "SELECT kind, content, json_extract(metadata,'$.exit'), json_extract(metadata,'$.command')"
        " FROM nodes WHERE id=?",
        (node,),
    )[0]
    assert kind == "tool_output" and code == 3 and cmd == "pwd; echo to-stderr >&2; exit 3"
    assert "--- stdout ---\n" + h.root in content and "--- stderr ---\nto-stderr" in content


def test_secrets_in_output_are_redacted_before_storage(h):
    out = h.run(bash, "echo AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    content = h.rows("SELECT content FROM nodes WHERE id=?", (stored_node_id(out),))[0][0]
    assert "wJalrXUtnFEMI" not in content and "REDACTED" in content


def test_timeout_kills_the_whole_process_group(h, tmp_path):
    pidfile = tmp_path / "child.pid"
    out = h.run(bash, f"sleep 300 & echo $! > {pidfile}; wait", timeout_s=1)
    assert "killed after the 1s timeout" in out
    child = int(pidfile.read_text())

    def gone():
        try:
            return psutil.Process(child).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_until(gone, timeout=deadline(10), what=f"background child {child} killed")


def test_denylisted_command_runs_but_nothing_is_stored(tmp_path):
    h = Harness(tmp_path, {"bash": {"deny": [r"^cat secrets"]}})
    try:
        h.run(bash, "echo control-output-line")  # positive control: stored
        base = h.counts()
        assert base[0] > 0
        marker = tmp_path / "ran"
        out = h.run(bash, f"printenv HOME; touch {marker}")
        assert "not stored" in out and os.environ["HOME"] in out and marker.exists()
        h.write("secrets.txt", "hunter2\n")
        out = h.run(bash, "cat secrets.txt")
        assert "not stored" in out and "bash.deny" in out and "hunter2" in out
        assert h.counts() == base
        h.run(bash, "echo another-control-line")
        assert h.counts()[0] > base[0]
    finally:
        h.close()


def test_capture_bash_off_runs_and_stores_nothing(tmp_path):
    h = Harness(tmp_path, {"capture": {"bash": False}})
    try:
        before = h.counts()
        out = h.run(bash, "echo visible-output")
        assert "visible-output" in out and "capture.bash is off" in out
        assert h.counts() == before
    finally:
        h.close()


def test_output_over_the_cap_is_counted_and_dropped(tmp_path):
    h = Harness(tmp_path, {"bash": {"maxOutputBytes": 1000}})
    try:
        out = h.run(bash, "head -c 5000 /dev/zero | tr '\\0' 'a'; echo")
        assert "5001 bytes stdout" in out and "4001 bytes over bash.maxOutputBytes" in out
        content = h.rows("SELECT content FROM nodes WHERE id=?", (stored_node_id(out),))[0][0]
        assert content.count("a") <= 1100
    finally:
        h.close()


@pytest.mark.parametrize(
    "kw",
    [
        {"command": ""},
        {"command": "  "},
        {"command": 5},
        {"command": "true", "timeout_s": 0},
        {"command": "true", "timeout_s": -1},
        {"command": "true", "timeout_s": "9"},
        {"command": "true", "timeout_s": 100000},
        {"command": "true", "budget_tokens": 0},
    ],
)
def test_bad_arguments_are_clear_errors_and_nothing_runs(h, kw):
    h.refused(bash, **kw)


@pytest.mark.parametrize("budget", [1, 5, 20, 100, 1000, None])
def test_budget_is_never_exceeded_and_the_elision_says_what_was_left_out(h, budget):
    out = h.run(bash, "seq 1 5000; seq 1 300 >&2", budget_tokens=budget)
    assert tokens.count(out) <= (budget or 2000)
    if budget is None or budget >= 100:
        node = stored_node_id(out)
        m = re.search(r"… (\d+) lines \((\d+) bytes\) of stdout left out; recall\(ids=\"(\w+)\"\)", out)
        assert m and m.group(3) == node, out
        block = out.split("--- stdout ---\n")[1].split("\n--- stderr ---")[0]
        shown = [line for line in block.splitlines() if line.isdigit()]
        assert int(m.group(1)) + len(shown) == 5000
        if budget != 100:  # head and tail both have room
            assert shown[0] == "1" and shown[-1] == "5000"


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _status_line(out: str) -> str:
    """The '[exit ...' status line of an answer (its last), without the node id part (it differs once deduped)."""
    return out.splitlines()[-1].split("; memtree ")[0]


def test_background_child_holding_the_output_gets_the_same_answer_every_time(h):
    command = "sleep 300 & echo started"
    answers = [h.run(bash, command, timeout_s=deadline(3)) for _ in range(3)]
    for out in answers:
        assert "started" in out and "timeout" not in out, out
        assert (
            "[exit 0; background processes still held the output after the shell exited: killed with its "
            "process group;" in out
        ), out
    assert {_status_line(out) for out in answers} == {_status_line(answers[0])}
    durations = [
        r[0]
        for r in h.rows(
            "SELECT json_extract(metadata,'$.duration_ms') FROM nodes WHERE kind='tool_output' ORDER BY created_at"
        )
    ]
    assert len(durations) == 1 and durations[0] < 3000  # returned when the shell exited, not at the timeout


def test_background_child_holding_the_output_is_killed(h, tmp_path):
    pidfile = tmp_path / "child.pid"
    control = tmp_path / "control.pid"
    out = h.run(bash, f"sleep 300 & echo $! > {pidfile}; echo started", timeout_s=5)
    assert "killed with its process group" in out
    wait_until(lambda: _gone(int(pidfile.read_text())), timeout=deadline(10), what="background child killed")
    # Positive control: a child that let go of the pipes is left running, and the answer says so.
    out = h.run(bash, f"sleep 300 >/dev/null 2>&1 & echo $! > {control}; echo started", timeout_s=5)
    pid = int(control.read_text())
    try:
        assert "let go of the output and are still running" in out, out
        assert not _gone(pid)
    finally:
        os.kill(pid, 9)


def test_a_cancelled_call_kills_the_process_group_of_its_command(h, tmp_path):
    import asyncio

    from memtree.front.services import Services

    pidfile = tmp_path / "child.pid"

    async def main():
        svc = Services(h.config, h.paths, session_id="test-session", src="test")
        try:
            task = asyncio.ensure_future(bash(svc, f"sleep 300 & echo $! > {pidfile}; wait", timeout_s=600))
            until = asyncio.get_running_loop().time() + COLD_START_S  # a loaded box
            while not (pidfile.exists() and pidfile.read_text().strip()):
                assert asyncio.get_running_loop().time() < until, "command never started"
                await asyncio.sleep(0.02)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            svc.close()
            svc.zctx.destroy(linger=0)

    asyncio.run(main())
    wait_until(lambda: _gone(int(pidfile.read_text())), timeout=deadline(10), what="cancelled command's child killed")


def _start_sleeper(f, pidfile):
    """A bash call through the front that leaves a ``sleep 300`` child and waits
    on it: (the pending call, the child's pid) once the child runs."""
    pending = f.portal.start_task_soon(
        f.client.call_tool, "bash", {"command": f"sleep 300 & echo $! > {pidfile}; wait", "timeout_s": 600}
    )
    # Allows for the front's cold start (the mcp SDK import) on a loaded box.
    wait_until(
        lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=COLD_START_S * 3, what="command started"
    )
    return pending, int(pidfile.read_text())


def test_a_front_that_exits_kills_the_commands_it_was_running(tmp_path):
    from tests.support.front_harness import Front

    pidfile = tmp_path / "child.pid"
    f = Front(tmp_path)
    try:
        pending, child = _start_sleeper(f, pidfile)
        assert not _gone(child)  # positive control: it runs while the front does
    finally:
        f.close()  # closes the front's stdin: the front exits
    wait_until(lambda: _gone(child), timeout=deadline(10), what="the running command's child killed on front exit")
    assert pending.done()


def test_a_front_stopped_by_sigterm_kills_the_commands_it_was_running(tmp_path):
    import signal

    from tests.support.front_harness import Front

    pidfile = tmp_path / "child.pid"
    f = Front(tmp_path)
    try:
        child = _start_sleeper(f, pidfile)[1]
        shell = psutil.Process(os.getpgid(child))  # the command's bash leads the group
        front = shell.parent()
        assert "memtree.actors.mcp_front" in " ".join(front.cmdline())
        front.send_signal(signal.SIGTERM)  # what the supervisor sends at shutdown
        # The group is killed at once; each process of it is reaped in its own time.
        wait_until(
            lambda: _gone(child) and _gone(shell.pid),
            timeout=deadline(10),
            what="the running command killed on SIGTERM",
        )
    finally:
        f.close()


def test_an_mcp_request_cancelled_by_the_client_kills_its_command_and_the_front_serves_on(tmp_path):
    from tests.support.front_harness import Front

    pidfile = tmp_path / "child.pid"
    f = Front(tmp_path)
    try:
        pending, child = _start_sleeper(f, pidfile)
        pending.cancel()  # the SDK client sends notifications/cancelled for an abandoned request
        wait_until(lambda: _gone(child), timeout=deadline(10), what="the cancelled request's command killed")
        assert "still-serving" in f.ok("bash", {"command": "echo still-serving"})  # same front, next call
    finally:
        f.close()
