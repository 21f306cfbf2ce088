"""Embed walker: gives live nodes vectors, and embeds queries for the front.

Loads the configured provider once (memtree/recall/embeddings.py). After a
``NodesChanged`` event with status live it waits ``walkers.embeddingIdleMs``
(a burst of captures becomes one backlog), then embeds the backlog in
batches of ``walkers.embeddingBatchSize``: content already embedded under
another node (same content hash, same model) is copied, not recomputed.
Vectors go to the writer (``PutVectors``) with model name and dimension.
With no backlog left, vectors of another model (stale and superseded nodes
after the configured or default model changed) are embedded again, so a
store converges on one model by itself (``memtree reembed`` does it at once).

It binds the ``embed`` ROUTER and answers ``EmbedQuery`` so the front never
loads the model. Queries are answered on their own thread, started before the
walker lowers its priority (``walkers.lowPriority``; Linux keeps nice per
thread): a search waits neither for a backlog batch nor behind a niced
thread. A model computed here (not Ollama's) computes the backlog's batches
in a child process of the idle class (embed_compute.py), so a hook capture
never waits for the writer behind them; with ``walkers.lowPriority`` the
walker's thread and its child step aside while the writer answers requests
(memtree/runtime/foreground.py). A provider that cannot load
(a package missing, Ollama away) leaves the walker idle with the reason in
``memtree ctl status``; queries then get an ``unavailable`` error at once.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

import apsw
import zmq

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.actors.walkers.embed_compute import ComputeChild
from memtree.errors import MemtreeError
from memtree.recall import embeddings
from memtree.runtime import foreground
from memtree.store import vectors
from memtree.store.kinds import EMBED_KINDS

log = logging.getLogger(__name__)

SWEEP_SECONDS = 0.5  # one sweep's work, then back to the loop (heartbeats, stop); the rest right after
RETRY_PROVIDER_S = 60  # a provider that failed (Ollama away) is retried this often
START = (0, "")
# The backlog is walked in creation order from a cursor. A walk from START
# reads every live chunk (~0.9 s at 1M nodes), so it is not started again for
# each capture: the cursor stays at the newest chunk, a chunk that goes live
# behind it (judged late by the filter, a spooled capture dated when it
# happened) comes by its NodesChanged event, and a walk from START, for what
# an event missed (dropped by a full queue, sent while this walker was down),
# runs at start-up and then at most WALK_SHARE of the time.
WALK_SHARE = 0.002
WALK_AGAIN_S = 300.0
FRESH_MAX = 4096  # ids gone live, kept until embedded; past this, a walk from START finds them
# The backlog ctl status shows is a count that reads every live chunk too:
# while there is one, every BACKLOG_COUNT_S at most and COUNT_SHARE of the time.
BACKLOG_COUNT_S = 5.0
COUNT_SHARE = 0.02
# Vectors per PutVectors call: a batch goes to the writer in slices this big. A
# PutVectors is a transaction of its own there (writer.HEAVY_TYPES), and a hook
# capture arriving meanwhile waits for it; 32 vectors took ~1.9 ms, 8 ~0.5 ms
# (100k store) as JSON lists of floats, 8 ~0.16 ms as base64 (store/vectors.to_wire).
PUT_SLICE = 8


class EmbedWalker(Walker):
    name = "walker.embed"
    topics = (protocol.NodesChanged.TYPE,)
    interval_ms_key = "embeddingIdleMs"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.provider: embeddings.Provider | None = None
        self.unavailable = ""
        self._provider_tried = 0.0
        self.batch = max(1, int(self.config.walkers.embeddingBatchSize))
        self.stats = {"embedded": 0, "copied": 0, "walks": 1, "stepped_aside_ms": 0}
        self.cursor = START  # (created_at, id) of the last node taken from the backlog
        self._fresh: set[str] = set()  # ids that went live (NodesChanged) and may lack a vector
        self._walking = True  # a walk from START (the first one now) has not reached the newest chunk
        self._walk_s = 0.0  # seconds the backlog queries of the current walk took
        self._walk_again = 0.0  # when a walk from START may run again (monotonic)
        self._walk_due = False  # ids were dropped (FRESH_MAX): a walk from START as soon as possible
        self._count_every = BACKLOG_COUNT_S
        self._drained = False  # the last sweep found nothing to embed
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="embed")
        self._compute: ComputeChild | None = None  # backlog batches in a child of the idle class
        self._counted = 0.0
        self._queries_done = threading.Event()
        self._queries_wake = os.pipe()  # on_stop writes a byte: the query thread's poll ends at once
        self._queries: threading.Thread | None = None
        # The writer's batches of requests, stepped aside for before each read and PutVectors.
        self._foreground = foreground.Watch(self.paths.store_dir) if self.config.walkers.lowPriority else None

    def on_start(self) -> None:
        # Each batch tokenized on the thread that asks, never on the tokenizer's pool: that
        # pool's threads take the priority of whichever thread tokenizes first, so after a
        # first query (normal priority) every drain ran unniced on every core.
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        self._load_provider()
        if self.provider is not None and self.provider.local and self.config.walkers.lowPriority:
            # Now: the model loaded, no other thread of ours using it yet (embed_compute.py).
            self._compute = ComputeChild(self.provider, self.paths.store_dir)
            log.info("%s: backlog batches computed by process %d (idle class)", self.ctx.name, self._compute.pid)
        self.router = self.bind(zmq.ROUTER, protocol.SOCK_EMBED)
        # Before super().on_start() lowers this thread's priority: the query thread keeps the normal one.
        self._queries = threading.Thread(target=self._query_loop, name="queries", daemon=True)
        self._queries.start()
        super().on_start()

    def _load_provider(self) -> None:
        self._provider_tried = time.monotonic()
        t0 = time.perf_counter()
        try:
            self.provider = embeddings.load_provider(self.config)
        except embeddings.ProviderUnavailable as e:
            self.provider, self.unavailable = None, e.message
            self.set_idle(e.message)
            return
        self.unavailable = ""
        self.set_idle("")
        self.info = {"model": self.provider.name, **self.stats}
        log.info(
            "%s: model %s (%d dims) loaded in %.2fs",
            self.ctx.name,
            self.provider.name,
            self.provider.dim,
            time.perf_counter() - t0,
        )

    def embed(self, texts: list[str]):
        """The provider's vectors, heartbeating while it works: an Ollama batch
        may take longer than the supervisor waits between heartbeats."""
        if self._compute is not None:
            job = self._compute.submit(texts)
        else:
            job = self._pool.submit(self.provider.embed, texts)
        period = self.config.supervisor.heartbeatMs / 1000
        while True:
            try:
                return embeddings.check_unit(job.result(timeout=period), f"{self.provider.name} (write)")
            except FutureTimeout:
                if self.stopping:  # SIGTERM: do not outlast the shutdown timeout waiting for a slow server
                    raise embeddings.ProviderUnavailable("the walker is stopping") from None
                self._heartbeat("running")

    def on_stop(self) -> None:
        self._queries_done.set()
        os.write(self._queries_wake[1], b"x")
        if self._queries is not None:
            self._queries.join(timeout=1.0)  # before the base closes the router it polls
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._compute is not None:
            self._compute.close()
        super().on_stop()

    # -- query embeddings (the query thread owns the router) ----------------------
    def _query_loop(self) -> None:
        poller = zmq.Poller()
        poller.register(self.router, zmq.POLLIN)
        poller.register(self._queries_wake[0], zmq.POLLIN)
        try:
            while not self._queries_done.is_set():
                if poller.poll():  # on_stop writes the wake pipe
                    self.serve_queries()
        except zmq.ZMQError as e:  # the router closed under us while stopping
            if not self._queries_done.is_set():
                log.error("%s: query thread ended: %s", self.ctx.name, e)

    def serve_queries(self) -> None:
        """Answer every queued EmbedQuery (without blocking)."""
        while True:
            try:
                parts = self.router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            route, frame = parts[:-1], parts[-1]
            if not route:
                continue
            try:
                answer = self._answer(frame)
            except Exception:  # noqa: BLE001 - the query thread must outlive one bad query
                log.exception("%s: query failed", self.ctx.name)
                answer = protocol.encode_error(
                    "", protocol.ErrorCode.INTERNAL, "internal error in the embed walker", src=self.ctx.name
                )
            self._send(route, answer)

    def _answer(self, frame: bytes) -> bytes:
        try:
            env = protocol.decode(frame)
        except protocol.ProtocolError as e:
            return protocol.encode_error(getattr(e, "req_id", ""), e.code, e.message, src=self.ctx.name)
        if env.kind != "call" or not isinstance(env.body, protocol.EmbedQuery):
            return protocol.encode_error(
                env.id,
                protocol.ErrorCode.UNKNOWN_TYPE,
                f"{env.type} is not a call the embed walker takes",
                src=self.ctx.name,
            )
        provider = self.provider  # the loop may drop it meanwhile
        if provider is None:
            return protocol.encode_error(
                env.id, protocol.ErrorCode.UNAVAILABLE, f"embeddings unavailable: {self.unavailable}", src=self.ctx.name
            )
        try:
            # Directly, not through the batch pool: a query does not queue behind a backlog batch.
            vec = embeddings.check_unit(provider.embed([env.body.text]), f"{provider.name} (query)")[0]
        except MemtreeError as e:
            return protocol.encode_error(env.id, e.code, e.message, src=self.ctx.name)
        return protocol.encode_ok(
            env.id, {"model": provider.name, "dim": provider.dim, "vector": vec.tolist()}, src=self.ctx.name
        )

    def _send(self, route, frame: bytes) -> None:
        try:
            self.router.send_multipart([*route, frame], zmq.NOBLOCK)
        except zmq.ZMQError as e:  # the asker gave up or is gone
            log.info("embed reply dropped: %s", e)

    # -- the backlog ----------------------------------------------------------------
    def on_events(self, records: list) -> None:
        live = [r for r in records if getattr(r, "status", None) == "live"]
        if not live:
            return
        for r in live:
            if not r.kinds or set(r.kinds) & set(EMBED_KINDS):  # the kinds of all its ids
                self._fresh.update(r.ids)
        if len(self._fresh) > FRESH_MAX:  # memory stays bounded: a walk from START finds them
            self._fresh.clear()
            self._walk_due = True
        self.tick_soon(self.config.walkers.embeddingIdleMs / 1000)

    def sweep(self) -> None:
        if self.provider is None:
            if time.monotonic() - self._provider_tried >= RETRY_PROVIDER_S:
                self._load_provider()
            if self.provider is None:
                return
        deadline = time.monotonic() + SWEEP_SECONDS
        self._drained = False
        try:
            while time.monotonic() < deadline and not self.stopping:
                if not self._one_batch():
                    break
            else:
                self.tick_soon(0)  # more backlog: continue after a turn of the loop
            self._count_backlog()
        except apsw.Error as e:
            log.warning("%s: read failed (%s); reopening next tick", self.ctx.name, e)
            self.reader.reset()
            self._walk_due = True  # rows taken and not stored
        except embeddings.ProviderUnavailable as e:
            log.warning("%s: provider failed: %s", self.ctx.name, e.message)
            self._walk_due = True
            self.provider, self.unavailable = None, e.message
            self.set_idle(e.message)
        # Every wait counted, a sweep's that found nothing to embed too.
        self.stats["stepped_aside_ms"] = round(1000 * self._stepped_aside_s())
        self.info = {"model": self.provider.name, **self.stats} if self.provider else self.info

    def _count_backlog(self) -> None:
        """The backlog for ctl status: none once a sweep found nothing to embed,
        else a count, at most every BACKLOG_COUNT_S and COUNT_SHARE of the time."""
        if self._drained:
            self.backlog = 0
            return
        db = self.db()
        if db is not None and time.monotonic() - self._counted >= self._count_every:
            t0 = time.monotonic()
            self.backlog = vectors.backlog_count(db, self.provider.name, EMBED_KINDS)
            self._counted = time.monotonic()
            self._count_every = max(BACKLOG_COUNT_S, (self._counted - t0) / COUNT_SHARE)

    def _walk(self, db, model: str, limit: int) -> list[tuple]:
        """The next rows of the backlog walk, (id, content_hash, content); past
        the newest chunk, a walk from START when one is due (WALK_SHARE)."""
        t0 = time.monotonic()
        rows = vectors.backlog(db, model, limit, EMBED_KINDS, after=self.cursor)
        if not rows and not self._walking and (self._walk_due or t0 >= self._walk_again):
            # For chunks that went live behind the cursor with no event seen.
            end, self.cursor, self._walk_s = self.cursor, START, 0.0
            self._walking, self._walk_due = True, False
            self.stats["walks"] += 1
            rows = vectors.backlog(db, model, limit, EMBED_KINDS)
            if not rows:
                self.cursor = end
        self._walk_s += time.monotonic() - t0
        if rows:
            self.cursor = (rows[-1][3], rows[-1][0])
        elif self._walking:  # this walk from START reached the newest chunk
            self._walking = False
            if self.cursor == START:  # nothing to embed all the way: on from the newest chunk
                self.cursor = vectors.newest(db, EMBED_KINDS) or START
            self._walk_again = time.monotonic() + max(WALK_AGAIN_S, self._walk_s / WALK_SHARE)
        return [r[:3] for r in rows]

    def _step_aside(self) -> None:
        if self._foreground is not None:
            self._foreground.wait()

    def _stepped_aside_s(self) -> float:
        """What the drain waited for the writer's batches so far (this thread's waits and the child's)."""
        own = self._foreground.waited_s if self._foreground is not None else 0.0
        return own + (self._compute.stepped_aside_s if self._compute is not None else 0.0)

    def _one_batch(self) -> bool:
        """Embed one batch of the backlog; True when it was full (there may be more)."""
        db = self.db()
        if db is None:
            return False
        self._step_aside()
        model, dim = self.provider.name, self.provider.dim
        rows: list[tuple] = []
        while self._fresh and len(rows) < self.batch:  # what went live by an event first: one lookup an id
            ids = [self._fresh.pop() for _ in range(min(self.batch - len(rows), len(self._fresh)))]
            rows += vectors.unembedded(db, model, ids, EMBED_KINDS)
        if len(rows) < self.batch:  # the rest of the batch from the walk
            taken = {r[0] for r in rows}
            rows += [r for r in self._walk(db, model, self.batch - len(rows)) if r[0] not in taken]
        if not rows:
            # Then vectors of another model (an upgrade changed the default): stale and superseded
            # nodes keep theirs, and one left would keep semantic search refused until `memtree reembed`.
            rows = vectors.other_model_nodes(db, model, dim, self.batch)
            if not rows:
                self._drained = True
                return False
        known = vectors.embedded_hashes(db, sorted({h for _, h, _ in rows}), model)
        todo: dict[str, str] = {}  # hash -> text, each content embedded once
        for _, digest, content in rows:
            if digest not in known:
                todo.setdefault(digest, content)
        fresh = dict(zip(todo, self.embed(list(todo.values())))) if todo else {}
        items = []
        for node_id, digest, _ in rows:
            vec = fresh.get(digest)
            items.append(
                {
                    "node_id": node_id,
                    "content_hash": digest,
                    "vector": vectors.to_wire(known[digest] if vec is None else vec),
                }
            )
        stored = 0
        for at in range(0, len(items), PUT_SLICE):
            self._step_aside()
            try:
                result = self.call_writer(protocol.PutVectors(model=model, dim=dim, items=items[at : at + PUT_SLICE]))
            except MemtreeError as e:
                log.error("%s: PutVectors refused: %s", self.ctx.name, e.message)
                self._walk_due = True  # the cursor passed these rows: a walk from START takes them again
                return False
            if result is None:
                self._walk_due = True  # writer away: the slices stored stay, the rest is backlog again
                return False
            stored += result["stored"]
        self.stats["embedded"] += len(fresh)
        self.stats["copied"] += sum(1 for _, d, _ in rows if d not in fresh)
        return len(rows) == self.batch and stored > 0


def main() -> None:
    main_for(EmbedWalker)


if __name__ == "__main__":
    main()
