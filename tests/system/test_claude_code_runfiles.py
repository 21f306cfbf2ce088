"""When the REAL Claude Code CLI ends its session, memtree ends by itself and
leaves no run files (sockets, locks) behind.

The shared runner (tests/support/claude_code/cli.py) SIGKILLs the CLI's process group
as a safety net the moment the CLI exits; here the group is given time to end
on its own first, so the test sees what the CLI itself does to the server
(stdin closed, signals) and what memtree then leaves in its runtime dir.
"""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest

from memtree.paths import compute_project, store_paths
from tests.support import deadline, wait_until
from tests.support.claude_code import cli
from tests.system.test_claude_code import _installed

pytestmark = pytest.mark.timeout(cli.RUN_TIMEOUT_S + 300)
END_S = deadline(30.0)  # a loaded 2-core box: SIGTERM to six actors, each removing its files


def _group(pgid: int) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(p.pid) == pgid and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return out


def _run_files(run_dir: str) -> list[str]:
    try:
        return sorted(os.listdir(run_dir))
    except FileNotFoundError:
        return []


def test_after_a_real_cli_session_memtree_ends_by_itself_and_leaves_no_run_files(claude_bin, tmp_path):
    proj, memtree_home, env = _installed(tmp_path)
    root, phash, _ = compute_project(proj)
    paths = store_paths(root, phash, home=memtree_home)
    script = {
        "side_text": "ok",
        "turns": [
            {"tool_use": {"name": "Bash", "input": {"command": "echo run-files", "description": "echo"}}},
            {"tool_use": {"name": "mcp__memtree__recall", "input": {"query": "run-files"}}},
            {"text": "done"},
        ],
    }
    out = str(tmp_path / "out")
    api = cli.FakeApi(script, out, proj)
    env = {**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-dummy"}
    proc = cli.start_session(claude_bin, env, proj, "Bash mcp__memtree", out)
    killed = []
    try:
        stdout, stderr = proc.communicate(timeout=deadline(cli.RUN_TIMEOUT_S))
        assert proc.returncode == 0, stderr[-2000:]
        assert json.loads(stdout)["session_id"]
        try:  # the CLI is gone; memtree (in its process group) must end by itself
            wait_until(lambda: not _group(proc.pid), timeout=END_S, what="memtree's processes to end")
        except AssertionError:
            killed = [" ".join(p.cmdline())[:160] for p in _group(proc.pid)]
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the safety net
        except ProcessLookupError:
            pass
        proc.wait()
        api.close()
        cli.reap_leftovers(str(tmp_path))
    with open(paths.log_file("supervisor")) as f:
        log = f.read()
    assert killed == [], f"still running {END_S:g} s after the CLI exited: {killed}\n{log[-1500:]}"
    # The CLI sends SIGINT, SIGTERM 0.1 s later, SIGKILL 0.4 s after that: on a loaded box the
    # supervisor may be cut short; its own sockets go first, the actors end and clean up by themselves.
    assert "supervisor: shutting down (SIG" in log or "stdin closed" in log, log[-1500:]
    assert _run_files(paths.run_dir) == [], f"{paths.run_dir}: {_run_files(paths.run_dir)}\n{log[-1500:]}"
