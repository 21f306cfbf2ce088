"""The actor run loop shared by the writer and every walker.

Lifecycle (pykka's): take the singleton lock (heartbeating as ``standby``
while another process holds it), ``on_start()``, then the first ``running``
heartbeat, which the supervisor takes as READY. Then: poll the actor's
sockets (until the next tick, if it has a cadence) -> dispatch ->
``on_tick()`` when due -> stop on SIGTERM/SIGINT. ``on_stop()`` last.

Heartbeats after the first come from a pulse thread, once a period, with
the state the loop published after its last piece of work; while one
handler or tick is running (a 7 MB PutFile: redaction, FTS, commit) the beat
carries ``busy_s``, how long the loop has been inside it. So an idle loop
sleeps in its poll and wakes for nothing but work and ticks (idle CPU: every
wakeup of a Python process costs ~0.3 ms here). A stopped or dead process
sends nothing (the pulse stops with it) and is killed after the missed
beats; a loop stuck in one handler is killed when ``busy_s`` passes
``supervisor.busyLimitS`` (supervisor/child.py).

Errors: a MemtreeError inside a call handler becomes an error reply and the
actor lives (the subclass decides); anything unexpected is logged with its
traceback and the process exits 1 so the supervisor restarts it.
"""

from __future__ import annotations

import copy
import fcntl
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

import zmq

from memtree import protocol
from memtree.paths import makedirs_private, socket_path
from memtree.runtime.actorenv import ActorContext
from memtree.runtime.heap import Trimmer, settle
from memtree.runtime.logs import configure_logging
from memtree.runtime.wake import WakePipe

log = logging.getLogger(__name__)


class SingletonLock:
    """An exclusive flock on ``<run_dir>/<name>.lock``; the kernel drops it when we die.

    A holder that stops cleanly removes the file while still holding it, so a
    waiter may win the lock on a file no longer at the path: it then reopens
    the path and tries again (the usual flock-and-unlink protocol)."""

    def __init__(self, path: str):
        self.path = path
        self.fd = self._open()

    def _open(self) -> int:
        makedirs_private(os.path.dirname(self.path))  # the last supervisor out removes an empty run dir
        return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)

    def try_acquire(self) -> bool:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            current = os.stat(self.path)
        except FileNotFoundError:
            current = None
        held = os.fstat(self.fd)
        if current is None or (current.st_dev, current.st_ino) != (held.st_dev, held.st_ino):
            os.close(self.fd)  # we won a removed file: the lock is the one at the path
            self.fd = self._open()
            return False
        os.ftruncate(self.fd, 0)
        # Who holds it, for a standby to name (our parent is the supervisor that spawned us).
        os.write(self.fd, f"{os.getpid()} {os.getppid()}\n".encode())
        return True

    def holder(self) -> str:
        """Who holds the lock, as a standby says it: the holder's pid and its supervisor's."""
        try:
            with open(self.path, encoding="ascii") as f:
                pid, sup = (f.read(64).split() + ["", ""])[:2]
        except (OSError, ValueError):
            pid = sup = ""
        if not pid.isdigit():  # between the holder's truncate and write, or a file of an older version
            return "another process"
        return f"pid {pid}" + (f" (supervisor {sup})" if sup.isdigit() else "")

    def release(self) -> None:
        """A clean stop: remove the file while holding it, then let go."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.close()

    def close(self) -> None:
        os.close(self.fd)

    def abandon(self) -> None:
        """A standby that stops: a file it (re)opened after the holder removed
        it must not outlive it; a live holder keeps the lock and its file."""
        for _ in range(2):  # the second try takes the file a first one reopened
            if self.try_acquire():
                self.release()
                return
        self.close()


class Actor:
    name = "actor"
    singleton = True
    tick_interval_s: float | None = None  # None: no periodic on_tick

    def __init__(self, ctx: ActorContext):
        self.ctx = ctx
        self.config = ctx.config
        self.paths = ctx.paths
        self.zctx = zmq.Context.instance()
        self.poller = zmq.Poller()
        self._readers: dict[zmq.Socket, Callable[[zmq.Socket], None]] = {}
        self._bound: list[tuple[zmq.Socket, str]] = []  # (socket, ipc file) to remove on a clean stop
        self._stopping = False
        self._next_tick = float("inf")
        self.backlog = 0  # reported in heartbeats; subclasses keep it current
        self.info: dict = {}  # extra status for `memtree ctl status`
        self._hb = None
        self._hb_lock = threading.Lock()  # a zmq socket is not thread-safe: the loop and the pulse share it
        self._busy_since: float | None = None  # the loop entered a handler or tick at this monotonic time
        self.heap = Trimmer()  # freed heap back to the system after work (memtree/runtime/heap.py)
        self._last_beat = 0.0
        self._last_sent: tuple | None = None  # (state, backlog, info) the loop published, for the pulse
        self._dirty = False  # work was done since the loop last published its state
        # A signal writes a byte here (signal.set_wakeup_fd in run_actor) and the loop polls it, so
        # SIGTERM ends a poll at once: Claude Code allows a server ~0.5 s from SIGINT to SIGKILL.
        self._wake = WakePipe()
        self.poller.register(self._wake.r, zmq.POLLIN)

    # -- hooks for subclasses ---------------------------------------------------
    def on_start(self) -> None: ...

    def on_tick(self) -> None: ...

    def on_stop(self) -> None: ...

    # -- helpers ----------------------------------------------------------------
    def socket(self, kind: int, **opts) -> zmq.Socket:
        sock = self.zctx.socket(kind)
        sock.setsockopt(zmq.LINGER, opts.pop("linger", 0))
        for k, v in opts.items():
            sock.setsockopt(getattr(zmq, k.upper()), v)
        return sock

    def bind(self, kind: int, name: str, **opts) -> zmq.Socket:
        """A socket bound at ``paths.endpoint(name)``, 0600. Singletons only: a
        file left by a dead holder is ours to replace (we hold the lock), and
        ours to remove when we stop."""
        sock = self.socket(kind, **opts)
        ep = self.paths.endpoint(name)
        path = socket_path(ep)
        makedirs_private(os.path.dirname(path))
        if os.path.exists(path):
            os.unlink(path)
        sock.bind(ep)
        os.chmod(path, 0o600)
        self._bound.append((sock, path))
        return sock

    def _remove_bound(self) -> None:
        for sock, path in self._bound:
            sock.close(linger=0)
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self._bound = []

    def add_reader(self, sock: zmq.Socket, handler: Callable[[zmq.Socket], None]) -> None:
        self._readers[sock] = handler
        self.poller.register(sock, zmq.POLLIN)

    def stop(self) -> None:
        self._stopping = True
        self._wake.wake()  # the loop's poll returns now, whoever called stop

    def tick_soon(self, delay_s: float) -> None:
        """Run ``on_tick`` within ``delay_s`` (sooner if already due): lets an
        event trigger work after a short settle, batching a burst."""
        self._next_tick = min(self._next_tick, time.monotonic() + delay_s)

    @property
    def stopping(self) -> bool:
        return self._stopping

    # -- the loop ---------------------------------------------------------------
    def _snapshot(self, state: str) -> None:
        """Snapshot the state for the pulse thread, which must not read dicts the loop mutates."""
        self._last_sent = (state, self.backlog, copy.deepcopy(self.info))
        self._dirty = False

    def _heartbeat(self, state: str) -> None:
        """Publish and beat now (the first beat, or from inside a long piece of work)."""
        if self._hb is None:
            return
        self._snapshot(state)
        self._send_beat(*self._last_sent)

    def _send_beat(self, state: str, backlog: int, info: dict) -> None:
        msg = protocol.Heartbeat(name=self.ctx.name, pid=os.getpid(), state=state, backlog=backlog, info=info)
        frame = protocol.encode_cast(msg, src=self.ctx.name)
        with self._hb_lock:
            self._last_beat = time.monotonic()
            try:
                self._hb.send(frame, zmq.NOBLOCK)
            except zmq.Again:
                pass  # supervisor gone or slow; it will notice by itself
            except zmq.ZMQError:
                pass  # closed while stopping

    def _pulse(self, period: float, done: threading.Event) -> None:
        """A beat once a period after the last one, with ``busy_s`` while the loop is inside a handler."""
        while True:
            last = self._last_sent
            wait_s = period if last is None else max(0.0, self._last_beat + period - time.monotonic())
            if done.wait(wait_s):
                return
            if last is None or time.monotonic() - self._last_beat < period:
                continue  # not running yet, or the loop beat meanwhile
            state, backlog, info = self._last_sent
            since = self._busy_since
            if since is not None:
                info = {**info, "busy_s": round(time.monotonic() - since, 1)}
            self._send_beat(state, backlog, info)

    def _dispatch(self, work: Callable[[], None]) -> None:
        self._busy_since = time.monotonic()
        try:
            work()
        finally:
            self._busy_since = None
            self._dirty = True
            self.heap.after_work()

    def _wait_for_lock(self) -> SingletonLock | None:
        lock = SingletonLock(self.paths.lock_file(self.name))
        period = self.config.supervisor.heartbeatMs / 1000
        announced = False
        while not self._stopping:
            if lock.try_acquire():
                return lock
            # A standby says what it waits for (`ctl status` NOTE), not the counters of a role it lacks.
            waiting = f"the {self.name} lock held by {lock.holder()}"
            if not announced:
                log.info("%s: standby, waiting for %s (%s)", self.ctx.name, waiting, lock.path)
                announced = True
            if self._hb is not None:
                self._send_beat("standby", 0, {"waiting": waiting})
            deadline = time.monotonic() + period
            while time.monotonic() < deadline and not self._stopping:
                time.sleep(min(0.05, period))
                if lock.try_acquire():
                    return lock
        lock.abandon()
        return None

    def run(self) -> int:
        self._hb = None
        if self.ctx.hb_endpoint:
            self._hb = self.socket(zmq.PUSH, sndhwm=16)
            self._hb.connect(self.ctx.hb_endpoint)
        lock = self._wait_for_lock() if self.singleton else None
        if self._stopping:
            if lock is not None:  # won just as SIGTERM came: its file must not outlive us
                lock.release()
            return 0
        hb_period = self.config.supervisor.heartbeatMs / 1000
        pulse_done = threading.Event()
        pulse = None
        if self._hb is not None:
            pulse = threading.Thread(target=self._pulse, args=(hb_period, pulse_done), name="pulse", daemon=True)
            pulse.start()
        try:
            return self._run_started(lock)
        finally:
            pulse_done.set()
            if pulse is not None:
                pulse.join(timeout=hb_period)

    def _run_started(self, lock: SingletonLock | None) -> int:
        self.on_start()  # not pulsed: READY waits for it (startTimeoutS bounds it)
        settle()  # what start-up made lives as long as we do: out of the collector's walks
        log.info("%s: running pid=%d", self.ctx.name, os.getpid())
        self._heartbeat("running")  # READY; the pulse beats from here on
        interval = self.tick_interval_s if self.tick_interval_s is not None else float("inf")
        # Sooner if on_start asked for it (tick_soon: a walker that found a backlog at start).
        self._next_tick = min(self._next_tick, time.monotonic() + interval)
        try:
            while not self._stopping:
                now = time.monotonic()
                if now >= self._next_tick:
                    # Set before the tick, so on_tick may ask for the next one sooner (tick_soon).
                    self._next_tick = now + interval
                    self._dispatch(self.on_tick)
                if self._dirty:
                    self._snapshot("running")
                wake = self._next_tick
                # Rounded up: a deadline 0.4 ms away must not become a 0 ms
                # poll that spins until it passes. No cap: stop() wakes the poll.
                timeout_ms = None if wake == math.inf else max(0, math.ceil((wake - time.monotonic()) * 1000))
                # Never an empty poll (it would return at once): the wake pipe is always in it.
                for sock, _ in self.poller.poll(timeout_ms):
                    if sock == self._wake.r:
                        self._wake.drain()
                        continue
                    self._dispatch(lambda: self._readers[sock](sock))
                    if self._stopping:
                        break
        finally:
            self.on_stop()
            # Socket files first, then the lock: a standby takes over only after both.
            self._remove_bound()
            if lock is not None:
                lock.release()
        log.info("%s: stopped", self.ctx.name)
        return 0


def run_actor(cls: type[Actor], argv: list[str] | None = None) -> int:
    ctx = ActorContext.from_env(cls.name)
    configure_logging(ctx.name)
    actor = cls(ctx)
    signal.set_wakeup_fd(actor._wake.w, warn_on_full_buffer=False)
    signal.signal(signal.SIGTERM, lambda *_: actor.stop())
    signal.signal(signal.SIGINT, lambda *_: actor.stop())
    try:
        code = actor.run()
    except Exception:
        log.critical("%s: crashed", ctx.name, exc_info=True)
        code = 1
    finally:
        zmq.Context.instance().destroy(linger=0)
    return code


def main_for(cls: type[Actor]) -> None:
    sys.exit(run_actor(cls, sys.argv[1:]))
