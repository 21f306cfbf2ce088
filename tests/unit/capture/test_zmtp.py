"""The stdlib ZMTP client against real pyzmq peers and against broken ones."""

from __future__ import annotations

import os
import socket
import threading

import pytest
import zmq

from memtree.capture import zmtp
from tests.support import deadline


class Router:
    """A real pyzmq ROUTER in a thread; replies b"ack:" + message unless silent."""

    def __init__(self, endpoint: str, reply: bool = True):
        self.endpoint, self.reply = endpoint, reply
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.bind(endpoint)
        self.received: list[list[bytes]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            if self.sock.poll(20, zmq.POLLIN):
                ident, *msg = self.sock.recv_multipart()
                self.received.append(msg)
                if self.reply:
                    self.sock.send_multipart([ident, b"ack:" + b"|".join(msg)])

    def close(self):
        self.stop.set()
        self.thread.join(deadline(5))
        self.sock.close(0)
        self.ctx.term()


@pytest.fixture()
def endpoint(tmp_path):
    return f"ipc://{tmp_path}/ingest.sock"


@pytest.fixture()
def router(endpoint):
    r = Router(endpoint)
    yield r
    r.close()


def test_a_request_reaches_a_pyzmq_router_and_the_reply_comes_back(router, endpoint):
    assert zmtp.request(endpoint, [b"hello"], 5.0) == [b"ack:hello"]
    assert router.received == [[b"hello"]]


def test_long_frames_and_multipart_messages_survive_the_round_trip(router, endpoint):
    big = os.urandom(300) + b"x" * 70000
    assert zmtp.request(endpoint, [big], 5.0) == [b"ack:" + big]
    assert zmtp.request(endpoint, [b"a", b"b" * 256], 5.0) == [b"ack:a|" + b"b" * 256]
    assert router.received == [[big], [b"a", b"b" * 256]]


def test_many_round_trips_on_one_connection(router, endpoint):
    import time

    until = time.monotonic() + deadline(30)
    with zmtp.Connection(endpoint, until) as conn:
        for i in range(200):
            conn.send([b"m%d" % i], until)
            assert conn.recv(until) == [b"ack:m%d" % i]
    assert len(router.received) == 200


def test_four_hundred_messages_one_per_connection_are_all_delivered(router, endpoint):
    for i in range(400):
        assert zmtp.request(endpoint, [b"n%d" % i], 10.0) == [b"ack:n%d" % i]
    assert sorted(m[0] for m in router.received) == sorted(b"n%d" % i for i in range(400))


def test_no_socket_file_is_a_clean_error(endpoint):
    with pytest.raises(zmtp.ZmtpError, match="cannot connect"):
        zmtp.request(endpoint, [b"x"], 1.0)


def test_a_stale_socket_file_with_nobody_listening_is_refused(tmp_path, endpoint):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(endpoint[len("ipc://") :])
    s.close()  # the file stays, nobody listens: what a killed writer leaves behind
    assert os.path.exists(endpoint[len("ipc://") :])
    with pytest.raises(zmtp.ZmtpError, match="cannot connect"):
        zmtp.request(endpoint, [b"x"], 1.0)


def test_a_router_that_never_replies_times_out(endpoint):
    silent = Router(endpoint, reply=False)
    try:
        with pytest.raises(zmtp.ZmtpTimeout):
            zmtp.request(endpoint, [b"x"], 0.2)
        # The message itself was delivered (the handshake finished before sending).
        import time

        until = time.monotonic() + deadline(10)
        while not silent.received and time.monotonic() < until:
            time.sleep(0.01)
        assert silent.received == [[b"x"]]
    finally:
        silent.close()


class RawServer:
    """A plain AF_UNIX listener that plays a broken peer with ``behave(conn)``."""

    def __init__(self, path: str, behave):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.behave = behave
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            _read_greeting(conn)  # as a real peer would, so our writes never hit a closed socket
            self.behave(conn)
            conn.shutdown(socket.SHUT_WR)  # EOF for the client; keep reading so it sees no reset
            try:
                while conn.recv(65536):
                    pass
            except OSError:
                pass

    def close(self):
        self.sock.close()
        self.thread.join(deadline(5))


def _read_greeting(conn):
    got = b""
    while len(got) < 64:
        chunk = conn.recv(64 - len(got))
        if not chunk:
            return
        got += chunk


@pytest.mark.parametrize(
    "behave, match",
    [
        (lambda c: c.sendall(zmtp.GREETING[:20]), "closed"),  # closes mid-greeting
        (lambda c: c.sendall(zmtp.GREETING), "closed"),  # closes before READY
        (lambda c: c.sendall(b"HTTP/1.1 400 Bad Request\r\n" + b"x" * 64), "not speaking ZMTP"),
        (lambda c: c.sendall(zmtp.GREETING + b"\x04\x05\x05HELLO"), "READY"),
        (lambda c: c.sendall(zmtp.GREETING + zmtp.encode_command(b"READY", {b"Socket-Type": b"PUB"})), "ROUTER"),
        (lambda c: c.sendall(zmtp.GREETING + b"\xf0\x00"), "bad frame flags"),
        (lambda c: c.sendall(zmtp.GREETING + b"\x06" + (2**40).to_bytes(8, "big")), "announced"),
    ],
)
def test_a_broken_peer_fails_cleanly(tmp_path, behave, match):
    path = f"{tmp_path}/broken.sock"
    server = RawServer(path, behave)
    try:
        with pytest.raises(zmtp.ZmtpError, match=match):
            zmtp.request(f"ipc://{path}", [b"x"], 2.0)
    finally:
        server.close()


def test_a_peer_that_accepts_and_says_nothing_times_out(tmp_path):
    path = f"{tmp_path}/mute.sock"
    hold = threading.Event()
    server = RawServer(path, lambda c: hold.wait(10))
    try:
        with pytest.raises(zmtp.ZmtpTimeout):
            zmtp.request(f"ipc://{path}", [b"x"], 0.2)
    finally:
        hold.set()
        server.close()


def test_frame_encoding_uses_short_and_long_sizes():
    assert zmtp.encode_frame(b"abc") == b"\x00\x03abc"
    assert zmtp.encode_frame(b"abc", more=True) == b"\x01\x03abc"
    assert zmtp.encode_frame(b"x" * 256)[:9] == b"\x02" + (256).to_bytes(8, "big")
    assert len(zmtp.GREETING) == 64
