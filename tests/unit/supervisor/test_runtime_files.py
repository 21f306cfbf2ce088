"""What memtree leaves on disk: nothing in the runtime dir after a clean
shutdown (no per-user dirs piling up under /tmp), a private MEMTREE_HOME
(dirs 0700, files 0600), and a singleton lock handed over at its path."""

import fcntl
import os
import shutil
import stat
import subprocess
import tempfile

import pytest

from memtree import protocol
from memtree.paths import compute_project, store_paths
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, deadline_ms, wait_until

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


def _git_project(s) -> None:
    subprocess.run([*GIT, "init", "-q", s.project], check=True)
    subprocess.run([*GIT, "-C", s.project, "commit", "-q", "--allow-empty", "-m", "init"], check=True)


def _use_home(s, monkeypatch, home: str) -> None:
    s.home = home
    s.env["MEMTREE_HOME"] = home
    monkeypatch.setenv("MEMTREE_HOME", home)
    root, phash, final = compute_project(s.project)
    assert final
    s.paths = store_paths(root, phash, home=home)


def _not_private(home: str) -> set[str]:
    bad = set()
    for d, _dirs, files in os.walk(home):
        if stat.S_IMODE(os.stat(d).st_mode) != 0o700:
            bad.add(f"{d} {oct(stat.S_IMODE(os.stat(d).st_mode))}")
        for f in files:
            st = os.lstat(os.path.join(d, f))
            if stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) != 0o600:
                bad.add(f"{os.path.join(d, f)} {oct(stat.S_IMODE(st.st_mode))}")
    return bad


@pytest.mark.parametrize("depth", ["short", "deep"])
def test_a_clean_shutdown_leaves_no_runtime_files_and_the_home_is_private(system_factory, monkeypatch, tmp_path, depth):
    s = system_factory
    _git_project(s)
    base = tempfile.mkdtemp(prefix="mt", dir="/tmp") if depth == "short" else str(tmp_path / ("d" * 80))
    try:
        _use_home(s, monkeypatch, os.path.join(base, "home"))  # not there yet: serve creates it
        in_store = s.paths.run_dir.startswith(s.paths.store_dir + os.sep)
        assert in_store == (depth == "short")  # a deep store puts its sockets in a per-user dir under /tmp
        s.write_config()
        sup = s.serve()
        s.wait_running()
        running = set(os.listdir(s.paths.run_dir))
        # Positive control: while up, the sockets and locks are there.
        assert {
            "write.sock",
            "ingest.sock",
            "events.sock",
            "writer.lock",
            f"sup-{sup.pid}.ctl.sock",
            f"sup-{sup.pid}.hb.sock",
            *(f"{n}.lock" for n in s.expected),
        } <= running
        assert os.path.isfile(os.path.join(s.home, "roots", os.listdir(os.path.join(s.home, "roots"))[0]))

        done = s.ctl("shutdown")
        assert done.returncode == 0, done.stderr
        assert sup.wait(timeout=COLD_START_S) == 0
        if in_store:
            assert set(os.listdir(s.paths.run_dir)) == set()
        else:
            assert not os.path.exists(s.paths.run_dir)
        assert _not_private(s.home) == set()
    finally:
        if depth == "short":
            shutil.rmtree(base, ignore_errors=True)


def test_a_standby_takes_over_a_cleanly_stopped_singleton_and_holds_the_lock_at_its_path(system_factory):
    s = system_factory
    s.write_config()
    first, second, _ = s.serve_two()
    holder = s.actor("writer", {"RUNNING"})["supervisor_pid"]
    done = s.ctl("stop", "writer")
    assert done.returncode == 0, done.stderr
    other = second.pid if holder == first.pid else first.pid
    wait_until(
        lambda: (
            {a["supervisor_pid"]: a["state"] for a in s.status() if a["name"] == "writer"}
            == {holder: "STOPPED", other: "RUNNING"}
        ),
        timeout=COLD_START_S,
        what="the standby writer taking over",
    )
    # The old holder removed its lock file; the new one must hold the lock on the
    # file now at the path, or a third writer could take it too.
    fd = os.open(s.paths.lock_file("writer"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    caller = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    try:
        assert caller.call(protocol.Ping())["pid"] == s.actor("writer", {"RUNNING"})["pid"]
    finally:
        caller.close()
