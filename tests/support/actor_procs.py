"""Start the writer and walkers as real processes, without the supervisor."""

from __future__ import annotations

import contextlib
import os

import zmq

from memtree import protocol
from memtree.actors.base import ActorContext
from memtree.errors import MemtreeError
from memtree.runtime.client import Caller
from memtree.store import db as store_db
from tests.support import COLD_START_S, PYTHON, close_bound, deadline_ms, reap, spawn, wait_until


def start_actor(paths, config, module: str, name: str, hb_endpoint: str | None = None, extra_env: dict | None = None):
    """Spawn ``python -m module`` with the supervisor's environment (plus
    ``extra_env``); stderr to logs/<name>.log."""
    env = {**ActorContext(name, paths, config, hb_endpoint).child_env(), **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)
    log = open(paths.log_file(name), "ab")
    try:
        return spawn([PYTHON, "-m", module], env=env, stdout=log, stderr=log, stdin=open(os.devnull, "rb"))
    finally:
        log.close()


def start_writer(paths, config, hb_endpoint: str | None = None):
    proc = start_actor(paths, config, "memtree.actors.writer", "writer", hb_endpoint)
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(2000))
    try:
        # Allows for a cold interpreter importing zmq/apsw on a loaded box.
        wait_until(lambda: _ping(caller, proc), timeout=COLD_START_S, what="writer answering Ping")
    finally:
        caller.close()
    return proc


@contextlib.contextmanager
def node_events(paths):
    """A SUB socket on the writer's events, subscribed to ``NodesChanged``;
    closed at the end. PUB drops what it publishes before the subscription
    arrives: a caller makes changes until one comes, then reads on."""
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, protocol.NodesChanged.TYPE.encode())
    sub.connect(paths.endpoint(protocol.SOCK_EVENTS))
    try:
        yield sub
    finally:
        sub.close(linger=0)


@contextlib.contextmanager
def running_writer(paths, config):
    """A writer process on ``paths`` and a client of it, closed and reaped after."""
    proc = start_writer(paths, config)
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    try:
        yield caller
    finally:
        caller.close()
        reap(proc)


def _ping(caller: Caller, proc) -> bool:
    assert proc.poll() is None, f"writer exited with {proc.returncode}"
    try:
        return bool(caller.call(protocol.Ping(), timeout_ms=deadline_ms(500)))
    except MemtreeError:
        return False


def read_db(paths):
    """A read-only connection for assertions (the writer owns writes)."""
    return store_db.open_read(paths.db)


def rows(paths, sql: str, params=()) -> list[tuple]:
    conn = read_db(paths)
    try:
        return [tuple(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def put_vectors(paths, writer: Caller, model: str, ids: dict, vecs: dict, names) -> None:
    """Store ``vecs[name]`` for the node ``ids[name]`` of each name, as the embed walker would."""
    hashes = dict(rows(paths, "SELECT id, content_hash FROM nodes"))
    items = [{"node_id": ids[n], "content_hash": hashes[ids[n]], "vector": vecs[n]} for n in names]
    writer.call(protocol.PutVectors(model=model, dim=len(items[0]["vector"]), items=items))


def raw_call(endpoint: str, frames: list[bytes], timeout_ms: int = 5000) -> list[bytes]:
    """Send raw frames on a fresh DEALER and return the reply frames (or fail)."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    try:
        sock.send_multipart(frames)
        assert sock.poll(timeout_ms, zmq.POLLIN), "no reply"
        return sock.recv_multipart()
    finally:
        sock.close(linger=0)


class HeartbeatSink:
    """A PULL socket standing in for the supervisor's heartbeat endpoint."""

    def __init__(self, paths):
        self.endpoint = paths.endpoint("test-hb")
        self.sock = zmq.Context.instance().socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(self.endpoint)

    def wait_state(self, name: str, state: str = "running", timeout: float = COLD_START_S):
        """The first heartbeat of ``name`` in ``state`` (base sends `running` after on_start)."""

        def seen():
            while self.sock.poll(100):
                body = protocol.decode(self.sock.recv()).body
                if body.name == name and body.state == state:
                    return body
            return None

        return wait_until(seen, timeout=timeout, what=f"{name} heartbeat {state}")

    def close(self):
        close_bound(self.sock, self.endpoint)
