"""What every walker shares: a read connection opened lazily (the writer may
create the store after the walker starts), a Caller to the writer that
tolerates the writer being away, and a SUB socket on the writer's events.

A walker subclasses ``Walker``, sets ``topics`` (event types it wants) and
``interval_ms_key`` (its cadence in config ``walkers``), and implements
``sweep()`` (one bounded pass) and optionally ``on_events(records)``.
Optional packages it needs go in ``requires`` (imported inside functions,
never at module top): when one cannot be imported, the walker runs idle and
``ctl status`` says why (``set_idle``), instead of crash-looping to FATAL.
"""

from __future__ import annotations

import logging
import os

import apsw
import zmq

from memtree import protocol
from memtree.actors.base import Actor
from memtree.errors import CallTimeout, Unavailable
from memtree.paths import socket_path
from memtree.runtime import optional, priority
from memtree.runtime.client import Caller
from memtree.store import db as store_db

log = logging.getLogger(__name__)


# A walker's reads are passes over rows it then lets go of (the OS caches the file
# anyway): its own page cache stays small, not SQLite's 2 MiB default, which
# each walker filled as the store grew.
READ_CACHE_KIB = 512


class LazyReader:
    """A read-only connection, opened once the store and its schema exist."""

    def __init__(self, path: str):
        self.path = path
        self.conn: apsw.Connection | None = None

    def get(self) -> apsw.Connection | None:
        if self.conn is None:
            if not os.path.exists(self.path):
                return None
            try:
                conn = store_db.open_read(self.path, cache_kib=READ_CACHE_KIB)
            except apsw.Error:
                return None
            if not store_db.schema_ready(conn):
                conn.close()
                return None
            self.conn = conn
        return self.conn

    def reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def drain_events(sock: zmq.Socket, limit: int = 10000) -> list:
    """Every queued event record (bad frames are counted in the log and dropped)."""
    out = []
    while len(out) < limit:
        try:
            frames = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            break
        try:
            env = protocol.decode(frames[-1])
        except protocol.ProtocolError as e:
            log.warning("dropped a bad event frame: %s", e.message)
            continue
        out.append(env.body)
    return out


class Walker(Actor):
    topics: tuple[str, ...] = ()
    interval_ms_key: str | None = None  # a key of config.walkers
    requires: tuple[str, ...] = ()  # optional packages; one missing: no sweeps, idle with the reason

    def __init__(self, ctx):
        super().__init__(ctx)
        if self.interval_ms_key:
            self.tick_interval_s = getattr(self.config.walkers, self.interval_ms_key) / 1000
        self.reader = LazyReader(self.paths.db)
        self.writer: Caller | None = None
        self._writer_away = False
        self.idle_reason = ""
        self._missing = ""  # a package from ``requires`` that cannot be imported: idle for good

    def set_idle(self, reason: str) -> None:
        """Idle (or, given "", not) for lack of something optional: shown as
        ``idle=<reason>`` in ``memtree ctl status`` and logged once."""
        if reason and reason != self.idle_reason:
            log.warning("%s: idle: %s", self.ctx.name, reason)
        self.idle_reason = reason
        if reason:
            self.info = {"idle": reason}

    def on_start(self) -> None:
        # Background work: the writer, the front and the hook get the CPU and the disk first
        # (threads started from here on inherit it; the heartbeat pulse started before).
        lowered = priority.lower_this_thread(self.config)
        if lowered:
            log.info("%s: background priority %s", self.ctx.name, lowered)
        sup = self.config.supervisor
        # A call must not outlast the heartbeats the supervisor waits for.
        timeout = min(self.config.writer.callTimeoutMs, sup.heartbeatMs * max(1, sup.missedHeartbeats - 1))
        self.writer = Caller(
            self.paths.endpoint(protocol.SOCK_WRITE), src=self.ctx.name, timeout_ms=timeout, ctx=self.zctx
        )
        if self.topics:
            sub = self.socket(zmq.SUB)
            for topic in self.topics:
                sub.setsockopt(zmq.SUBSCRIBE, topic.encode())
            sub.connect(self.paths.endpoint(protocol.SOCK_EVENTS))
            self.add_reader(sub, lambda s: self.on_events(drain_events(s)))
        self._missing = optional.missing(*self.requires) or ""
        if self._missing:
            self.set_idle(self._missing)
            return
        self.sweep()

    def on_tick(self) -> None:
        if not self._missing:
            self.sweep()

    def on_stop(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader.reset()

    def on_events(self, records: list) -> None:
        """Default: any event we subscribed to triggers a sweep."""
        if records and not self._missing:
            self.sweep()

    def sweep(self) -> None:
        raise NotImplementedError

    def db(self) -> apsw.Connection | None:
        return self.reader.get()

    def call_writer(self, rec):
        """The writer's result, or None while it is down or slow (retry next tick).
        An error reply raises its MemtreeError."""
        try:
            if not os.path.exists(socket_path(self.writer.endpoint)):
                raise Unavailable("the writer's socket does not exist")
            result = self.writer.call(rec)
        except (Unavailable, CallTimeout) as e:
            if not self._writer_away:
                log.warning("%s: writer unavailable (%s); will retry", self.ctx.name, e.message)
                self._writer_away = True
            return None
        if self._writer_away:
            log.info("%s: writer is back", self.ctx.name)
            self._writer_away = False
        return result
