"""Front services: the seam between the MCP front and the tool implementations.

The front builds one ``Services`` per process. A tool is
``async def tool(svc, **args) -> str``; it reads through ``svc.db()`` (the
front's read-only connection) and writes through ``await svc.call(rec)`` (a
writer call over DEALER -> ROUTER). Budgets are not a tool's concern: the
front's tool wrapper applies ``memtree.text.budget.enforce`` once to every result.
"""

from __future__ import annotations

import logging
import os
import threading
import time

import anyio
import apsw
import zmq
import zmq.asyncio

from memtree import protocol
from memtree.config import Config
from memtree.errors import CallTimeout, MemtreeError, Unavailable
from memtree.ids import ulid
from memtree.paths import StorePaths, socket_path
from memtree.runtime import foreground
from memtree.runtime.client import NOT_OURS, dealer, match_reply
from memtree.store import db as store_db

log = logging.getLogger(__name__)

# How long a call waits for a connection to the writer before saying it is down.
CONNECT_WAIT_MS = 1500
# After a missed query embedding, how long the next one may wait (see embed_query).
EMBED_PROBE_MS = 50
# The first query embedding of a front the supervisor started beside an embed walker:
# the walker may still be starting or loading its model (a session's first recall
# came back keyword-only), so it waits this long once, socket included.
EMBED_COLD_MS = 5000
WRITER_DOWN = "memtree is read-only right now: the writer is not running (memtree ctl status)"


class AsyncCaller:
    """DEALER calls with a request id and a deadline (the Lazy Pirate of
    memtree.runtime.client, on zmq.asyncio): a timed-out socket is closed with linger
    0 and replaced, so a late reply never answers a later call."""

    def __init__(self, endpoint: str, src: str, timeout_ms: int, zctx: zmq.asyncio.Context):
        self.endpoint, self.src, self.timeout_ms, self.zctx = endpoint, src, timeout_ms, zctx
        self.sock: zmq.asyncio.Socket | None = None

    def _socket(self) -> zmq.asyncio.Socket:
        if self.sock is None:
            self.sock = dealer(self.zctx, self.endpoint)
        return self.sock

    def reset(self) -> None:
        if self.sock is not None:
            self.sock.close(linger=0)
            self.sock = None

    async def call(self, rec: protocol.Record, timeout_ms: int | None = None):
        timeout_ms = self.timeout_ms if timeout_ms is None else timeout_ms
        deadline = time.monotonic() + timeout_ms / 1000
        sock = self._socket()
        rid, frame = protocol.encode_call(rec, src=self.src)
        if not await sock.poll(min(timeout_ms, CONNECT_WAIT_MS), zmq.POLLOUT):
            self.reset()
            raise Unavailable(WRITER_DOWN)
        await sock.send(frame)
        while True:
            remaining = int((deadline - time.monotonic()) * 1000)
            if remaining <= 0 or not await sock.poll(remaining, zmq.POLLIN):
                self.reset()
                raise CallTimeout(f"the writer did not answer within {timeout_ms / 1000:.1f}s; nothing was confirmed")
            result = match_reply(await sock.recv(), rid)
            if result is not NOT_OURS:
                return result


class Services:
    """What every tool gets: config, paths, the session, writer calls, reads."""

    def __init__(
        self,
        config: Config,
        paths: StorePaths,
        session_id: str | None = None,
        src: str = "mcp",
        zctx: zmq.asyncio.Context | None = None,
        expect_embedder: bool = False,
    ):
        self.config = config
        self.paths = paths
        self.project_root = paths.project_root
        # Claude Code does not tell an MCP server its session id; one per front.
        self.session_id = session_id or os.environ.get("MEMTREE_SESSION_ID") or f"mcp-{ulid()}"
        self.zctx = zctx or zmq.asyncio.Context()
        self._caller = AsyncCaller(
            paths.endpoint(protocol.SOCK_WRITE), src, int(config.writer.callTimeoutMs), self.zctx
        )
        # Query embeddings come from the embed walker, so the front never loads a model.
        self._embedder = AsyncCaller(
            paths.endpoint(protocol.SOCK_EMBED), src, int(config.walkers.embedQueryTimeoutMs), self.zctx
        )
        self._embed_lock = anyio.Lock()
        self._embed_missed = False  # the last query embedding did not arrive in time
        self.embed_note = ""  # why the last query embedding did not come (what the agent is told)
        self._embed_cold = expect_embedder  # no query embedding tried yet, and a walker is starting with us
        # One read-only connection per thread: apsw refuses concurrent use of
        # one connection, and reads run in worker threads (see run_sync).
        self._dbs: dict[int, apsw.Connection] = {}
        self._dbs_lock = threading.Lock()
        self._loop_thread = threading.get_ident()
        # Set by the front once its task group runs: fire-and-forget writer calls
        # (freshness marks) go there so an answer never waits on them.
        self.task_group = None
        self._call_lock = anyio.Lock()
        # Up while a tool call is answered: the embed walker's drain steps aside.
        self.foreground = foreground.Mark(paths.store_dir, front=True)

    def background(self, fn, *args) -> None:
        """Run ``await fn(*args)`` without making the current answer wait
        (callable from the event loop or from a run_sync worker thread)."""
        if self.task_group is None:
            return
        if threading.get_ident() == self._loop_thread:
            self.task_group.start_soon(fn, *args)
        else:
            anyio.from_thread.run_sync(self.task_group.start_soon, fn, *args)

    async def run_sync(self, fn, *args):
        """``fn(*args)`` in a worker thread: SQL, composing, slicing and
        counting never block the event loop, which also sends the heartbeats.
        A cancelled call (front stopping) abandons the thread, not the exit."""
        return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)

    async def call(self, rec: protocol.Record, timeout_ms: int | None = None):
        """One writer call. Raises Unavailable (writer down), CallTimeout, or
        the MemtreeError of an error reply."""
        # One DEALER socket: calls take turns, or one would skip another's reply.
        async with self._call_lock:
            return await self._caller.call(rec, timeout_ms)

    async def embed_query(self, text: str, timeout_ms: int | None = None) -> dict | None:
        """``{"model", "dim", "vector"}`` for ``text`` from the embed walker, or
        None when it cannot answer within ``walkers.embedQueryTimeoutMs``
        (stopped, busy, not running, no model): the caller degrades to keyword.
        After a miss the next query waits only EMBED_PROBE_MS (the walker
        answers in about a millisecond when it runs), so a stopped walker does
        not add the whole bound to every search; an answer restores the bound.
        The first query of a front started beside an embed walker waits up to
        EMBED_COLD_MS, for the walker's socket too: it may still be loading."""
        timeout_ms = int(self.config.walkers.embedQueryTimeoutMs if timeout_ms is None else timeout_ms)
        cold, self._embed_cold = self._embed_cold, False
        if cold:
            timeout_ms = max(timeout_ms, EMBED_COLD_MS)
        sock = socket_path(self.paths.endpoint(protocol.SOCK_EMBED))
        if not cold and not os.path.exists(sock):
            self.embed_note = "no embed walker is running"
            return None  # no embed walker has bound here: do not wait for one
        if self._embed_missed:
            timeout_ms = min(timeout_ms, EMBED_PROBE_MS)
        self.embed_note = f"no query embedding from the embed walker within {timeout_ms} ms"
        result = None
        with anyio.move_on_after(timeout_ms / 1000):
            while not os.path.exists(sock):  # only when cold: the walker binds once its model is loaded
                await anyio.sleep(0.05)
            async with self._embed_lock:  # one DEALER: queries take turns inside the same bound
                try:
                    result = await self._embedder.call(protocol.EmbedQuery(text=text), timeout_ms)
                except MemtreeError as e:
                    log.info("query embedding unavailable: %s", e.message)
                except anyio.get_cancelled_exc_class():
                    self._embedder.reset()  # a late reply must not answer the next query
                    raise
        self._embed_missed = result is None
        return result

    def db(self) -> apsw.Connection:
        """This thread's read-only connection; Unavailable until the store exists.
        Opening one closes those of threads that have ended (the worker pool retires
        idle threads and starts new ones): one connection, and its page cache, per
        live thread at most."""
        me = threading.get_ident()
        conn = self._dbs.get(me)
        if conn is None:
            self._close_ended()
            conn = self._open_db()
            with self._dbs_lock:
                self._dbs[me] = conn
        return conn

    def _close_ended(self) -> None:
        alive = {t.ident for t in threading.enumerate()}
        with self._dbs_lock:
            ended = [self._dbs.pop(i) for i in [i for i in self._dbs if i not in alive]]
        for conn in ended:
            try:
                conn.close()
            except apsw.Error:  # still in use: it is collected when its last user lets go
                pass

    def _open_db(self) -> apsw.Connection:
        if not os.path.exists(self.paths.db):
            raise Unavailable("the memtree store does not exist yet (is the writer running? memtree ctl status)")
        try:
            conn = store_db.open_read(self.paths.db)
            ready = store_db.schema_ready(conn)
        except apsw.Error as e:
            raise Unavailable(f"the memtree store cannot be opened: {e}") from None
        if not ready:
            conn.close()
            raise Unavailable("the memtree store is not initialised yet (the writer creates it)")
        return conn

    def close(self) -> None:
        self._caller.reset()
        self.foreground.close()
        with self._dbs_lock:
            conns, self._dbs = list(self._dbs.values()), {}
        for conn in conns:
            try:
                conn.close()
            except apsw.Error:  # still in use by an abandoned worker: the process is ending anyway
                pass


__all__ = ["Services", "AsyncCaller", "WRITER_DOWN", "MemtreeError", "Unavailable", "CallTimeout"]
