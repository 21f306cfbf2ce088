"""Writer: the only process that writes SQLite. Group commit, reply after commit.

When a socket is readable it drains what is queued on the write and ingest
ROUTERs (up to writer.batchMax, or half as many requests as peers are
asking: PEER_WINDOW_S), runs every request in one transaction (a failing
request rolls back alone: see UNGUARDED), takes in what arrived meanwhile
(BATCH_FILL_S), commits, and only then replies and publishes
``NodesChanged`` events. Big frames (whole-file Reads) get a transaction
each after the small ones are answered, and small ones that come meanwhile
are answered between two (HEAVY_FRAME_BYTES). A request that hits a bug gets
an ``internal`` error reply and the writer lives: a poison request must not
crash-loop the only writer. Storage that cannot take writes (disk full, a
read-only database file; memtree.store.write.writable) is noticed before a batch or
when its commit fails: every request gets an ``unavailable`` reply naming the
problem (nothing unstored is acknowledged; hooks spool), ``ctl status`` shows
it, and the writer retries with a capped backoff until it clears by itself.
Any other failure outside one request ends the process and the supervisor
restarts it.
"""

from __future__ import annotations

import logging
import os
import time
from functools import partial

import apsw
import zmq

from memtree import protocol
from memtree.actors.base import Actor, main_for
from memtree.capture import heartbeat, ingest, rewrite, spool
from memtree.errors import BadRequest, MemtreeError
from memtree.runtime import foreground
from memtree.store import db as store_db
from memtree.store.write import bookkeeping, captures, fts, mutations, rescan, vectors
from memtree.store.write.checkpointer import Checkpointer
from memtree.store.write.mutations import Tx
from memtree.store.write.writable import STORAGE_ERRORS, Writability, describe

log = logging.getLogger(__name__)

INTERNAL_MESSAGE = "internal error; see writer log"
SPOOL_CHUNK = 256  # spool entries per transaction
SPOOL_CHUNK_BYTES = 16 * 1024 * 1024  # or fewer, so a drain holds a bounded amount in memory
SPOOL_BUDGET = 2048  # entries applied per drain, so heartbeats keep flowing; the next tick goes on
# SQLite's own autocheckpoint threshold, in WAL pages. Past it the writer asks
# its checkpoint thread for one instead (store/write/checkpointer.py): an
# autocheckpoint runs inside the COMMIT that crosses it (copying and syncing
# ~4 MB), and the caller waiting for that ack paid for it (the hook's p95).
WAL_CHECKPOINT_PAGES = 1000
# Past this the WAL outgrew what the thread keeps up with (commits coming
# faster than it copies, or the thread gone): the writer waits for the
# thread's pass (up to WAL_WAIT_S) and checkpoints the rest itself after
# answering, as it did before the thread, so the WAL stays bounded.
WAL_INLINE_PAGES = 1500
WAL_WAIT_S = 2.0
# A batch keeps taking requests that arrived while it ran, up to
# writer.batchMax, until this long after it began: one COMMIT (and one round
# of replies) for more requests, the first ones' acks later by at most this
# plus one request.
BATCH_FILL_S = 0.002
# Pipelined group commit. Each peer (a hook's connection, a walker, the front)
# waits for its reply before it asks again, so a batch that took every waiting
# request leaves the writer idle while all of them turn their replies around.
# Once SPLIT_PEERS or more peers asked within PEER_WINDOW_S, a batch takes half
# as many requests as there are such peers: one half's transaction runs while
# the other half's peers prepare their next call. bench_writer (clients that
# each wait for their reply), against taking every waiting request: 8 clients
# 7,664 -> 8,513 notes/s, 32 clients 10,984 -> 12,057, 64 clients 12,145 ->
# 13,001, the hook's ack unchanged. Fewer peers, or one that sends many calls
# without waiting, batch as before.
PEER_WINDOW_S = 0.1
SPLIT_PEERS = 4
# A request frame this big (a whole-file Read: hundreds of chunks to plan and
# insert) runs in a batch of its own once the small ones are committed and
# answered, so an ordinary capture's ack never waits on its chunking.
HEAVY_FRAME_BYTES = 16 * 1024
# Calls that run in a batch of their own the same way, whatever their size: an
# FTS5 merge step writes up to its page bound (tens of ms on a large store); an
# embedding drain's PutVectors (~0.2 ms) and a rescan's Redact (a redaction a
# row) are background work a capture taken in with them does not wait for.
HEAVY_TYPES = (protocol.MergeFts, protocol.PutVectors, protocol.Redact)


class IngestDone:
    """An applied Ingest: its result and the replacement to build, if any.
    The reply is encoded after COMMIT (``Writer._finish``), when the preview
    (a disk read and a redaction pass) no longer holds the batch's transaction."""

    __slots__ = ("result", "job")

    def __init__(self, result: dict, job):
        self.result, self.job = result, job


def _ingest(tx, rec) -> IngestDone:
    try:
        plan = ingest.plan(rec.payload, tx.config, tx.project_root)
    except BadRequest as e:
        tx.count_kept("ingest_malformed")
        log.warning("ingest: malformed payload from %s: %s", tx.actor, e.message)
        raise
    if 0 < rec.received_at < tx.now:
        tx.now = rec.received_at  # dated when it happened, not when a spool drain got to it
    result = captures.apply_plan(tx, plan, rec.payload.get("tool_use_id"))
    return IngestDone(result, _rewrite_job(tx, rec.payload, plan, result) if rec.rewrite else None)


def _rewrite_job(tx, payload: dict, plan, result: dict):
    """What the replacement needs from the store, read inside the transaction
    (memtree.capture.rewrite.Job); None when nothing is to be replaced."""
    cfg = rewrite.settings(tx.config)
    if not cfg["rewrite"]:
        return None
    if plan.skip is not None:
        path = rewrite.unchanged_path(payload) if plan.skip.kind == "unchanged" else None
        found = captures.latest_file_capture(tx, path) if path else None
        return rewrite.Job(payload, cfg, tx.project_root, unchanged=found) if found else None
    ids = result.get("stored") or result.get("deduped") or []
    return rewrite.Job(payload, cfg, tx.project_root, node_id=captures.shown_id(tx, ids[0])) if ids else None


def _set_status(tx, rec):
    return {"changed": mutations.set_status(tx, rec.ids, rec.status, rec.reason, rec.expect)}


def _add_edges(tx, rec):
    return {"added": mutations.add_edges(tx, rec.edges)}


HANDLERS = {
    protocol.Ping: lambda tx, rec: {"pid": os.getpid()},  # answered by Writer._run_one, with its counters
    protocol.AddNode: mutations.add_node,
    protocol.Ingest: _ingest,
    protocol.SetStatus: _set_status,
    protocol.AddEdges: _add_edges,
    protocol.Forget: lambda tx, rec: mutations.forget(tx, rec.node_id, rec.reason),
    protocol.PutFile: captures.put_file,
    protocol.PutToolOutput: captures.put_tool_output,
    protocol.Purge: lambda tx, rec: {"purged": mutations.purge(tx, rec.ids, rec.reason)},
    protocol.Reclaim: lambda tx, rec: mutations.reclaim(tx, rec.pages),
    protocol.Redact: lambda tx, rec: {
        "changed": rescan.reredact(tx, rec.ids),
        "marked": rescan.mark_current(tx, rec.current, rec.version),
    },
    protocol.RebuildIndexes: lambda tx, rec: mutations.rebuild_indexes(tx, rec.reason),
    protocol.Tidy: lambda tx, rec: bookkeeping.tidy(tx, rec.spool_since),
    protocol.MergeFts: lambda tx, rec: fts.merge(tx, rec.pages),
    protocol.PutVectors: vectors.put_vectors,
    protocol.Supersede: vectors.supersede,
}
# After a batch holding one of these, checkpoint the WAL so the file really shrinks.
# Forget: no old page image stays in the WAL; Tidy: the pruner's pass ends with the WAL truncated.
CHECKPOINT_AFTER = (protocol.Reclaim, protocol.Forget, protocol.Tidy)
# The hook's socket takes only what a hook sends.
INGEST_SOCKET_TYPES = (protocol.Ingest, protocol.Ping)
# The frequent calls run in a batch without a SAVEPOINT each (a SAVEPOINT and
# its RELEASE cost about as much as a third SQL statement a note). One that
# fails before it wrote a row (a bad field, a tombstoned capture: its handler
# checks first) has nothing to undo; one that fails after it wrote (a dangling
# ref, a bug) cannot be rolled back alone, so the batch is rolled back and run
# again with a SAVEPOINT per request (_Replay), and only then answered. Their
# writes are plain INSERT/UPDATE/DELETE, which db.total_changes() counts.
UNGUARDED = (protocol.AddNode, protocol.Ingest, protocol.SetStatus, protocol.AddEdges, protocol.PutToolOutput)
_NOBLOCK, _SNDMORE, _RCVMORE = int(zmq.NOBLOCK), int(zmq.SNDMORE), int(zmq.RCVMORE)
_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)


# The counters a Ping answers with (eval/bench_writer, eval/bench_scale and the tests
# read them). heavy_batches/heavy_ms: the batches of one heavy request and the time
# they held the writer (what a capture arriving meanwhile waited behind);
# checkpoint_busy: a pass asked of the checkpoint thread is not done yet.
PING_COUNTERS = ("requests", "batches", "checkpoints", "checkpoint_passes", "heavy_batches", "heavy_ms")


class _Replay(Exception):
    """A request without a SAVEPOINT failed after writing: the batch runs again with one each."""


class Request:
    __slots__ = ("sock", "route", "env", "reply", "heavy")

    def __init__(self, sock, route, env, heavy: bool = False):
        self.sock, self.route, self.env, self.reply, self.heavy = sock, route, env, None, heavy


class Writer(Actor):
    name = "writer"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.tick_interval_s = self.config.writer.spoolDrainMs / 1000
        self.db = None
        self.stats = {"requests": 0, "batches": 0, "errors": 0, "malformed": 0, "internal": 0, "checkpoints": 0}
        self.stats.update(heavy_batches=0, heavy_ms=0)
        self._heavy_s = 0.0
        self.checkpointer: Checkpointer | None = None
        self.foreground: foreground.Mark | None = None
        self.info = self.stats
        self._unrecorded_malformed = 0  # bad frames not yet in the counters table
        self._truncate_pending = False  # a WAL truncate after Forget/Reclaim was busy: retried on tick
        self._heavy: list[Request] = []  # big requests held for a batch of their own (HEAVY_FRAME_BYTES)
        self._deferring = False  # the open transaction indexes its new rows at _commit (store/write/fts.py)
        self._wal_pages = 0  # pages in the WAL after the last commit (the WAL hook)
        self._spool_ids_unchecked = True  # at the first drain: drop ids of draining files no longer there
        self._peers: dict[tuple[bool, bytes], float] = {}  # (on the ingest socket, identity) -> its last request
        self._peers_pruned = 0.0
        self.storage = Writability(self.paths.db)

    # -- lifecycle ------------------------------------------------------------------
    def on_start(self) -> None:
        if not store_db.tune_process():  # a connection opened before: SQLite's defaults stay
            log.info("SQLite's process settings not applied (a connection was open)")
        self.db = store_db.open_write(self.paths.db)
        self.db.set_wal_hook(self._wal_grew)  # replaces SQLite's autocheckpoint: see WAL_CHECKPOINT_PAGES
        self.checkpointer = Checkpointer(self.paths.db)
        self.foreground = foreground.Mark(self.paths.store_dir)
        try:  # so a hook can count a capture lost to a full disk later (fixed size, written in place)
            heartbeat.ensure(self.paths.store_dir)
        except OSError as e:
            log.warning("capture heartbeat file not created: %s", e)
        # A flood of oversized messages is cut off at the socket, never buffered.
        self.write_sock = self.bind(zmq.ROUTER, protocol.SOCK_WRITE, maxmsgsize=protocol.MAX_MESSAGE_BYTES)
        self.ingest_sock = self.bind(zmq.ROUTER, protocol.SOCK_INGEST, maxmsgsize=protocol.MAX_MESSAGE_BYTES)
        self.events = self.bind(zmq.PUB, protocol.SOCK_EVENTS)
        self.add_reader(self.write_sock, self._on_readable)
        self.add_reader(self.ingest_sock, self._on_readable)
        self._guarded(self.drain_spool)

    def on_tick(self) -> None:
        if self.storage.check_file() is None and self.storage.may_try():
            self._guarded(self._probe if self.storage.problem else self.drain_spool)
        if self._truncate_pending:
            self._truncate_wal()
        self._checkpoint_if_due()

    def _wal_grew(self, _db, _name: str, pages: int) -> int:
        """SQLite's WAL hook, after every commit: how many pages the WAL holds."""
        self._wal_pages = pages
        return 0  # SQLITE_OK

    def _checkpoint_if_due(self) -> None:
        """What SQLite's autocheckpoint would have done inside the last COMMIT,
        done beside the writer: PASSIVE checkpoints (never waiting for readers)
        on the checkpoint thread once the WAL passed WAL_CHECKPOINT_PAGES, and
        here, after the replies went out, only past WAL_INLINE_PAGES.

        The WAL starts over at a write that finds every frame checkpointed, so
        the thread passes again while frames are left: one with no commit
        during it leaves none. Under steady commits every pass leaves the
        frames committed meanwhile, and past WAL_INLINE_PAGES the writer
        copies the rest itself: a millisecond or a few (two fsyncs), which a
        capture arriving meanwhile waits for. That copy used to end every pass
        and was most of the captures' tail during an embedding drain (1M
        nodes: three a second, p95 3.2 ms against 2.0 idle; 2.3 now)."""
        pages = self._wal_pages
        if pages < WAL_CHECKPOINT_PAGES:
            return
        ckpt = self.checkpointer
        if ckpt is not None and ckpt.alive():
            if pages >= WAL_INLINE_PAGES:  # commits outpace the thread: its pass, then the rest here
                ckpt.wait(WAL_WAIT_S)
                ckpt.take()
            elif ckpt.busy:
                return  # one pass at a time; looked at again after the next batch or tick
            else:
                took = ckpt.take()
                if took is not None and took >= pages:
                    self._wal_pages = 0  # all copied: the next write starts the WAL over
                else:
                    ckpt.request()
                    self.stats["checkpoint_passes"] = ckpt.passes
                return
        self._wal_pages = 0  # a failure below is retried after the next commit that grows it
        try:
            store_db.checkpoint(self.db, "PASSIVE")
            self.stats["checkpoints"] += 1
        except (apsw.BusyError, apsw.LockedError):
            pass  # another connection is checkpointing: it does the work
        except STORAGE_ERRORS as e:  # committed already; the next one catches up
            log.warning("WAL checkpoint failed: %s", describe(e))

    def _probe(self) -> None:
        """While storage is failing: one tiny committed write tells when it works again."""
        self._in_tx(lambda: mutations.bump_counter(self.db, "storage_recovered"))
        self.drain_spool()

    def _guarded(self, work, batch: list | None = None) -> bool:
        """Run ``work``; a storage failure puts the writer in its retry state
        (and refuses ``batch``) instead of ending the process."""
        try:
            work()
        except STORAGE_ERRORS as e:
            first = self.storage.problem is None
            self.storage.failed(describe(e))
            if first:
                log.error("writer: %s; refusing writes until it clears (retrying)", self.storage.problem)
            self._refuse(batch or [])
            return False
        finally:
            self._show_storage()
        lasted = self.storage.cleared()
        if lasted is not None:
            log.warning("writer: storage writable again after %.1fs", lasted)
            self._show_storage()
        return True

    def _show_storage(self) -> None:
        if self.storage.problem:
            self.info["storage"] = self.storage.problem
        else:
            self.info.pop("storage", None)

    def _refuse(self, batch: list) -> None:
        """Answer every request without touching the database (Ping still works)."""
        for req in batch:
            if isinstance(req.env.body, protocol.Ping):
                frame = protocol.encode_ok(req.env.id, {"pid": os.getpid()}, src=self.name)
            else:
                frame = protocol.encode_error(
                    req.env.id, protocol.ErrorCode.UNAVAILABLE, self.storage.message(), src=self.name
                )
            self._send(req.sock, req.route, frame)

    def on_stop(self) -> None:
        if self.checkpointer is not None:  # first: the writer's connection must be the last to close
            self.checkpointer.close()
            self.checkpointer = None
        if self.db is not None:
            self.db.close()
            self.db = None
        if self.foreground is not None:
            self.foreground.close()

    # -- group commit -----------------------------------------------------------------
    def _on_readable(self, _sock) -> None:
        cap = self._batch_cap()
        batch = self._collect(cap)
        if not batch and not self._unrecorded_malformed:
            return
        if self.storage.check_file() is not None or not self.storage.may_try():
            self._refuse(batch)
            self._show_storage()
            return
        light = [r for r in batch if not r.heavy]
        self._heavy = [r for r in batch if r.heavy]  # the light batches' fills add to it
        taken = len(batch)
        while not (light or self._unrecorded_malformed) or self._run_light(light, cap):
            if not self._heavy:
                return
            # One heavy request a transaction, and what came meanwhile answered before
            # the next: an ordinary capture waits for one whole-file Read, not for a queue
            # of them. Up to batchMax requests are taken in this way, then the queue is done.
            req = self._heavy.pop(0)
            if not self._run_heavy(req):
                break
            light = []
            for r in self._collect(max(0, self.config.writer.batchMax - taken)):
                (self._heavy if r.heavy else light).append(r)
                taken += 1
        self._refuse(self._heavy)
        self._heavy = []

    def _run_light(self, light: list[Request], cap: int) -> bool:
        """The ordinary requests in one batch, under the foreground mark: the
        embed walker's computation steps aside meanwhile (memtree/runtime/foreground.py)."""
        self.foreground.up()
        try:
            return self._guarded(partial(self._run_batch, light, cap), light)
        finally:
            self.foreground.down()

    def _run_heavy(self, req: Request) -> bool:
        """One heavy request in a batch of its own, its time counted."""
        t0 = time.perf_counter()
        ran = self._guarded(partial(self._run_batch, [req]), [req])
        self._heavy_s += time.perf_counter() - t0
        self.stats["heavy_batches"] += 1
        self.stats["heavy_ms"] = round(self._heavy_s * 1000)
        return ran

    def _batch_cap(self) -> int:
        """How many requests the next batch takes: writer.batchMax, or half as
        many as the peers that asked within PEER_WINDOW_S (see SPLIT_PEERS)."""
        now = time.monotonic()
        if now - self._peers_pruned >= PEER_WINDOW_S / 2:
            horizon = now - PEER_WINDOW_S
            self._peers = {peer: at for peer, at in self._peers.items() if at >= horizon}
            self._peers_pruned = now
        most, peers = self.config.writer.batchMax, len(self._peers)
        return most if peers < SPLIT_PEERS else min(most, (peers + 1) // 2)

    def _collect(self, limit: int | None = None) -> list[Request]:
        """Drain both ROUTERs without blocking, one request from each in turn, decoding as we go."""
        batch: list[Request] = []
        limit = self.config.writer.batchMax if limit is None else limit
        now = time.monotonic()
        # An empty socket is passed over on its EVENTS (~1 us); a recv that raises
        # zmq.Again costs ~3 us, and a batch's fill asks both sockets again and again.
        ready = [s for s in (self.write_sock, self.ingest_sock) if s.getsockopt(_EVENTS) & _POLLIN]
        while ready and len(batch) < limit:
            for sock in tuple(ready):
                if len(batch) >= limit:
                    break
                # One raised zmq.Again a socket and drain; a check of EVENTS before
                # every message cost more. Plain int flags: pyzmq's enums cost more than the call.
                try:
                    parts = [sock.recv(_NOBLOCK)]  # recv_multipart, with int flags
                    while sock.getsockopt(_RCVMORE):
                        parts.append(sock.recv(_NOBLOCK))
                except zmq.Again:
                    ready.remove(sock)
                    continue
                req = self._decode(sock, parts)
                if req is not None:
                    batch.append(req)
                    self._peers[(sock is self.ingest_sock, parts[0])] = now
        return batch

    def _decode(self, sock, parts: list[bytes]) -> Request | None:
        """A Request, or None after answering a bad frame right away."""
        route = parts[:-1]
        if not route:
            return None  # a ROUTER always gives the peer identity; nothing to answer
        try:
            env = protocol.decode(parts[-1])
            if env.kind != "call":
                raise protocol.ProtocolError(protocol.ErrorCode.BAD_REQUEST, f"expected a call, got {env.kind!r}")
            allowed = INGEST_SOCKET_TYPES if sock is self.ingest_sock else tuple(HANDLERS)
            if type(env.body) not in allowed:
                raise protocol.ProtocolError(
                    protocol.ErrorCode.UNKNOWN_TYPE, f"{env.type} is not a call this socket takes"
                )
        except protocol.ProtocolError as e:
            self.stats["malformed"] += 1
            self._unrecorded_malformed += 1
            log.warning("bad frame: %s", e.message)
            self._send(sock, route, protocol.encode_error(getattr(e, "req_id", ""), e.code, e.message, src=self.name))
            return None
        return Request(sock, route, env, len(parts[-1]) > HEAVY_FRAME_BYTES or isinstance(env.body, HEAVY_TYPES))

    def _run_batch(self, batch: list[Request], fill_to: int = 0) -> None:
        """Run ``batch`` in one transaction, grown with what arrives meanwhile
        up to ``fill_to`` requests (0: not grown), and answer it."""
        db = self.db
        changed: dict[str, dict[str, str]] = {}
        counted = {k: self.stats[k] for k in ("requests", "errors", "internal")}
        many = len(batch) > 1 or any(r.heavy for r in batch)
        self._begin(many)
        try:
            try:
                self._run_requests(batch, changed, True, time.monotonic() + BATCH_FILL_S, fill_to)
            except _Replay:
                db.execute("ROLLBACK")
                self.stats.update(counted)  # counted again by the replay
                changed.clear()
                self._begin(many)
                self._run_requests(batch, changed, False)
            if self._unrecorded_malformed:
                mutations.bump_counter(db, "frames_malformed", self._unrecorded_malformed)
            self._commit()
            self._unrecorded_malformed = 0
        except BaseException:
            if not db.in_transaction:
                raise
            db.execute("ROLLBACK")
            raise  # outside per-request handling: exit, the supervisor restarts us
        self.stats["batches"] += 1
        # Plain replies first: nobody in the batch waits for another's preview.
        for req in sorted(batch, key=lambda r: isinstance(r.reply, IngestDone)):
            self._send(req.sock, req.route, self._finish(req.env.id, req.reply))
        self._publish(changed)
        if any(isinstance(req.env.body, CHECKPOINT_AFTER) for req in batch):
            self._truncate_wal()
        self._checkpoint_if_due()

    def _run_requests(
        self, batch: list[Request], changed: dict, unguarded: bool, fill_until: float = 0.0, fill_to: int = 0
    ) -> None:
        """Run ``batch`` (and what arrives until ``fill_until``, added to it up
        to ``fill_to`` requests); with ``unguarded``, the UNGUARDED types
        without a SAVEPOINT each."""
        done, limit = 0, fill_to
        while done < len(batch):
            for req in batch[done:]:
                body = req.env.body
                guard = not unguarded or type(body) not in UNGUARDED
                req.reply = self._run_one(req.env.src, body, req.env.id, changed, guard)[1]
            done = len(batch)
            if done < limit and time.monotonic() < fill_until:
                for req in self._collect(limit - done):  # in place: a refusal reaches these too
                    (self._heavy if req.heavy else batch).append(req)

    def _truncate_wal(self) -> None:
        """Checkpoint and truncate the WAL; a reader mid-transaction makes it
        busy, so it is retried on the next ticks until it goes through (a
        forgotten text's old page images must not stay in the WAL)."""
        # No busy wait: TRUNCATE waits for readers, and the ingest behind it must not.
        self.db.set_busy_timeout(0)
        try:
            busy = store_db.checkpoint(self.db, "TRUNCATE")
        except (apsw.BusyError, apsw.LockedError):
            busy = 1
        except STORAGE_ERRORS as e:  # committed already; the WAL is checkpointed later
            log.warning("WAL checkpoint failed: %s", describe(e))
            busy = 1
        finally:
            self.db.set_busy_timeout(store_db.BUSY_TIMEOUT_MS)
        self._truncate_pending = bool(busy)

    def _run_one(
        self, src: str, rec, req_id: str, changed: dict, guard: bool = True
    ) -> tuple[bool, bytes | IngestDone]:
        """One request in its own savepoint (without one unless ``guard``: see
        UNGUARDED); returns (succeeded, encoded reply, or the IngestDone whose
        reply ``_finish`` encodes after COMMIT)."""
        self.stats["requests"] += 1
        if type(rec) is protocol.Ping:  # touches nothing: no savepoint (eval/bench_writer reads the counters)
            counters = {"pid": os.getpid(), **{k: self.stats.get(k, 0) for k in PING_COUNTERS}}
            counters["checkpoint_busy"] = self.checkpointer is not None and self.checkpointer.busy
            return True, self._encode(req_id, counters)
        db = self.db
        tx = Tx(db, self.config, src, project_root=self.paths.project_root)
        if guard:
            db.execute("SAVEPOINT req")
        written = db.total_changes()
        try:
            result = HANDLERS[type(rec)](tx, rec)
        except STORAGE_ERRORS:
            raise  # not this request's fault: the batch fails and the writer goes into retry
        except MemtreeError as e:
            self._undo(guard, written)
            reply, ok = protocol.encode_error(req_id, e.code, e.message, src=self.name), False
            self.stats["errors"] += 1
        except Exception:
            self._undo(guard, written)  # a _Replay is logged by the replay, where it fails again
            log.error("%s from %s failed", rec.TYPE, src or "?", exc_info=True)  # no payload content
            self.stats["internal"] += 1
            reply, ok = (
                protocol.encode_error(req_id, protocol.ErrorCode.INTERNAL, INTERNAL_MESSAGE, src=self.name),
                False,
            )
        else:
            ok = True
            reply = (
                result if isinstance(result, IngestDone) and result.job is not None else self._encode(req_id, result)
            )
            for status, ids in tx.changed.items():
                changed.setdefault(status, {}).update(ids)
        for sql, params in tx.keep:  # refusal audits and counters survive a rollback
            db.execute(sql, params)
        if guard:
            db.execute("RELEASE req")
        return ok, reply

    def _undo(self, guard: bool, written: int) -> None:
        """A failed request's writes undone: its savepoint rolled back, or, run
        without one (UNGUARDED), nothing to undo unless it wrote (then _Replay)."""
        if guard:
            self.db.execute("ROLLBACK TO req")
        elif self.db.total_changes() != written:
            raise _Replay from None

    def _encode(self, req_id: str, result) -> bytes:
        if isinstance(result, IngestDone):
            return protocol.encode_ingest_reply(req_id, result.result, src=self.name)
        return protocol.encode_ok(req_id, result, src=self.name)

    def _finish(self, req_id: str, reply: bytes | IngestDone) -> bytes:
        """The reply frame; for a committed capture with a replacement to show,
        the preview is built now, outside the transaction. A preview that
        fails costs only the replacement: the capture is stored and acked."""
        if not isinstance(reply, IngestDone):
            return reply
        try:
            out = rewrite.build(reply.job)
        except Exception:
            log.error("preview of a stored capture failed", exc_info=True)  # no payload content
            out = None
        return protocol.encode_ingest_reply(req_id, reply.result, out, src=self.name)

    def _send(self, sock, route, frame: bytes) -> None:
        try:
            for part in route:  # the ROUTER's envelope: peer identity (and any delimiter)
                sock.send(part, _NOBLOCK | _SNDMORE)
            sock.send(frame, _NOBLOCK)
        except zmq.ZMQError as e:  # the caller is gone or its queue is full: it will time out
            log.info("reply dropped: %s", e)

    def _publish(self, changed: dict[str, dict[str, str]]) -> None:
        for status, ids in changed.items():
            if not ids:
                continue
            rec = protocol.NodesChanged(ids=list(ids), status=status, kinds=sorted(set(ids.values())))
            try:
                self.events.send_multipart([rec.TYPE.encode(), protocol.encode_event(rec, src=self.name)], zmq.NOBLOCK)
            except zmq.Again:
                pass  # a slow subscriber; walkers also sweep on a timer

    # -- spool --------------------------------------------------------------------------
    def drain_spool(self) -> None:
        """Apply every spooled capture once: each entry commits with its id in
        spool_applied, and a draining file is deleted only once all of it is in.
        Streams: at most SPOOL_CHUNK entries (or SPOOL_CHUNK_BYTES) in memory."""
        budget = SPOOL_BUDGET
        files = spool.claim(self.paths.spool)
        if self._spool_ids_unchecked:  # ids of draining files a crash left behind guard nothing
            self._spool_ids_unchecked = False
            self._in_tx(lambda: bookkeeping.spool_files_gone(self.db, [os.path.basename(f) for f in files]))
        for path in files:
            chunk, size, finished = [], 0, True
            for entry in spool.read(path):
                if entry[0] is not None and captures.is_spool_applied(self.db, entry[0]):
                    continue
                if budget == 0:
                    finished = False  # the rest next tick; applied entries are skipped then
                    break
                budget -= 1
                chunk.append(entry)
                size += entry[3]
                if len(chunk) >= SPOOL_CHUNK or size >= SPOOL_CHUNK_BYTES:
                    self._apply_spool_chunk(chunk, path)
                    chunk, size = [], 0
            if chunk:
                self._apply_spool_chunk(chunk, path)
            if not finished:
                break
            spool.release(path)
            self._in_tx(lambda: bookkeeping.spool_file_done(self.db, os.path.basename(path)))
        self.backlog = spool.pending_count(self.paths.spool)

    def _begin(self, many: bool = False) -> None:
        """BEGIN; with ``many`` (rows to insert: several requests, a whole-file Read,
        a spool chunk), their FTS rows are indexed in one statement at _commit. One
        capture's row or two cost less through the triggers (~30 us a transaction)."""
        self.db.execute("BEGIN IMMEDIATE")
        self._deferring = many
        if many:
            fts.defer(self.db)

    def _commit(self) -> None:
        if self._deferring:
            fts.index_deferred(self.db)
        fts.index_queued_definitions(self.db)
        self.db.execute("COMMIT")

    def _in_tx(self, work) -> None:
        self._begin()
        try:
            work()
            self._commit()
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def _apply_spool_chunk(self, entries: list, path: str) -> None:
        db = self.db
        changed: dict[str, dict[str, str]] = {}
        self._begin(many=True)
        try:
            for entry_id, payload, received_at, _size in entries:
                if entry_id is None:
                    log.warning("spool: skipped a damaged entry (%s)", payload)
                    mutations.bump_counter(db, "spool_damaged")
                    continue
                if captures.is_spool_applied(db, entry_id):
                    continue
                rec = protocol.Ingest(payload=payload, received_at=received_at)
                ok, _ = self._run_one("spool", rec, entry_id, changed)
                if not ok:  # refused/malformed/bug: audited or logged; retrying would not help
                    mutations.bump_counter(db, "spool_failed")
                captures.mark_spool_applied(db, entry_id, int(time.time() * 1000), os.path.basename(path))
            self._commit()
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self._publish(changed)


def main() -> None:
    main_for(Writer)


if __name__ == "__main__":
    main()
