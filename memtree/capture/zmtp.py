"""A minimal ZMTP 3.0 DEALER client over AF_UNIX, standard library only.

The capture hook must send one message to the writer's ROUTER and wait for
the acknowledgement within tens of milliseconds; ``import zmq`` alone costs
about 45 ms, so the hook speaks the wire protocol itself (RFC 23/ZMTP):

1. both sides send a 64-byte greeting (signature, version 3.0, mechanism
   NULL, as-server 0) and read the peer's;
2. both send a READY command with their Socket-Type; we wait for the peer's
   READY before sending anything else (a message sent earlier is dropped);
3. messages are frames: a flags byte (MORE 0x01, LONG 0x02, COMMAND 0x04),
   a 1- or 8-byte big-endian size, the body.

A DEALER talking to a ROUTER sends its frames as they are; the ROUTER's
reply arrives without the routing identity. Every step runs against one
deadline; any failure raises ZmtpError (ZmtpTimeout when the deadline passed).
"""

import time

try:  # socket.py imports enum (~20 ms under -I -S); the C module is all we use
    import _socket as socket
except ImportError:  # pragma: no cover
    import socket

SIGNATURE = b"\xff" + b"\x00" * 8 + b"\x7f"
GREETING = SIGNATURE + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + b"\x00" * 31
FLAG_MORE, FLAG_LONG, FLAG_COMMAND = 0x01, 0x02, 0x04
MAX_FRAME = 64 * 1024 * 1024  # refuse a peer that announces more (= protocol.MAX_MESSAGE_BYTES)
PEER_TYPES = (b"ROUTER",)


class ZmtpError(Exception):
    pass


class ZmtpTimeout(ZmtpError):
    pass


def encode_frame(body: bytes, more: bool = False, command: bool = False) -> bytes:
    flags = (FLAG_MORE if more else 0) | (FLAG_COMMAND if command else 0)
    if len(body) <= 255:
        return bytes((flags, len(body))) + body
    return bytes((flags | FLAG_LONG,)) + len(body).to_bytes(8, "big") + body


def encode_command(name: bytes, props: dict[bytes, bytes]) -> bytes:
    body = bytes((len(name),)) + name
    for key, value in props.items():
        body += bytes((len(key),)) + key + len(value).to_bytes(4, "big") + value
    return encode_frame(body, command=True)


def parse_properties(data: bytes) -> dict[bytes, bytes]:
    props, i = {}, 0
    while i < len(data):
        n = data[i]
        key = data[i + 1 : i + 1 + n]
        i += 1 + n
        if i + 4 > len(data):
            raise ZmtpError("truncated READY property")
        vlen = int.from_bytes(data[i : i + 4], "big")
        i += 4
        if i + vlen > len(data):
            raise ZmtpError("truncated READY property value")
        props[key.lower()] = data[i : i + vlen]
        i += vlen
    return props


class Connection:
    """One DEALER connection to a ROUTER at an ``ipc://`` endpoint."""

    def __init__(self, endpoint: str, deadline: float, socket_type: bytes = b"DEALER"):
        if not endpoint.startswith("ipc://"):
            raise ZmtpError("only ipc:// endpoints are supported")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.buf = b""
        try:
            self._timeout(deadline)
            self.sock.connect(endpoint[len("ipc://") :])
            self.sock.sendall(GREETING + encode_command(b"READY", {b"Socket-Type": socket_type}))
            self._check_greeting(self._read(64, deadline))
            self._await_ready(deadline)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- wire ------------------------------------------------------------------------
    def _timeout(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ZmtpTimeout("deadline passed")
        self.sock.settimeout(left)

    def _read(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n:
            self._timeout(deadline)
            try:
                chunk = self.sock.recv(max(65536, n - len(self.buf)))
            except TimeoutError:
                raise ZmtpTimeout("no data from peer before the deadline") from None
            except OSError as e:
                raise ZmtpError(f"receive failed: {e.strerror or e}") from None
            if not chunk:
                raise ZmtpError("peer closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _check_greeting(self, g: bytes) -> None:
        if g[0] != 0xFF or g[9] != 0x7F:
            raise ZmtpError("peer is not speaking ZMTP (bad signature)")
        if g[10] < 3:
            raise ZmtpError(f"peer speaks ZMTP {g[10]}.x, need 3.x")
        if g[12:32].rstrip(b"\x00") != b"NULL":
            raise ZmtpError("peer wants a security mechanism other than NULL")

    def _read_frame(self, deadline: float) -> tuple[int, bytes]:
        flags = self._read(1, deadline)[0]
        if flags & ~(FLAG_MORE | FLAG_LONG | FLAG_COMMAND):
            raise ZmtpError(f"bad frame flags 0x{flags:02x}")
        if flags & FLAG_LONG:
            size = int.from_bytes(self._read(8, deadline), "big")
        else:
            size = self._read(1, deadline)[0]
        if size > MAX_FRAME:
            raise ZmtpError(f"peer announced a {size}-byte frame")
        return flags, self._read(size, deadline)

    def _await_ready(self, deadline: float) -> None:
        flags, body = self._read_frame(deadline)
        if not flags & FLAG_COMMAND or not body:
            raise ZmtpError("expected a READY command from the peer")
        name = body[1 : 1 + body[0]]
        if name == b"ERROR":
            raise ZmtpError("peer refused the handshake")
        if name != b"READY":
            raise ZmtpError("expected READY from the peer")
        peer_type = parse_properties(body[1 + body[0] :]).get(b"socket-type", b"")
        if peer_type not in PEER_TYPES:
            raise ZmtpError("peer socket type is not ROUTER")

    # -- messages --------------------------------------------------------------------
    def send(self, frames: list[bytes], deadline: float) -> None:
        data = b"".join(encode_frame(f, more=i < len(frames) - 1) for i, f in enumerate(frames))
        self._timeout(deadline)
        try:
            self.sock.sendall(data)
        except TimeoutError:
            raise ZmtpTimeout("send did not finish before the deadline") from None
        except OSError as e:
            raise ZmtpError(f"send failed: {e.strerror or e}") from None

    def recv(self, deadline: float) -> list[bytes]:
        """The next message (list of frames); commands in between (PING) are skipped."""
        frames: list[bytes] = []
        while True:
            flags, body = self._read_frame(deadline)
            if flags & FLAG_COMMAND:
                continue
            frames.append(body)
            if not flags & FLAG_MORE:
                return frames


def request(endpoint: str, frames: list[bytes], timeout_s: float, meanwhile=None) -> list[bytes]:
    """Connect, send one message, return the reply's frames; raise ZmtpError.

    ``meanwhile()``, if given, runs once the message is sent, while the peer
    works on it (the hook loads what it needs after the reply then)."""
    deadline = time.monotonic() + timeout_s
    try:
        with Connection(endpoint, deadline) as conn:
            conn.send(frames, deadline)
            if meanwhile is not None:
                meanwhile()
            return conn.recv(deadline)
    except ZmtpError:
        raise
    except TimeoutError:
        raise ZmtpTimeout("connect did not finish before the deadline") from None
    except OSError as e:  # connect: no socket file, refused, path too long
        raise ZmtpError(f"cannot connect: {e.strerror or e}") from None
