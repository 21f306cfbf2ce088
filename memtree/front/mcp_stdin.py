"""The MCP front's stdin as an async stream of lines that a cancel stops at once.

The SDK's own stdin reader blocks a worker thread in read(); cancelling the
server then waits for the next line, so a SIGTERM with the client still
holding stdin open went unanswered until the supervisor's SIGKILL. Here the
loop waits for readability (epoll) and reads only what is there. Like the
SDK, fd 0 is pointed at /dev/null while we serve, so children never read
the wire.
"""

from __future__ import annotations

import logging
import os

import anyio

log = logging.getLogger(__name__)

READ_BYTES = 1 << 16
MAX_LINE_BYTES = 64 << 20  # one JSON-RPC message; a longer line is dropped, not buffered forever


class StdinLines:
    """``async for line in StdinLines()``: decoded lines, newline kept, until EOF."""

    def __init__(self, fd: int = 0):
        self.fd = os.dup(fd)
        os.set_inheritable(self.fd, False)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
        self._buf = bytearray()
        self._scan = 0  # bytes of _buf already known to hold no newline
        self._eof = False
        self._skipping = False  # inside an over-long line: drop until its newline
        self._pollable = True

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        while True:
            line = self._take_line()
            if line is not None:
                return line
            if self._eof:
                raise StopAsyncIteration
            chunk = await self._read()
            if not chunk:
                self._eof = True
                self._skipping = False
            else:
                self._buf += chunk

    def _take_line(self) -> str | None:
        i = self._buf.find(b"\n", self._scan)
        if i < 0:
            self._scan = len(self._buf)
            if len(self._buf) > MAX_LINE_BYTES:
                log.warning("mcp: dropped a stdin line over %d bytes", MAX_LINE_BYTES)
                self._buf.clear()
                self._scan = 0
                self._skipping = True
            if self._eof and self._buf and not self._skipping:
                line = self._buf.decode("utf-8", errors="replace")
                self._buf.clear()
                return line
            return None
        raw = bytes(self._buf[: i + 1])
        del self._buf[: i + 1]
        self._scan = 0
        if self._skipping:
            self._skipping = False
            return self._take_line()
        return raw.decode("utf-8", errors="replace")

    async def _read(self) -> bytes:
        if self._pollable:
            try:
                await anyio.wait_readable(self.fd)
            except (OSError, ValueError):  # a regular file cannot be polled: read it in a thread
                self._pollable = False
            else:
                return os.read(self.fd, READ_BYTES)
        return await anyio.to_thread.run_sync(os.read, self.fd, READ_BYTES, abandon_on_cancel=True)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
