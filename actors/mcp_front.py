"""The MCP front: the stdio MCP server Claude Code talks to.

The only async actor (anyio + zmq.asyncio) and not a singleton: each session
has its own. Claude Code waits only ~2 s for MCP servers, so this module
imports only what ``initialize`` needs (the mcp SDK); zmq, apsw and the
tool modules load on the first tool call or in the background. Its stdout is
the MCP wire: it never prints, and logs go to stderr (logs/mcp.log).

Every tool call passes one wrapper (``Front.run_tool``): argument
validation with one-line errors, the tool, then ``memtree.text.budget.enforce``
on its text. Expected failures become MCP tool errors; anything else is
logged with its traceback and the agent sees one line.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys

import anyio

from memtree.front import mcp_sdk

mcp_sdk.lean_import()  # before the first `mcp` import below: it is most of the start-up
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool, ToolAnnotations  # noqa: E402

from memtree.front import opts  # noqa: E402
from memtree.front import tool_table as specs  # noqa: E402

log = logging.getLogger("mcp")

# How often the front checks that its parent (the supervisor, or Claude Code
# when run alone) is still there: an orphaned front must not outlive it by more.
PARENT_CHECK_S = 0.25
# The heartbeat's imports (zmq, config) wait until the client has listed the
# tools, or this long: they would share the GIL with the initialize answer,
# and the supervisor starts the walkers only after the front's first beat.
HEARTBEAT_DEFER_S = 1.0

# No server instructions: Claude Code adds them to every request (with its own
# header), and the one-line tool descriptions already say when to use what.


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _ok(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=False)


class Front:
    """The SDK's low-level server, so only the tools capability is declared:
    a resources capability makes Claude Code add three tools to every request."""

    def __init__(self, listed: tuple[str, ...] | None = None):
        self.ctx = None
        self.svc = None
        self.task_group = None
        self.listed = None  # an anyio.Event once serving
        self._svc_lock = anyio.Lock()
        self.heap = None  # a memtree.runtime.heap.Trimmer from the first tool call
        listed = specs.parse_tools(os.environ.get(specs.ENV_TOOLS)) if listed is None else listed
        # tools/list shows ``tools``; a call may also name a hidden tool they took over (note, forget).
        specs.check_modules()  # `memtree serve` checks first; the front run alone lands here
        self.tools = list(listed)
        self.served = list(specs.served(tuple(self.tools)))
        self._listing = ListToolsResult(
            tools=[
                Tool(
                    name=n,
                    description=specs.TOOLS[n].description,
                    input_schema=specs.input_schema(specs.TOOLS[n]),
                    annotations=ToolAnnotations(**specs.TOOLS[n].annotations),
                )
                for n in self.tools
            ]
        )
        self.server = Server("memtree", on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    def has_tool(self, name: str) -> bool:
        return name in self.served

    async def _list_tools(self, ctx, params) -> ListToolsResult:
        if self.listed is not None:
            self.listed.set()
        return self._listing

    async def _call_tool(self, ctx, params) -> CallToolResult:
        spec = specs.TOOLS.get(params.name)
        if spec is None or not self.has_tool(params.name):
            return _error(f"unknown tool {params.name!r}; memtree has {', '.join(self.tools)}")
        return await self.run_tool(spec, params.arguments or {})

    async def services(self):
        """Built on the first tool call, off the event loop (zmq/apsw imports)."""
        async with self._svc_lock:
            if self.svc is None:
                self.ctx = self.ctx or await anyio.to_thread.run_sync(load_context)
                svc_mod = await anyio.to_thread.run_sync(importlib.import_module, "memtree.front.services")
                self.svc = svc_mod.Services(
                    self.ctx.config, self.ctx.paths, src=self.ctx.name, expect_embedder=self._embedder_started()
                )
                self.svc.task_group = self.task_group
            return self.svc

    def _embedder_started(self) -> bool:
        """A supervisor started this front (``memtree serve``) with an embed walker beside it."""
        from memtree.supervisor.spec import enabled

        return bool(self.ctx.hb_endpoint) and enabled(self.ctx.config, "walker.embed")

    async def run_tool(self, spec, arguments: dict) -> CallToolResult:
        from memtree.errors import MemtreeError
        from memtree.text import budget
        from memtree.tools import call_repr

        try:
            args = opts.check_args(spec, arguments)
            limit = budget.check(args.get("budget_tokens"))
            svc = await self.services()
            impl = getattr(importlib.import_module(spec.module), spec.func)
            with svc.foreground.hold():  # the agent waits: background work steps aside
                text = await impl(svc, **args)
                # The same call with room for all of it, named when the answer is cut.
                again = call_repr(spec.name, **{**args, "budget_tokens": "{budget}"})
                # Counting a long answer is work too: off the loop, like the tool's own.
                return _ok(await anyio.to_thread.run_sync(budget.enforce, text, limit, again))
        except MemtreeError as e:
            return _error(f"{spec.name}: {e.message}")
        except Exception:  # a bug: the traceback goes to the log, one line to the agent
            log.exception("tool %s crashed", spec.name)
            return _error(f"{spec.name}: internal error in memtree (details in the memtree mcp log)")
        finally:
            self.after_call()

    def after_call(self) -> None:
        """Freed heap back to the system, at most every few seconds: a recall's candidates are
        freed in the worker threads' malloc arenas, which glibc otherwise keeps."""
        if self.heap is None:
            from memtree.runtime.heap import Trimmer, settle

            settle()  # the first call imported the tools and the search stack
            self.heap = Trimmer()
        self.heap.after_work()


def load_context():
    """The supervisor's context from the environment; run standalone (no
    supervisor env), the project is found as every entry point finds it (paths.start_dir)."""
    from memtree.runtime.actorenv import ENV_STORE_DIR, ActorContext

    if os.environ.get(ENV_STORE_DIR):
        return ActorContext.from_env("mcp")
    from memtree.config import load_config
    from memtree.paths import memtree_home, paths_for_cwd, prepare_store, start_dir

    paths = paths_for_cwd(start_dir())
    prepare_store(paths)
    return ActorContext("mcp", paths, load_config(paths.project_root, memtree_home()), None)


async def heartbeats(front: Front) -> None:
    """Heartbeat casts to the supervisor (name ``mcp``, state running) while
    the server is up; nothing to do when run without a supervisor."""
    try:
        await _heartbeats(front)
    except Exception:  # tools still answer (with errors naming the cause); no crash loop
        log.exception("mcp: heartbeats stopped")


async def _heartbeats(front: Front) -> None:
    with anyio.move_on_after(HEARTBEAT_DEFER_S):
        await front.listed.wait()
    front.ctx = front.ctx or await anyio.to_thread.run_sync(load_context)
    ctx = front.ctx
    if not ctx.hb_endpoint:
        return

    def connect():
        import zmq

        from memtree import protocol

        sock = zmq.Context.instance().socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 16)
        sock.connect(ctx.hb_endpoint)
        return sock, zmq, protocol

    sock, zmq, protocol = await anyio.to_thread.run_sync(connect)
    period = ctx.config.supervisor.heartbeatMs / 1000
    # `ctl status` shows a front serving fewer tools than all (serve --tools) in its NOTE column.
    info = {} if tuple(front.tools) == specs.LISTED else {"tools": ",".join(front.tools) or "none"}
    try:
        while True:
            msg = protocol.Heartbeat(name=ctx.name, pid=os.getpid(), state="running", info=info)
            try:
                sock.send(protocol.encode_cast(msg, src=ctx.name), zmq.NOBLOCK)
            except zmq.Again:
                pass  # supervisor gone or slow; it notices by itself
            await anyio.sleep(period)
    finally:
        sock.close(linger=0)


async def stop_on_signal(scope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for sig in signals:
            log.info("mcp: stop requested by signal %d", sig)
            scope.cancel()
            return


async def stop_when_orphaned(scope) -> None:
    """The parent went away (supervisor killed, Claude Code gone): stop."""
    parent = os.getppid()
    while os.getppid() == parent:
        await anyio.sleep(PARENT_CHECK_S)
    log.info("mcp: parent %d is gone, exiting", parent)
    scope.cancel()


async def serve(front: Front) -> None:
    from mcp.server.stdio import stdio_server

    from memtree.front import resume
    from memtree.front.mcp_stdin import StdinLines

    stdin = StdinLines()
    try:
        front.listed = anyio.Event()
        async with anyio.create_task_group() as tg:
            front.task_group = tg
            tg.start_soon(heartbeats, front)
            tg.start_soon(stop_on_signal, tg.cancel_scope)
            tg.start_soon(stop_when_orphaned, tg.cancel_scope)
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                handed = resume.take()  # the plugin's waiting server initialized this connection
                if handed is None:
                    await front.server.run(read_stream, write_stream, front.server.create_initialization_options())
                else:
                    async with resume.resumed(read_stream, write_stream, handed) as (r, w):
                        await front.server.run(r, w, front.server.create_initialization_options())
            log.info("mcp: stdin closed, exiting")
            tg.cancel_scope.cancel()
    finally:
        stdin.close()


def main() -> int:
    from memtree.runtime.logs import configure_logging

    configure_logging("mcp")
    from memtree.errors import BadRequest, ConfigError

    try:
        front = Front()
    except ConfigError as e:  # a tool module missing
        log.error("mcp: %s", e.message)
        print(f"memtree mcp: {e.message}", file=sys.stderr)
        return 2
    except BadRequest as e:  # `memtree serve --tools` checks first; a hand-set env lands here
        log.error("mcp: %s=%r: %s", specs.ENV_TOOLS, os.environ.get(specs.ENV_TOOLS), e.message)
        print(f"memtree mcp: {e.message}", file=sys.stderr)
        return 2
    log.info("mcp: serving %s pid=%d", ", ".join(front.tools), os.getpid())
    try:
        anyio.run(serve, front)
    finally:
        if front.svc is not None:
            front.svc.close()
    # os._exit skips atexit: a command still running in bash dies with us here.
    bash = sys.modules.get("memtree.tools.bash")
    if bash is not None:
        bash.kill_running()
    # A worker thread still inside a long read must not hold the exit
    # (its work was abandoned on cancel); logs are flushed first.
    logging.shutdown()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
