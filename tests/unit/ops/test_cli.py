"""The `memtree` command line: exit codes, one-line errors, and serve's life with stdin."""

import json
import os
import subprocess

import psutil
import pytest

from tests.support import COLD_START_S, PYTHON, deadline, spawn


def _memtree(*args, cwd, env, stdin=subprocess.DEVNULL, timeout=None):
    return subprocess.run(
        [PYTHON, "-m", "memtree.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdin=stdin,
        capture_output=True,
        text=True,
        timeout=deadline(60) if timeout is None else timeout,
    )


def test_no_command_prints_usage_and_exits_2(tmp_path):
    done = _memtree(cwd=tmp_path, env={})
    assert done.returncode == 2 and "usage: memtree COMMAND" in done.stderr
    done = _memtree("frobnicate", cwd=tmp_path, env={})
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        == "memtree: unknown command 'frobnicate'; commands: serve, ctl, install, doctor, demo, reembed, redact, import, stats"
    )


def test_ctl_without_a_supervisor_says_so_and_exits_1(system_factory):
    s = system_factory
    done = s.ctl("status")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip() == (
        f"memtree ctl: no memtree supervisor is running for {s.paths.project_root} (store {s.paths.store_dir})"
    )
    # A socket file left by a dead supervisor is not a supervisor; it is cleaned up.
    os.makedirs(s.paths.run_dir, exist_ok=True)
    dead = subprocess.Popen([PYTHON, "-c", "pass"])
    dead.wait()
    stale = os.path.join(s.paths.run_dir, f"sup-{dead.pid}.ctl.sock")
    open(stale, "w").close()
    done = s.ctl("restart", "writer")
    assert done.returncode == 1 and "no memtree supervisor is running" in done.stderr
    assert not os.path.exists(stale)


def test_serve_with_a_missing_project_dir_exits_2(tmp_path):
    done = _memtree("serve", "--project", str(tmp_path / "nope"), cwd=tmp_path, env={"MEMTREE_HOME": str(tmp_path)})
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"memtree serve: --project {tmp_path / 'nope'}: not a directory"


def _config_error(s, data) -> subprocess.CompletedProcess:
    with open(os.path.join(s.project, ".memtree", "config.json"), "w") as f:
        json.dump(data, f)
    done = _memtree("serve", "--no-front", cwd=s.project, env=s.env, timeout=COLD_START_S)
    assert done.returncode == 2 and done.stdout == ""
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    return done


def test_serve_with_a_bad_config_names_the_key_and_file_and_exits_2(system_factory):
    s = system_factory
    cfg = os.path.join(s.project, ".memtree", "config.json")
    done = _config_error(s, {"supervisor": {"heartbeatMs": "fast"}})
    assert done.stderr.startswith("memtree serve: ") and cfg in done.stderr and "supervisor.heartbeatMs" in done.stderr
    done = _config_error(s, {"actors": {"walker.extra": {"module": 3}}})
    assert f"{cfg}: actors.walker.extra.module must be a string, got 3" in done.stderr
    done = _config_error(s, {"actors": {"walker.extra": {"enabled": True}}})
    assert f"{cfg}: actors.walker.extra.module is required" in done.stderr
    done = _config_error(s, {"actors": {"writer": {"modul": "x"}}})
    assert f"{cfg}: unknown key actors.writer.modul" in done.stderr
    done = _config_error(s, {"actors": {"writer": {"module": "memtree.actors.no_writer"}}})
    assert done.stderr.strip() == (
        f"memtree serve: built-in actor writer: module memtree.actors.no_writer cannot be found (set in {cfg})"
    )


@pytest.mark.parametrize(
    "front, reason",
    [
        # A front that exits on EOF ends the session (whichever the supervisor notices first)...
        ("tests.support.actors.eof_front", ("mcp exited: the session is over", "stdin closed: Claude Code exited")),
        # ...and one that never reads stdin does not keep it alive: the supervisor sees the HUP itself.
        ("tests.support.actors.sleepy", ("stdin closed: Claude Code exited",)),
    ],
)
def test_closing_serve_stdin_stops_every_child(system_factory, front, reason):
    s = system_factory
    s.write_config(actors={"mcp": {"module": front}})
    proc = s.serve(front=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    actors = s.wait_running(["mcp", *s.expected])
    pids = [a["pid"] for a in actors]
    assert len(pids) >= 3
    proc.stdin.close()  # Claude Code exited
    # Stop is sequential with a 5 s per-child timeout; normally well under a second.
    assert proc.wait(timeout=COLD_START_S) == 0
    assert proc.stdout.read() == b""  # the supervisor never wrote to the MCP wire
    proc.stdout.close()
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    log = s.log_tail(lines=40)
    assert any(f"supervisor: shutting down ({r})" in log for r in reason), log


def test_serve_stops_children_in_reverse_start_order_on_sigterm(system):
    import signal

    os.kill(system.procs[0].pid, signal.SIGTERM)
    assert system.procs[0].wait(timeout=COLD_START_S) == 0
    lines = [ln for ln in system.log_tail(lines=40).splitlines() if "STOPPING" in ln]
    order = [ln.split("]: ", 1)[1].split(":")[0] for ln in lines]
    assert order[-1] == "writer" and order.index("walker.filter") < order.index("writer")


def test_serve_started_elsewhere_finds_the_project_from_claude_project_dir(system_factory, tmp_path):
    system_factory.write_config()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = spawn(
        [PYTHON, "-m", "memtree.cli", "serve", "--no-front"],
        cwd=str(elsewhere),
        env={**system_factory.env, "CLAUDE_PROJECT_DIR": system_factory.project},
        stdin=subprocess.DEVNULL,
    )
    system_factory.procs.append(proc)
    system_factory.seen_pids.add(proc.pid)
    actors = system_factory.wait_running()  # found through the project's own store
    assert {a["name"] for a in actors} >= {"writer", "walker.filter"}
    assert not os.listdir(elsewhere)


def test_ctl_status_json_without_a_supervisor_answers_running_false(system_factory):
    s = system_factory
    done = s.ctl("status", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "running": False,
        "project_root": s.paths.project_root,
        "store_dir": s.paths.store_dir,
        "supervisors": [],
        "actors": [],
        "message": f"no memtree supervisor is running for {s.paths.project_root} (store {s.paths.store_dir})",
    }


def test_demo_help_prints_help_and_runs_nothing(tmp_path):
    done = _memtree("demo", "--help", cwd=tmp_path, env={"MEMTREE_HOME": str(tmp_path / "home")}, timeout=deadline(30))
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("usage: memtree demo [-h]") and "[demo]" not in done.stdout
    assert not (tmp_path / "home").exists()
    bad = _memtree("demo", "--fast", cwd=tmp_path, env={}, timeout=deadline(30))
    assert bad.returncode == 2 and "unrecognized arguments: --fast" in bad.stderr and "[demo]" not in bad.stdout
