"""Runtime dirs left under /tmp by dead sessions are swept at start; a live
session's (a held lock, a listening socket), a young one and our own stay."""

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import zmq

from memtree.runtime import sweep
from tests.support import COLD_START_S, PYTHON, reap, spawn, wait_until

OLD = time.time() - 3600


@pytest.fixture
def parent():
    """A short base (socket paths must fit sun_path) holding memtree-<uid>/, removed after."""
    base = tempfile.mkdtemp(prefix="mt-sweep-", dir="/tmp")
    p = os.path.join(base, f"memtree-{os.getuid()}")
    os.mkdir(p, 0o700)
    yield p
    shutil.rmtree(base, ignore_errors=True)


def _dead_socket(path: str) -> None:
    """A socket file whose owner is gone: bound, then closed without unlink."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()


def _run_dir(parent: str, name: str, files=(), sockets=()) -> str:
    d = os.path.join(parent, name)
    os.mkdir(d, 0o700)
    for f in files:
        open(os.path.join(d, f), "w").close()
    for s in sockets:
        _dead_socket(os.path.join(d, s))
    return d


def _age(*dirs: str) -> None:
    for d in dirs:
        os.utime(d, (OLD, OLD))


def test_only_dead_sessions_dirs_are_removed(parent):
    dead = _run_dir(
        parent,
        "dead0000000000aa",
        files=["writer.lock", "walker.filter.lock"],
        sockets=["write.sock", "ingest.sock", "sup-999999.ctl.sock"],
    )
    empty = _run_dir(parent, "empty00000000000b")
    held = _run_dir(parent, "held000000000000c", files=["writer.lock"], sockets=["write.sock"])
    listening = _run_dir(parent, "listen0000000000d", files=["writer.lock"])
    young = _run_dir(parent, "young00000000000e", files=["writer.lock"], sockets=["write.sock"])
    ours = _run_dir(parent, "ours000000000000f")
    # A live session: another process holds its lock (flock), another binds a real zmq socket.
    holder = spawn(
        [
            PYTHON,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
            "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            os.path.join(held, "writer.lock"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        assert holder.stdout.readline().strip() == b"held"
        sock.bind(f"ipc://{os.path.join(listening, 'write.sock')}")
        _age(dead, empty, held, listening, ours)
        removed = sweep.sweep(parent, keep=ours)
        assert removed == 2
        assert set(os.listdir(parent)) == {os.path.basename(d) for d in (held, listening, young, ours)}
        # The live dirs keep every file they had.
        assert set(os.listdir(held)) == {"writer.lock", "write.sock"}
        assert set(os.listdir(listening)) == {"writer.lock", "write.sock"}
        # Positive control: once the holder is gone, the same dir is swept.
        holder.stdin.close()
        holder.wait(timeout=COLD_START_S)
        _age(held)
        assert sweep.sweep(parent, keep=ours) == 1
        assert not os.path.exists(held)
    finally:
        sock.close()
        ctx.term()
        reap(holder)


def test_serve_sweeps_a_dead_sessions_runtime_dir_at_start(parent, system_factory, monkeypatch):
    # parent first: it is removed after the system has shut down
    s = system_factory
    base = os.path.dirname(parent)
    s.env["XDG_RUNTIME_DIR"] = base
    monkeypatch.setenv("XDG_RUNTIME_DIR", base)
    from memtree.paths import store_paths

    s.paths = store_paths(s.paths.project_root, s.paths.project_hash, home=s.home)
    assert os.path.dirname(s.paths.run_dir) == parent, "the store must use the runtime dir for this test"
    dead = _run_dir(parent, "dead0000000000aa", files=["writer.lock"], sockets=["write.sock", "sup-999999.hb.sock"])
    _age(dead)
    s.write_config()
    s.serve()
    s.wait_running(["writer"])
    wait_until(lambda: not os.path.exists(dead), timeout=COLD_START_S, what="the dead session's dir swept")
    assert "removed 1 stale runtime dirs" in s.log_tail(lines=100)
    assert os.path.isdir(s.paths.run_dir) and "write.sock" in os.listdir(s.paths.run_dir)
