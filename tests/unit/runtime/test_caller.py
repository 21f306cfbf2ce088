"""Caller: request/reply over DEALER -> ROUTER with a deadline, against a real
ROUTER in the test (the peer's side of the wire, answered by hand)."""

from __future__ import annotations

import os
import threading
import time

import pytest
import zmq

from memtree import protocol
from memtree.errors import CallTimeout, NotFound, Unavailable
from memtree.runtime.client import Caller


@pytest.fixture
def endpoint(tmp_path):
    return f"ipc://{os.path.join(tmp_path, 'peer.sock')}"


@pytest.fixture
def router(endpoint):
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(endpoint)
    yield sock
    sock.close(linger=0)


def _serve(router, answer, calls: int) -> threading.Thread:
    """Answer ``calls`` requests on ``router`` with ``answer(env) -> [frames]``."""

    def run():
        for _ in range(calls):
            if not router.poll(5000):
                return
            ident, frame = router.recv_multipart()
            for out in answer(protocol.decode(frame)):
                router.send_multipart([ident, out])

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_call_returns_its_own_reply_and_skips_garbage_and_other_ids(router, endpoint):
    def answer(env):
        return [
            b"not json",
            protocol.encode_ok("someone-else", {"n": -1}),
            protocol.encode_ok(env.id, {"n": env.body.content}),
        ]

    server = _serve(router, answer, 2)
    caller = Caller(endpoint, src="t", timeout_ms=5000)
    try:
        for text in ("one", "two"):
            assert caller.call(protocol.AddNode(kind="note", content=text)) == {"n": text}
    finally:
        caller.close()
    server.join(5)


def test_an_error_reply_raises_its_error(router, endpoint):
    server = _serve(
        router, lambda env: [protocol.encode_error(env.id, protocol.ErrorCode.NOT_FOUND, "no such node")], 1
    )
    caller = Caller(endpoint, src="t", timeout_ms=5000)
    try:
        with pytest.raises(NotFound, match="no such node"):
            caller.call(protocol.Ping())
    finally:
        caller.close()
    server.join(5)


def test_silence_times_out_and_a_late_reply_never_reaches_the_next_call(router, endpoint):
    caller = Caller(endpoint, src="t", timeout_ms=300)
    try:
        t0 = time.monotonic()
        with pytest.raises(CallTimeout, match="no reply"):
            caller.call(protocol.Ping())
        assert 0.25 <= time.monotonic() - t0 < 5
        ident, frame = router.recv_multipart()  # the timed-out call, answered late
        router.send_multipart([ident, protocol.encode_ok(protocol.decode(frame).id, {"late": True})])
        # The next call is on a fresh socket: it gets its own reply, not the late one.
        server = _serve(router, lambda env: [protocol.encode_ok(env.id, {"late": False})], 1)
        assert caller.call(protocol.Ping(), timeout_ms=5000) == {"late": False}
        server.join(5)
    finally:
        caller.close()


def test_nothing_listening_is_unavailable(endpoint):
    caller = Caller(endpoint, src="t", timeout_ms=200)
    try:
        t0 = time.monotonic()
        with pytest.raises(Unavailable, match="nothing is listening"):
            caller.call(protocol.Ping())
        assert time.monotonic() - t0 < 5
    finally:
        caller.close()
