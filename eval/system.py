"""The whole memtree system for a bench: ``memtree serve --no-front`` in a
project directory, waited for until the writer runs, and always shut down.

One place for it, so every bench starts the system the way a user's Claude
Code does (``-P``: nothing imported from the project) and never leaves a
process behind (``ctl shutdown``, then the process group, each with a deadline).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

from memtree.runtime.group import start_group

MEMTREE = [sys.executable, "-P", "-m", "memtree.cli"]


def ctl(project: str, env: dict, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``memtree ctl <args>`` in the project; never raises on a non-zero exit."""
    return subprocess.run(
        [*MEMTREE, "ctl", *args], cwd=project, env=env, capture_output=True, text=True, timeout=timeout
    )


def writer_running(project: str, env: dict) -> bool:
    done = ctl(project, env, "status", "--json")
    try:
        actors = json.loads(done.stdout)["actors"] if done.returncode == 0 else []
    except (ValueError, KeyError, TypeError):
        actors = []
    return any(a.get("name") == "writer" and a.get("state") == "RUNNING" for a in actors)


def wait_writer(project: str, env: dict, up: bool = True, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if writer_running(project, env) == up:
            return
        time.sleep(0.2)
    raise SystemExit(f"the writer did not become {'RUNNING' if up else 'stopped'} within {timeout:g} s")


def start(project: str, env: dict, timeout: float = 120) -> subprocess.Popen:
    """The supervisor without the MCP front, its writer RUNNING."""
    proc = start_group([*MEMTREE, "serve", "--no-front"], cwd=project, env=env)
    try:
        wait_writer(project, env, up=True, timeout=timeout)
    except BaseException:
        shutdown(proc, project, env)
        raise
    return proc


def shutdown(proc: subprocess.Popen, project: str, env: dict) -> None:
    """``ctl shutdown`` (the supervisor stops its actors in order), then the
    process group if it did not go within 30 s."""
    if proc.poll() is None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            ctl(project, env, "shutdown")
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group, even after a clean exit
    proc.wait(10)


@contextlib.contextmanager
def serving(project: str, env: dict, timeout: float = 120) -> Iterator[subprocess.Popen]:
    proc = start(project, env, timeout)
    try:
        yield proc
    finally:
        shutdown(proc, project, env)
