import json
import os
import signal
import subprocess

import apsw
import psutil
import pytest
import sqlite_vec
import zmq

from memtree.paths import compute_project, store_paths
from tests.support import COLD_START_S, PYTHON, WaitTimeout, beats, deadline, slowness, spawn, test_config, wait_until

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_RUNTIME_BASE: str | None = None


def pytest_configure(config):
    """Sockets of stores too deep for sun_path go to a runtime dir of this run,
    not the user's /tmp/memtree-<uid>: tests without a supervisor (which
    removes its dir) leave nothing behind, and parallel runs never meet."""
    global _RUNTIME_BASE
    import tempfile

    _RUNTIME_BASE = tempfile.mkdtemp(prefix="mt-tests-", dir="/tmp")
    os.environ["XDG_RUNTIME_DIR"] = _RUNTIME_BASE
    # A shell starts a background job (`make test &` in a script) with SIGINT ignored, and
    # every child would inherit that: a Ctrl-C test (memtree reembed) saw its process finish.
    # Children of a handled SIGINT start with the default, as from a terminal.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_unconfigure(config):
    import shutil

    if _RUNTIME_BASE is None:
        return
    left = [os.path.join(d, f) for d, _, files in os.walk(_RUNTIME_BASE) for f in files]
    if left:  # a socket or lock nobody removed: say so (the dirs are ours to remove either way)
        print(f"\nruntime files left by the tests ({len(left)}): {left[:5]}")
    shutil.rmtree(_RUNTIME_BASE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """pytest-timeout's limit (pyproject's, or a test's own mark) is a deadline
    like the others: stretched by the session's slowness."""
    base = float(config.getoption("timeout", None) or config.getini("timeout") or 0)
    for item in items:
        mark = item.get_closest_marker("timeout")
        kwargs = dict(mark.kwargs) if mark is not None else {}
        given = mark.args[0] if mark is not None and mark.args else kwargs.pop("timeout", None)
        seconds = float(given) if given is not None else base
        if seconds:
            item.add_marker(pytest.mark.timeout(deadline(seconds), **kwargs), append=False)


def pytest_report_header(config):
    return (
        f"slowness {slowness():g} (deadlines stretched by it; tests/support.py), "
        f"apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()}), "
        f"sqlite-vec {sqlite_vec.__version__ if hasattr(sqlite_vec, '__version__') else '?'}, "
        f"pyzmq {zmq.pyzmq_version()} (libzmq {zmq.zmq_version()})"
    )


# The actors a default `system` runs, each expected RUNNING: every built-in but
# the front (a headless serve has none). A missing one is a startup error.
def _built_in_actors() -> list[str]:
    from memtree.supervisor.spec import DEFAULT_TABLE, FRONT

    return [name for name, _ in DEFAULT_TABLE if name != FRONT]


# 3 s without a heartbeat before a SIGKILL (at slowness 1): a busy 2-core box
# must not make a healthy actor look hung (tests/support.py's 1 s is tight here).
MISSED_BEATS = beats(15)


class System:
    """A project in tmp_path with its own MEMTREE_HOME, and the `memtree serve`s running on it."""

    def __init__(self, tmp_path, monkeypatch):
        self.project = str(tmp_path / "project")
        self.home = str(tmp_path / "home")
        os.makedirs(os.path.join(self.project, ".memtree"), exist_ok=True)
        os.makedirs(self.home, exist_ok=True)
        monkeypatch.setenv("MEMTREE_HOME", self.home)
        self.env = {
            "MEMTREE_HOME": self.home,
            "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p),
        }
        if os.environ.get("XDG_RUNTIME_DIR"):  # this run's runtime base (pytest_configure), for env built from scratch
            self.env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]
        root, phash, _ = compute_project(self.project)
        self.paths = store_paths(root, phash, home=self.home)
        self.procs: list[subprocess.Popen] = []
        self.seen_pids: set[int] = set()
        self.expected = _built_in_actors()

    # -- setup ------------------------------------------------------------------
    def write_config(self, overrides: dict | None = None, actors: dict | None = None) -> None:
        merged = {"supervisor": {"missedHeartbeats": MISSED_BEATS}}
        for section, values in (overrides or {}).items():
            if isinstance(values, dict):
                merged.setdefault(section, {}).update(values)
            else:
                merged[section] = values
        data = dict(test_config(merged).data)
        data["actors"] = dict(actors or {})
        with open(os.path.join(self.project, ".memtree", "config.json"), "w") as f:
            json.dump(data, f)

    def write_crashy_config(self, flag, max_restarts: int) -> None:
        """The config with the test actor that crashes while ``flag`` exists (tests/support/actors/crashy.py)."""
        flag.write_text("")
        self.env["CRASHY_FLAG"] = str(flag)
        self.write_config(
            {"supervisor": {"maxRestarts": max_restarts, "restartPeriodS": 60}},
            actors={"crashy": {"module": "tests.support.actors.crashy"}},
        )

    def serve(self, front: bool = False, **popen) -> subprocess.Popen:
        argv = [PYTHON, "-m", "memtree.cli", "serve"] + ([] if front else ["--no-front"])
        popen.setdefault("stdin", subprocess.DEVNULL)
        proc = spawn(argv, env=self.env, cwd=self.project, **popen)
        self.procs.append(proc)
        self.seen_pids.add(proc.pid)
        return proc

    def serve_two(self) -> tuple[subprocess.Popen, subprocess.Popen, list[dict]]:
        """A second supervisor after the first is up (it stands by for every singleton):
        (first, second, every actor of both)."""
        first = self.serve()
        self.wait_running()
        second = self.serve()
        return first, second, self.wait_running(count=2)

    # -- control ----------------------------------------------------------------
    def cli(self, *args: str, timeout: float = 60, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        """`memtree ...` as an operator runs it, from the project directory (``env``: more variables)."""
        return subprocess.run(
            [PYTHON, "-m", "memtree.cli", *args],
            cwd=self.project,
            env={**os.environ, **self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            **kw,
        )

    def ctl(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return self.cli("ctl", *args, timeout=timeout)

    def status(self) -> list[dict]:
        """Every actor of every supervisor, over the real control sockets (in-process, fast)."""
        from memtree.ops.ctl import CtlFailure, Supervisors

        try:
            sups = Supervisors(self.paths)
        except CtlFailure:
            return []
        try:
            actors = [a for st in sups.statuses().values() for a in st["actors"]]
        except CtlFailure:
            return []
        finally:
            sups.close()
        self.seen_pids.update(a["pid"] for a in actors if a["pid"])
        return actors

    def actor(self, name: str, states=None) -> dict | None:
        rows = [a for a in self.status() if a["name"] == name and (states is None or a["state"] in states)]
        return rows[0] if len(rows) == 1 else None

    def pid(self, name: str) -> int:
        return self.actor(name, {"RUNNING"})["pid"]

    def restart(self, name: str) -> int:
        """`memtree ctl restart NAME`; the new pid."""
        done = self.ctl("restart", name)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip().rsplit("pid=", 1)[1])

    def pids(self) -> dict[str, int]:
        return {a["name"]: a["pid"] for a in self.status() if a["state"] == "RUNNING"}

    # Five cold interpreters (supervisor, writer, walkers) on 2 shared cores.
    def wait_running(self, names=None, count: int = 1, timeout: float = 2 * COLD_START_S) -> list[dict]:
        """Wait until each name (default: every expected actor) has ``count`` rows
        RUNNING/STANDBY and exactly one RUNNING."""
        names = self.expected if names is None else names

        def ready():
            actors = self.status()
            for n in names:
                rows = [a for a in actors if a["name"] == n]
                if (
                    len(rows) != count
                    or [a["state"] for a in rows].count("RUNNING") != 1
                    or any(a["state"] not in ("RUNNING", "STANDBY") for a in rows)
                ):
                    return False
            return actors

        try:  # allows for cold interpreters importing zmq/apsw on a loaded 2-core box
            return wait_until(ready, timeout=timeout, what=f"{sorted(names)} RUNNING")
        except WaitTimeout as e:
            raise WaitTimeout(f"{e}\nstatus: {self.status()}\nsupervisor.log:\n{self.log_tail()}") from None

    def log_tail(self, name: str = "supervisor", lines: int = 15) -> str:
        try:
            with open(self.paths.log_file(name)) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "<no log>"

    # -- teardown ---------------------------------------------------------------
    def shutdown(self) -> None:
        from memtree.ops.ctl import CtlFailure, Supervisors
        from memtree.protocol import CtlShutdown

        try:
            self.status()  # one last look at every pid
            sups = Supervisors(self.paths)
            for pid in list(sups.callers):
                try:
                    sups.call(pid, CtlShutdown(), 3000)
                except CtlFailure:
                    pass
            sups.close()
        except CtlFailure:
            pass
        for proc in self.procs:
            try:
                proc.wait(timeout=deadline(15))
            except subprocess.TimeoutExpired:
                pass
            try:  # the safety net
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait(timeout=deadline(5))

    def leftovers(self) -> list[int]:
        left = []
        for pid in sorted(self.seen_pids):
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    left.append(pid)
            except psutil.NoSuchProcess:
                pass
        return left


@pytest.fixture
def system_factory(tmp_path, monkeypatch):
    """A System not started yet: write_config(...), serve(...), wait_running(...)."""
    system = System(tmp_path, monkeypatch)
    yield system
    system.shutdown()
    left = system.leftovers()
    assert left == [], f"processes left behind: {left}"


@pytest.fixture
def system(system_factory):
    """`memtree serve --no-front` on a fresh project, every actor RUNNING."""
    system_factory.write_config()
    system_factory.serve()
    system_factory.wait_running()
    return system_factory


@pytest.fixture
def h(tmp_path):
    """A real writer process and a Services instance for driving the wrapped
    tools directly (tests/support/tools_harness.py)."""
    from tests.support.tools_harness import Harness

    harness = Harness(tmp_path)
    yield harness
    harness.close()


@pytest.fixture(autouse=True)
def _outside_claude_code(monkeypatch):
    """Every entry point prefers CLAUDE_PROJECT_DIR (paths.start_dir); a test
    run from inside Claude Code must not inherit the developer's project."""
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
