"""`memtree ctl` as an operator runs it, against a running system."""

import json
import sys

from memtree import protocol
from tests.support import deadline


def test_ctl_restart_by_short_name_gives_a_new_pid_and_leaves_the_others(system):
    before = system.pids()
    new_pid = system.restart("filter")
    after = system.pids()
    assert new_pid == after["walker.filter"]
    assert after["walker.filter"] != before["walker.filter"]
    assert after["writer"] == before["writer"]
    assert system.actor("walker.filter")["restarts"] == 0  # an operator restart is not a crash


def test_ctl_status_json_lists_every_actor_with_its_fields(system):
    done = system.ctl("status", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    rows = {a["name"]: a for a in data["actors"]}
    assert {"writer", "walker.filter"} <= set(rows)
    sup_pid = system.procs[0].pid
    for a in rows.values():
        assert a["state"] == "RUNNING" and a["supervisor_pid"] == sup_pid
        assert a["pid"] == system.pid(a["name"])
        assert a["rss"] > 0 and a["cpu"] >= 0 and a["uptime_s"] > 0 and a["last_heartbeat_s"] >= 0
        assert a["backlog"] >= 0 and a["restarts"] == 0
    table = system.ctl("status")
    assert table.returncode == 0
    header, *lines = table.stdout.split("\n\n")[0].splitlines()
    assert header.split()[:9] == ["ACTOR", "STATE", "PID", "UPTIME", "RESTARTS", "RSS", "CPU", "HEARTBEAT", "BACKLOG"]
    assert {ln.split()[0] for ln in lines} == set(rows)


def test_ctl_unknown_actor_is_a_clear_error_listing_the_names(system):
    done = system.ctl("restart", "nosuch")
    assert done.returncode == 2
    assert done.stderr.startswith("memtree ctl: unknown actor 'nosuch'; actors: ")
    assert "walker.filter" in done.stderr and "writer" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_ctl_stop_leaves_an_actor_stopped_until_start(system):
    writer = system.pid("writer")
    done = system.ctl("stop", "filter")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "walker.filter: STOPPED pid=-"
    assert system.actor("walker.filter")["state"] == "STOPPED"
    done = system.ctl("start", "walker.filter")
    assert done.returncode == 0, done.stderr
    assert system.actor("walker.filter")["state"] == "RUNNING"
    assert system.pid("writer") == writer


def test_second_lifecycle_command_on_the_same_actor_gets_busy(system):
    import zmq

    ep = system.paths.endpoint(protocol.sup_control_sock(system.procs[0].pid))
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(ep)
    try:
        # Both on one connection, so they arrive in order. The first restart
        # replies only once the new process is RUNNING (a cold interpreter
        # start); the second is handled long before that.
        first_id, first = protocol.encode_call(protocol.CtlRestart(name="filter"))
        second_id, second = protocol.encode_call(protocol.CtlRestart(name="walker.filter"))
        sock.send(first)
        sock.send(second)
        replies = []
        for _ in range(2):
            assert sock.poll(60000), f"no reply; got {replies}"
            replies.append(protocol.decode(sock.recv()))
        assert [r.id for r in replies] == [second_id, first_id]
        assert replies[0].body == {
            "ok": False,
            "error": {"code": "busy", "message": "walker.filter: a restart is already in progress"},
        }
        assert protocol.reply_result(replies[1])["state"] == "RUNNING"
    finally:
        sock.close(linger=0)
    assert system.actor("walker.filter")["state"] == "RUNNING"


def test_ctl_shutdown_stops_every_process(system):
    done = system.ctl("shutdown")
    assert done.returncode == 0, done.stderr
    assert system.procs[0].wait(timeout=deadline(30)) == 0
    assert system.leftovers() == []
    after = system.ctl("status")
    assert after.returncode == 1
    assert after.stderr.strip() == (
        f"memtree ctl: no memtree supervisor is running for {system.paths.project_root} "
        f"(store {system.paths.store_dir})"
    )


def test_ctl_from_a_subdirectory_sees_both_supervisors_and_stop_goes_to_the_holder(system_factory):
    import os
    import subprocess

    from memtree.paths import compute_project, store_paths
    from tests.support import wait_until

    s = system_factory
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", s.project], check=True)
    subprocess.run([*git, "-C", s.project, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    root, phash, final = compute_project(s.project)
    assert final
    s.paths = store_paths(root, phash, home=s.home)
    s.write_config()
    first, second, _ = s.serve_two()

    sub = os.path.join(s.project, "src", "deep")
    os.makedirs(sub)
    table = subprocess.run(
        [sys.executable, "-m", "memtree.cli", "ctl", "status"],
        cwd=sub,
        env={**os.environ, **s.env},
        capture_output=True,
        text=True,
        timeout=deadline(60),
    )
    assert table.returncode == 0, table.stderr
    col = table.stdout.splitlines()[0].split().index("SUPERVISOR")
    filters = {ln.split()[col]: ln.split()[1] for ln in table.stdout.splitlines() if ln.startswith("walker.filter")}
    assert filters == {str(first.pid): "RUNNING", str(second.pid): "STANDBY"}

    done = s.ctl("stop", "filter")
    assert done.returncode == 0, done.stderr
    # The holder's filter stopped; the standby in the other supervisor takes the role.
    rows = wait_until(
        lambda: (
            {a["supervisor_pid"]: a["state"] for a in s.status() if a["name"] == "walker.filter"}
            == {first.pid: "STOPPED", second.pid: "RUNNING"}
        ),
        timeout=deadline(20),
        what="standby filter takeover",
    )
    assert rows


def test_a_stopped_row_shows_no_heartbeat_cpu_or_counters_of_its_last_run(system):
    done = system.ctl("stop", "filter")
    assert done.returncode == 0, done.stderr
    rows = {a["name"]: a for a in json.loads(system.ctl("status", "--json").stdout)["actors"]}
    stopped = rows["walker.filter"]
    assert stopped["state"] == "STOPPED"
    assert {k: stopped[k] for k in ("pid", "uptime_s", "rss", "cpu", "last_heartbeat_s", "backlog", "info")} == {
        "pid": None,
        "uptime_s": None,
        "rss": None,
        "cpu": None,
        "last_heartbeat_s": None,
        "backlog": None,
        "info": {},
    }
    # Positive control: a running walker still reports all of them.
    running = rows["walker.staleness"] if "walker.staleness" in rows else rows["writer"]
    assert running["pid"] and running["last_heartbeat_s"] is not None and running["backlog"] is not None
    table = system.ctl("status").stdout.splitlines()
    line = next(ln.split() for ln in table if ln.startswith("walker.filter"))
    assert line[1:9] == ["STOPPED", "-", "-", "0", "-", "-", "-", "-"]  # then a NOTE column, "-"


def test_ctl_on_the_front_of_a_headless_system_says_there_is_no_front(system):
    for cmd in ("restart", "stop", "start"):
        done = system.ctl(cmd, "mcp")
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            "memtree ctl: there is no MCP front (mcp): this memtree runs headless "
            "(serve --no-front); a front runs only inside a Claude Code session and ends with it\n"
        )
    # Positive control: a name that is no actor at all is still "unknown".
    done = system.ctl("restart", "mcpx")
    assert done.returncode == 2 and done.stderr.startswith("memtree ctl: unknown actor 'mcpx'")
