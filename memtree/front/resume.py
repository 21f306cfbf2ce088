"""Take over an MCP connection another server initialized (the plugin's waiting server).

The plugin's first session answers Claude Code from plugin/waiting_server.py
while memtree's environment installs, then execs ``memtree serve`` on the same
stdio pipes with the client's ``initialize`` params in ``MEMTREE_MCP_RESUME``.
The front replays that initialize into its own SDK server (so the SDK
negotiates exactly as it did for the client), drops the SDK's answer (the
client had its answer already), and then tells the client the tool list
changed, which makes Claude Code list memtree's tools and offer them.
Everything here is the SDK's own message types; nothing is written by hand.
(The SDK is imported where it is used: ``memtree serve`` reads ENV before any of it loads.)
"""

from __future__ import annotations

import json
import logging
import os
from contextlib import asynccontextmanager

log = logging.getLogger("mcp")

ENV = "MEMTREE_MCP_RESUME"
REPLAY_ID = "memtree-resume"  # Claude Code's request ids are numbers: this one never collides


def take() -> dict | None:
    """The initialize params handed over, once (removed from the environment)."""
    raw = os.environ.pop(ENV, None)
    if not raw:
        return None
    try:
        params = json.loads(raw)
    except ValueError:
        log.error("mcp: %s is not JSON; serving as a fresh connection", ENV)
        return None
    return params if isinstance(params, dict) else None


def _list_changed():
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    note = types.ToolListChangedNotification().model_dump(by_alias=True, mode="json", exclude_none=True)
    return SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", **note))


@asynccontextmanager
async def resumed(read_stream, write_stream, params: dict):
    """(read, write) streams for ``Server.run`` on which the client's connection is already initialized."""
    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    in_send, in_recv = anyio.create_memory_object_stream(0)
    out_send, out_recv = anyio.create_memory_object_stream(0)

    async def feed() -> None:
        async with in_send:
            await in_send.send(
                SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=REPLAY_ID, method="initialize", params=params))
            )
            await in_send.send(
                SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"))
            )
            async for item in read_stream:
                await in_send.send(item)

    async def drain() -> None:
        replayed = False
        async with out_recv:
            async for msg in out_recv:
                m = msg.message
                if not replayed and isinstance(m, types.JSONRPCResponse | types.JSONRPCError) and m.id == REPLAY_ID:
                    replayed = True
                    if isinstance(m, types.JSONRPCError):
                        log.error("mcp: the handed-over initialize was refused: %s", m.error.message)
                        continue
                    log.info("mcp: took over the connection; telling the client its tools changed")
                    await write_stream.send(_list_changed())
                    continue
                await write_stream.send(msg)

    async with anyio.create_task_group() as tg:
        tg.start_soon(feed)
        tg.start_soon(drain)
        try:
            yield in_recv, out_send
        finally:
            tg.cancel_scope.cancel()
