"""memtree's MCP server while the plugin's first run installs its environment.

Run by bootstrap.py with the environment's Python once the install's first
step (the MCP SDK) is in, so it needs the SDK and nothing of memtree. It
answers Claude Code at once, declares that its tool list can change and lists
no tools. When the environment is ready it becomes ``memtree serve`` in the
same process (exec: the same pid and the same stdio pipes, no second server
left behind), handing it the client's ``initialize`` so the real front takes
the connection as it stands and sends ``notifications/tools/list_changed``;
Claude Code 2.1.197 then lists the tools again and offers them in its next
request (docs/REFERENCE.md, "Installing").

The exec must lose no message: stdin is read only up to whole lines, and the
hand-over waits until nothing read is left unanswered and nothing is half
read; what Claude Code sends meanwhile stays in the pipe for memtree serve.
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # bootstrap.py; memtree's mcp_sdk (standard library only)
import bootstrap  # noqa: E402

from memtree.front import mcp_sdk  # noqa: E402

mcp_sdk.lean_import()  # the SDK's import is most of this server's start, and Claude Code is waiting
import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.lowlevel.server import NotificationOptions  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402
from mcp.types import CallToolResult, ListToolsResult, TextContent  # noqa: E402

RESUME_ENV = "MEMTREE_MCP_RESUME"  # read by memtree.front.resume
POLL_S = 0.5  # how often the install's files are looked at (another process writes them)
READ_BYTES = 1 << 16


def log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} memtree waiting server: {line}", file=sys.stderr, flush=True)


class Wire:
    """stdin lines in, stdout lines out, with what the hand-over needs to know:
    the client's initialize, how many requests came in and were answered."""

    def __init__(self):
        self.buf = bytearray()
        self.eof = False
        self.requests = 0
        self.answered = 0
        self.initialize: dict | None = None
        self.handing_over = False
        self.paused = False  # reading stopped with nothing half read
        self._waiting: anyio.CancelScope | None = None

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        while True:
            i = self.buf.find(b"\n")
            if i >= 0:
                line = bytes(self.buf[: i + 1])
                del self.buf[: i + 1]
                self._note_in(line)
                return line.decode("utf-8", errors="replace")
            if self.eof:
                raise StopAsyncIteration
            if self.handing_over and not self.buf:
                self.paused = True
                await anyio.sleep_forever()  # the exec ends this
            with anyio.CancelScope() as self._waiting:  # hand_over() cancels a wait for more
                await anyio.wait_readable(0)
                chunk = os.read(0, READ_BYTES)  # no checkpoint between the wait and the read
                self.eof = not chunk
                self.buf += chunk
            self._waiting = None

    def hand_over(self) -> None:
        """Stop reading at the next line boundary."""
        self.handing_over = True
        if self._waiting is not None:
            self._waiting.cancel()

    def _note_in(self, line: bytes) -> None:
        try:
            msg = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception:  # the SDK answers it with an error; nothing to note
            return
        if isinstance(msg, types.JSONRPCRequest):
            self.requests += 1
            if msg.method == "initialize":
                self.initialize = msg.params

    async def write(self, text: str) -> None:
        data = text.encode("utf-8")
        while data:  # whole lines, written before they count as answered
            await anyio.wait_writable(1)
            data = data[os.write(1, data) :]
        for line in text.splitlines():
            try:
                msg = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except Exception:
                continue
            if isinstance(msg, types.JSONRPCResponse | types.JSONRPCError):
                self.answered += 1

    async def flush(self) -> None:
        pass

    def quiet(self) -> bool:
        return self.paused and self.answered >= self.requests


async def list_tools(ctx, params) -> ListToolsResult:
    return ListToolsResult(tools=[])


class Install:
    """What the tool calls say while there are no tools."""

    failed = False


async def call_tool(ctx, params) -> CallToolResult:
    log_path = bootstrap._paths(bootstrap.data_dir())["log"]
    if Install.failed:
        text = f"memtree could not install its environment (see {log_path}); its tools come when an install succeeds"
    else:
        text = f"memtree is still setting up its environment (log: {log_path}); its tools come when that is done"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


async def hand_over_when_ready(wire: Wire, data: str) -> None:
    started = time.time()
    failed = bootstrap._paths(data)["failed"]
    while not bootstrap.ready(data):
        try:
            if os.path.getmtime(failed) >= started:
                Install.failed = True  # no tools this session; the next one's SessionStart retries
                log(f"the install failed; see {bootstrap._paths(data)['log']}")
                return
        except OSError:
            pass
        await anyio.sleep(POLL_S)
    wire.hand_over()
    while not wire.quiet():
        await anyio.sleep(0.01)  # an answer is being written or a line is half read: milliseconds
    if wire.initialize is None:  # not initialized yet: memtree serve takes the connection from its start
        log("environment ready; exec memtree serve")
        bootstrap.exec_memtree_serve(data)
    log(f"environment ready; handing the connection to memtree serve ({wire.requests} requests answered)")
    bootstrap.exec_memtree_serve(data, {**os.environ, RESUME_ENV: json.dumps(wire.initialize)})


async def main() -> None:
    data = bootstrap.data_dir()
    log(f"pid={os.getpid()}, serving no tools until {bootstrap._paths(data)['stamp']} is written")
    server = Server("memtree", on_list_tools=list_tools, on_call_tool=call_tool)
    opts = server.create_initialization_options(notification_options=NotificationOptions(tools_changed=True))
    wire = Wire()
    async with anyio.create_task_group() as tg:
        tg.start_soon(hand_over_when_ready, wire, data)
        async with stdio_server(stdin=wire, stdout=wire) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, opts)
        log("stdin closed, exiting")
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
