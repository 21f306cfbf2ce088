"""``memtree serve``: spawn the actors, watch them, serve the control socket.

Order matters: the front is spawned before anything heavy is imported
(Claude Code waits only about 2 s for the MCP initialize), the writer right
behind it (a short session's hooks need it), then zmq, the heartbeat PULL
and control ROUTER, and the walkers once the front is READY. The
supervisor never writes to stdout (it belongs to the front: the MCP wire).
"""

from __future__ import annotations

import logging
import math
import os
import select
import signal
import subprocess
import sys
import time

from memtree.supervisor import control
from memtree.supervisor.child import Child, Timing
from memtree.supervisor.spec import ChildSpec, child_specs
from memtree.supervisor.states import ALIVE, DOWN, State

log = logging.getLogger("memtree.supervisor")
READY_LINE = "supervisor: READY,"  # then "<n> actors in <s>s"
# The loop sleeps until the next timer, a heartbeat, a control call, a child's
# exit (its pidfd) or a signal (the wakeup pipe), and never longer than
# IDLE_S: that bounds the check of stdin. Without pidfds, exits are polled
# every POLL_EXITS_S. A fixed 50 ms poll was ~0.4 % of a core idle.
IDLE_S = 1.0
POLL_EXITS_S = 0.05
# Once every child is up and no operation waits on one, heartbeats are not
# polled for: they queue in the PULL socket and each wakeup drains them first
# (a timer, a control call, an exit or IDLE_S). Seven actors beating once a
# second woke the supervisor seven times a second, ~0.3 ms each; a beat read
# up to IDLE_S late only makes its child look fresher, never hung.
# The walkers start once the front is READY (it has answered the client, or
# its SDK import is done) or after this long: on 2 cores their imports would
# otherwise slow the front's initialize answer, and Claude Code waits only
# about 2 s for it. Not 2 s: on a loaded box the front was not READY by then,
# six walkers started importing, and initialize took 6-10 s instead of ~3 s.
# Walkers starting later costs nothing a session sees.
FRONT_HEAD_START_S = 10.0
# ...but the writer starts beside the front: hooks of a short session must find
# it up (or have their spool drained) before the session is over.
EARLY_WITH_FRONT = "writer"


def _pdeathsig():
    """A preexec hook: the child gets SIGTERM if the supervisor dies, even by SIGKILL."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    parent = os.getpid()

    def arm() -> None:
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)

    return arm


class Launcher:
    """Spawns one child: env from ActorContext, logs to <store>/logs/<name>.log."""

    def __init__(self, paths, config, hb_endpoint: str, front_env: dict | None = None):
        self.paths, self.config, self.hb_endpoint = paths, config, hb_endpoint
        self.front_env = front_env or {}  # e.g. the tools `serve --tools` chose
        self.preexec = _pdeathsig() if sys.platform.startswith("linux") else None

    def __call__(self, spec: ChildSpec) -> subprocess.Popen:
        from memtree.runtime.actorenv import ActorContext
        from memtree.runtime.pythonpath import child_env

        # PYTHONPATH without the project's entries: -P alone leaves them on sys.path.
        env = child_env(dict(os.environ), self.paths.project_root)
        env.update(ActorContext(spec.name, self.paths, self.config, self.hb_endpoint).child_env())
        fd = os.open(self.paths.log_file(spec.name), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            if spec.is_front:  # stdin/stdout are the MCP wire: inherited
                env.update(self.front_env)
                io = {"stdin": None, "stdout": None, "stderr": fd}
            else:
                io = {"stdin": subprocess.DEVNULL, "stdout": fd, "stderr": fd}
            # -P: `-m` would put the cwd (the user's project) first on sys.path, and a
            # project with its own email/, zmq.py or pydantic/ would shadow ours.
            return subprocess.Popen(
                [sys.executable, "-P", "-m", spec.module],
                env=env,
                cwd=self.paths.project_root,
                close_fds=True,
                preexec_fn=self.preexec,
                **io,
            )
        finally:
            os.close(fd)


def _stdin_closed(poller: select.poll) -> bool:
    """Claude Code went away: HUP/RDHUP on fd 0, seen without reading (the front owns the bytes)."""
    for _, ev in poller.poll(0):
        if ev & (select.POLLHUP | getattr(select, "POLLRDHUP", 0) | select.POLLERR | select.POLLNVAL):
            return True
    return False


class Supervisor:
    def __init__(self, paths, config, specs: list[ChildSpec], launcher: Launcher, watch_stdin: bool):
        self.paths, self.config = paths, config
        self.timing = Timing(config.supervisor)
        self.children = [Child(spec, launcher, self.timing) for spec in specs]
        self.op_timeout_s = config.supervisor.shutdownTimeoutS + self.timing.start_timeout + 5
        self.front = next((c for c in self.children if c.spec.is_front), None)
        self.stdin_poll = None
        if watch_stdin:
            self.stdin_poll = select.poll()
            self.stdin_poll.register(0, getattr(select, "POLLRDHUP", 0))
        self.shutdown_reason = ""
        self.sockets = []
        self.started_at = time.monotonic()
        self.ready = False  # every child has been RUNNING (or STANDBY) once: logged as READY_LINE

    def child(self, name: str) -> Child:
        from memtree.ops.ctl import resolve_name
        from memtree.protocol import ErrorCode, ProtocolError

        names = [c.name for c in self.children]
        resolved = resolve_name(name, names)
        if resolved is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"unknown actor {name!r}; actors: {', '.join(names)}")
        return next(c for c in self.children if c.name == resolved)

    def request_shutdown(self, reason: str) -> None:
        if not self.shutdown_reason:
            self.shutdown_reason = reason
            log.info("supervisor: shutting down (%s)", reason)

    # -- sockets ----------------------------------------------------------------
    def bind(self) -> None:
        import zmq

        from memtree import protocol

        self.zmq = zmq
        self.zctx = zmq.Context.instance()
        pid = os.getpid()
        self.hb = self._bind(zmq.PULL, protocol.sup_heartbeat_sock(pid))
        self.ctl = self._bind(zmq.ROUTER, protocol.sup_control_sock(pid))
        self.poller = zmq.Poller()
        self.poller.register(self.hb, zmq.POLLIN)
        self._hb_polled = True
        self.poller.register(self.ctl, zmq.POLLIN)
        # A signal's C handler writes here, so a SIGTERM ends the poll at once
        # (pyzmq retries an interrupted poll until its timeout).
        from memtree.runtime.wake import WakePipe

        self.wake = WakePipe()
        signal.set_wakeup_fd(self.wake.w, warn_on_full_buffer=False)
        self.poller.register(self.wake.r, zmq.POLLIN)
        self.exit_fds: dict[int, subprocess.Popen] = {}  # pidfd -> the process it watches
        self.pidfds = hasattr(os, "pidfd_open")

    def _bind(self, kind: int, name: str):
        from memtree.paths import endpoint, makedirs_private, socket_path

        makedirs_private(self.paths.run_dir)  # the last supervisor out removes an empty one
        sock = self.zctx.socket(kind)
        sock.setsockopt(self.zmq.LINGER, 0)
        ep = endpoint(self.paths.run_dir, name)
        sock.bind(ep)
        os.chmod(socket_path(ep), 0o600)
        self.sockets.append((sock, socket_path(ep)))
        return sock

    def unlink_socket_files(self) -> None:
        """The files only: open connections live on (a reply just queued still goes out)."""
        for _, path in self.sockets:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def _watch_exits(self) -> None:
        """One pidfd per live child in the poller (readable once it exits); a
        reaped or replaced process's fd is closed."""
        live = {c.proc for c in self.children if c.proc is not None and c.state in ALIVE}
        for fd, proc in list(self.exit_fds.items()):
            if proc not in live:
                self.poller.unregister(fd)
                os.close(fd)
                del self.exit_fds[fd]
        watched = set(self.exit_fds.values())
        for proc in live - watched:
            try:
                fd = os.pidfd_open(proc.pid)
            except OSError:  # an old kernel, or already reaped: exits are polled instead
                self.pidfds = False
                continue
            self.exit_fds[fd] = proc
            self.poller.register(fd, self.zmq.POLLIN)

    def _sleep_s(self, now: float, others_started: bool) -> float:
        due = min((c.next_due() for c in self.children), default=float("inf"))
        if not others_started and self.front is not None:
            due = min(due, self.front.started_at + FRONT_HEAD_START_S)
        longest = IDLE_S if self.pidfds else POLL_EXITS_S
        return min(max(0.0, due - now), longest)

    def close(self) -> None:
        for fd in getattr(self, "exit_fds", {}):
            os.close(fd)
        if hasattr(self, "wake"):
            signal.set_wakeup_fd(-1)
            self.wake.close()
        for sock, _ in self.sockets:
            sock.close(linger=0)
        self.unlink_socket_files()
        self.sockets = []
        self._remove_runtime_dir()

    def _remove_runtime_dir(self) -> None:
        """A per-user runtime dir under /tmp (a store too deep for socket paths)
        goes once empty, and the per-user parent with it: they must not pile up.
        rmdir fails on a non-empty dir, so another live session keeps its files."""
        run_dir = self.paths.run_dir
        if run_dir.startswith(self.paths.store_dir + os.sep):
            return  # <store>/run stays with its store
        for d in (run_dir, os.path.dirname(run_dir)):
            try:
                os.rmdir(d)
            except OSError:
                return

    def _drain_heartbeats(self, now: float) -> None:
        from memtree import protocol

        while True:
            try:
                frame = self.hb.recv(self.zmq.NOBLOCK)
            except self.zmq.Again:
                return
            try:
                hb = protocol.decode(frame).body
            except protocol.ProtocolError as e:
                log.warning("supervisor: bad heartbeat frame dropped: %s", e.message)
                continue
            if not isinstance(hb, protocol.Heartbeat):
                continue
            for c in self.children:
                if c.name == hb.name and c.pid == hb.pid:
                    c.on_heartbeat(hb.state, hb.backlog, hb.info, now)

    def _serve_control(self, now: float) -> None:
        from memtree import protocol

        while True:
            try:
                ident, frame = self.ctl.recv_multipart(self.zmq.NOBLOCK)[:2]
            except self.zmq.Again:
                return
            except ValueError:
                continue  # a frame without identity+payload
            self._handle_call(ident, frame, now, protocol)

    def _handle_call(self, ident: bytes, frame: bytes, now: float, protocol) -> None:
        req_id = ""

        def reply(ok: bool, payload) -> None:
            out = protocol.encode_ok(req_id, payload) if ok else protocol.encode_error(req_id, *payload)
            try:
                self.ctl.send_multipart([ident, out], self.zmq.NOBLOCK)
            except self.zmq.ZMQError:
                pass  # the operator's client left

        try:
            env = protocol.decode(frame)
            req_id = env.id
            handler = control.COMMANDS.get(env.type)
            if handler is None or env.kind != "call":
                raise protocol.ProtocolError(protocol.ErrorCode.UNKNOWN_TYPE, f"not a control call: {env.type}")
            result = handler(self, env.body, reply, now)
        except protocol.ProtocolError as e:
            req_id = req_id or getattr(e, "req_id", "")
            reply(False, (e.code, e.message))
            return
        except Exception:  # noqa: BLE001 - a bug in a command must not take the supervisor down
            log.exception("supervisor: control command failed")
            reply(False, (protocol.ErrorCode.INTERNAL, "internal error; see supervisor.log"))
            return
        if result is not control.DEFERRED:
            reply(True, result)

    # -- the loop ---------------------------------------------------------------
    def start_children(self, now: float, early: bool = False) -> None:
        """``early``: the front, then the writer; else every child not started yet."""
        for c in self.children:
            if c.proc is None and (not early or c.spec.is_front or c.name == EARLY_WITH_FRONT):
                c.start(now)

    def _others_may_start(self, now: float) -> bool:
        f = self.front
        return f is None or f.state is not State.STARTING or now - f.started_at >= FRONT_HEAD_START_S

    def run(self) -> int:
        others_started = False
        while not self.shutdown_reason:
            if not others_started and self._others_may_start(time.monotonic()):
                self.start_children(time.monotonic())
                others_started = True
                self._sweep_runtime_dirs()
            self._watch_exits()
            # Rounded up: a timer 0.4 ms away must not become a 0 ms poll that spins until it passes.
            timeout_ms = math.ceil(self._sleep_s(time.monotonic(), others_started) * 1000)
            ready = self.poller.poll(timeout_ms)
            self._drain_heartbeats(time.monotonic())  # before anything judges a child by its last beat
            for sock, _ in ready:
                if sock is self.ctl:
                    self._serve_control(time.monotonic())
                elif sock == self.wake.r:
                    self.wake.drain()
            if self.shutdown_reason:
                break  # before reaping: children exiting on a group SIGINT are not crashes
            now = time.monotonic()
            for c in self.children:
                c.tick(now)
                control.advance(c, now)
            if not self.ready and others_started:
                self._note_ready(now)
            self._poll_heartbeats(not self._settled())
            if self.front is not None and self.front.state in DOWN:
                self.request_shutdown(f"{self.front.name} exited: the session is over")
            elif self.stdin_poll is not None and _stdin_closed(self.stdin_poll):
                self.request_shutdown("stdin closed: Claude Code exited")
        self.stop_all()
        return 0

    def _settled(self) -> bool:
        """Start-up is over, no child is starting and no operation waits on one."""
        return self.ready and all(c.state is not State.STARTING and c.op is None for c in self.children)

    def _poll_heartbeats(self, on: bool) -> None:
        if on != self._hb_polled:
            if on:
                self.poller.register(self.hb, self.zmq.POLLIN)
            else:
                self.poller.unregister(self.hb)
            self._hb_polled = on

    def _note_ready(self, now: float) -> None:
        """One stable log line once every child first settled: start-up is over
        (tests start their measurements on it, not after a sleep)."""
        if all(c.state in (State.RUNNING, State.STANDBY) for c in self.children):
            self.ready = True
            log.info("%s %d actors in %.1fs", READY_LINE, len(self.children), now - self.started_at)

    def _sweep_runtime_dirs(self) -> None:
        """Dead sessions' runtime dirs under /tmp, once per start, after the
        children are spawned (not on the path to the front's READY)."""
        from memtree.runtime import sweep

        t0 = time.monotonic()
        try:
            removed = sweep.sweep_for(self.paths)
        except OSError as e:
            log.warning("supervisor: runtime dir sweep failed: %s", e)
            return
        if removed:
            log.info("supervisor: removed %d stale runtime dirs in %.2fs", removed, time.monotonic() - t0)

    def stop_all(self) -> None:
        """Our own socket files first: nothing is served while stopping, and a
        SIGKILL cutting the shutdown short must not leave them behind. Then reverse
        start order, in waves signalled at once (the walkers, then the writer
        and the front); each child: SIGTERM, its shutdown timeout, SIGKILL.
        Claude Code gives a server about 0.5 s from SIGINT to SIGKILL; one
        child after the other took over a second on 2 cores."""
        self.unlink_socket_files()
        for c in self.children:
            control.abandon(c, "the supervisor is shutting down")
        walkers = [c for c in reversed(self.children) if not c.spec.is_front and c.name != EARLY_WITH_FRONT]
        for wave in (walkers, [c for c in reversed(self.children) if c not in walkers]):
            for c in wave:
                c.stop(time.monotonic())
            while any(c.state in ALIVE for c in wave):
                for c in wave:
                    c.tick(time.monotonic())
                time.sleep(0.01)

    def kill_all(self) -> None:
        """The last resort on an unexpected error: nothing may outlive us."""
        for c in self.children:
            if c.proc is not None and c.proc.poll() is None:
                c.proc.kill()
                c.proc.wait()


def _configure_logging(paths) -> None:
    from memtree.runtime.logs import FORMAT

    handler = logging.FileHandler(paths.log_file("supervisor"), encoding="utf-8")
    os.chmod(paths.log_file("supervisor"), 0o600)
    handler.setFormatter(logging.Formatter(FORMAT))
    root = logging.getLogger()
    root.handlers.clear()
    root.addHandler(handler)
    root.setLevel(os.environ.get("MEMTREE_LOG_LEVEL", "INFO"))


def serve(project: str | None, front: bool, front_env: dict | None = None) -> int:
    from memtree.capture import settings
    from memtree.config import ConfigError, load_config
    from memtree.paths import memtree_home, paths_for_cwd, prepare_store, start_dir

    if project is not None and not os.path.isdir(project):
        print(f"memtree serve: --project {project}: not a directory", file=sys.stderr)
        return 2
    paths = paths_for_cwd(start_dir(project))
    prepare_store(paths)
    _configure_logging(paths)
    try:
        _texts, config_sig = settings.config_texts(paths.project_root, memtree_home())
        config = load_config(paths.project_root, memtree_home())
        specs = child_specs(config, front)
        if front:
            from memtree.front import tool_table

            tool_table.check_modules()
    except ConfigError as e:
        log.error("supervisor: %s", e.message)
        print(f"memtree serve: {e.message}", file=sys.stderr)
        return 2
    settings.mark_ok(paths, config_sig)  # the hook's fast path may trust these files now
    from memtree.protocol import sup_heartbeat_sock

    hb_endpoint = paths.endpoint(sup_heartbeat_sock(os.getpid()))
    sup = Supervisor(paths, config, specs, Launcher(paths, config, hb_endpoint, front_env), watch_stdin=front)
    log.info("supervisor: pid=%d project=%s store=%s", os.getpid(), paths.project_root, paths.store_dir)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _f: sup.request_shutdown(signal.Signals(signum).name))
    try:
        sup.start_children(time.monotonic(), early=True)  # before zmq: Claude Code is waiting
        sup.bind()
        return sup.run()
    except Exception:
        log.exception("supervisor: crashed")
        print("memtree serve: internal error; see " + paths.log_file("supervisor"), file=sys.stderr)
        return 1
    finally:
        sup.kill_all()
        sup.close()
        log.info("supervisor: exited")
