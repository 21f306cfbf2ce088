"""Test helpers: real processes, deadlines on every wait, nothing left behind."""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from memtree.config.defaults import defaults
from memtree.config.loader import Config, validate
from memtree.paths import StorePaths, prepare_store, store_paths

# The repository root (tests/support/ is two levels below it).
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PYTHON = sys.executable
# Real hook payloads captured from the real Claude Code CLI (see the folder's README).
PAYLOAD_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "claude_code")

# -- deadlines that depend on the machine's speed ---------------------------------
# Every such deadline in tests/ is written for a quiet 2-core box and passes
# through deadline(), which stretches it by how slow this machine is right now:
# measured once per session by timing what every actor does first (a cold
# interpreter importing zmq, apsw, psutil, orjson, sqlite_vec), against the
# same start on a quiet 2-core box. Never below 1 (no deadline is tighter than
# written) and capped, so a hung test still fails in bounded time.
QUIET_COLD_START_S = 0.25  # the calibrating start, median of 3, on a quiet 2-core box
_CALIBRATE = "import zmq, apsw, psutil, orjson, sqlite_vec"
MAX_SLOWNESS = 8.0
ENV_SLOWNESS = "MEMTREE_TEST_SLOWNESS"  # set: use this factor instead of measuring (and children see it)
_slowness: float | None = None


def calibrate(runs: int = 3) -> float:
    """Wall seconds of the calibrating cold start (the median of ``runs``)."""
    took = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run([PYTHON, "-P", "-c", _CALIBRATE], check=True, stdin=subprocess.DEVNULL, timeout=120)
        took.append(time.monotonic() - t0)
    return sorted(took)[len(took) // 2]


def slowness() -> float:
    """How much slower than a quiet box this one is, measured once per session."""
    global _slowness
    if _slowness is None:
        given = os.environ.get(ENV_SLOWNESS)
        measured = float(given) if given else calibrate() / QUIET_COLD_START_S
        _slowness = round(min(MAX_SLOWNESS, max(1.0, measured)), 2)
        os.environ[ENV_SLOWNESS] = str(_slowness)  # test subprocesses that import this reuse it
    return _slowness


def deadline(seconds: float) -> float:
    """A deadline that depends on the machine's speed, stretched by slowness()."""
    return seconds * slowness()


def deadline_ms(ms: int) -> int:
    return int(ms * slowness())


def beats(n: int) -> int:
    """Missed heartbeats before the supervisor kills an actor: the window is a deadline too."""
    return max(n, round(n * slowness()))


def __getattr__(name: str):
    # A cold interpreter that imports zmq/apsw/mcp takes 1-3 s on a loaded 2-core box.
    if name == "COLD_START_S":
        return deadline(20.0)
    raise AttributeError(name)


class WaitTimeout(AssertionError):
    pass


def wait_until(
    pred: Callable[[], object], timeout: float | None = None, interval: float = 0.02, what: str = "condition"
):
    """Poll ``pred`` until truthy; fail with the last value seen. ``timeout``
    is a deadline already (default: deadline(10))."""
    timeout = deadline(10.0) if timeout is None else timeout
    until = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = pred()
        except Exception as e:  # noqa: BLE001 - the last error is the diagnostic
            last = e
        else:
            if last:
                return last
        if time.monotonic() >= until:
            raise WaitTimeout(f"timed out after {timeout:g}s waiting for {what}; last saw: {last!r}")
        time.sleep(interval)


@contextlib.contextmanager
def held_up(mark, most_s: float = 40.0):
    """A foreground mark (memtree/runtime/foreground.py) up, and up again every
    50 ms for at most ``most_s``: a test stalled on a loaded box never finds it
    stale (STALE_S). A writer's own batch may still put it down meanwhile."""
    stop = threading.Event()

    def hold() -> None:
        until = time.monotonic() + most_s
        while not stop.wait(0.05) and time.monotonic() < until:
            mark.up()

    mark.up()
    holder = threading.Thread(target=hold)
    holder.start()
    try:
        yield
    finally:
        stop.set()
        holder.join(deadline(10))


def _threads_stopped(pid: int) -> bool:
    """Every thread of ``pid`` in the stopped state (/proc: T)."""
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states.append(f.read().rsplit(")", 1)[1].split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return bool(states) and all(s in ("T", "t") for s in states)


def sigstop(pid: int) -> None:
    """SIGSTOP ``pid`` and wait until every thread of it has stopped. kill()
    returns once the signal is queued: the group stop begins when one thread
    of the process is scheduled to take it (a niced main thread may wait for
    a core), and until then its other threads run on (an embed walker's
    query thread answered a query after kill() returned)."""
    os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: _threads_stopped(pid), timeout=deadline(10), interval=0.001, what=f"pid {pid} stopped")


def test_config(overrides: dict | None = None) -> Config:
    """Defaults with fast cadences for tests, plus ``overrides`` (sections merge)."""
    fast = {
        "supervisor": {
            "heartbeatMs": 200,
            "missedHeartbeats": beats(5),
            "backoffInitialMs": 50,
            "backoffMaxMs": 500,
            "shutdownTimeoutS": math.ceil(deadline(5)),
            "startTimeoutS": math.ceil(deadline(30)),
        },
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


def reap(proc: subprocess.Popen, timeout: float | None = None) -> None:
    """SIGTERM the group, wait with a deadline (default: deadline(5)), then SIGKILL the group."""
    timeout = deadline(5.0) if timeout is None else timeout
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
