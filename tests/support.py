"""Test helpers: real processes, deadlines on every wait, nothing left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Callable

from memtree.config.loader import Config, validate
from memtree.config.defaults import defaults
from memtree.paths import StorePaths, prepare_store, store_paths

PYTHON = sys.executable
# Real hook payloads captured from the real Claude Code CLI (see the folder's README).
PAYLOAD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "claude_code")
# A cold interpreter that imports zmq/apsw/mcp takes 1-3 s on a loaded 2-core box.
COLD_START_S = 20.0


class WaitTimeout(AssertionError):
    pass


def wait_until(pred: Callable[[], object], timeout: float = 10.0, interval: float = 0.02, what: str = "condition"):
    """Poll ``pred`` until truthy; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
        except Exception as e:  # noqa: BLE001 - the last error is the diagnostic
            last = e
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise WaitTimeout(f"timed out after {timeout}s waiting for {what}; last saw: {last!r}")
        time.sleep(interval)


def test_config(overrides: dict | None = None) -> Config:
    """Defaults with fast cadences for tests, plus ``overrides`` (sections merge)."""
    fast = {
        "supervisor": {"heartbeatMs": 200, "missedHeartbeats": 5, "backoffInitialMs": 50,
                       "backoffMaxMs": 500, "shutdownTimeoutS": 5},
        "walkers": {"filterIntervalMs": 500},
    }
    data = validate(fast, "<tests>", defaults())
    if overrides:
        data = validate(overrides, "<tests>", data)
    return Config(data, ["<tests>"])


def make_paths(tmp_path) -> StorePaths:
    """A store under tmp_path/home for a project at tmp_path/project. The hash
    is unique per test, so runtime socket dirs (used when tmp_path is too deep
    for a socket path) never collide between tests."""
    import hashlib

    root = str(tmp_path / "project")
    os.makedirs(root, exist_ok=True)
    phash = hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]
    paths = store_paths(root, phash, home=str(tmp_path / "home"))
    prepare_store(paths)
    return paths


def spawn(argv: list[str], env: dict | None = None, **kw) -> subprocess.Popen:
    """Start a process in its own process group so teardown can kill the tree."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.Popen(argv, env=full_env, start_new_session=True, **kw)


def close_bound(sock, ep: str) -> None:
    """Close a socket the test bound and remove its ipc file (libzmq unlinks
    it later, on its own thread, or never if the process exits first)."""
    from memtree.paths import socket_path

    sock.close(linger=0)
    try:
        os.unlink(socket_path(ep))
    except FileNotFoundError:
        pass


def reap(proc: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGTERM the group, wait with a deadline, then SIGKILL the group."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
