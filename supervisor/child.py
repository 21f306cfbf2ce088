"""One child's state machine: spawn, READY, watchdog, exit, backoff, FATAL.

Every transition goes through ``change_state()``, which logs one stable,
greppable line (``walker.filter: RUNNING pid=123``). Time is passed in
(``now`` from time.monotonic()) so the rules read as plain arithmetic.
psutil is imported lazily: this module is loaded before the front is spawned.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Callable

from memtree.runtime import priority
from memtree.runtime.cpu import CpuRate, actor_cpu_seconds, actor_rss
from memtree.supervisor.policy import Backoff, RestartWindow
from memtree.supervisor.spec import PERMANENT, TRANSIENT, ChildSpec
from memtree.supervisor.states import ALIVE, State

log = logging.getLogger("memtree.supervisor")


class Timing:
    """The supervisor section of the config, in seconds."""

    def __init__(self, sup):
        self.heartbeat = sup.heartbeatMs / 1000
        self.missed = sup.missedHeartbeats
        self.max_restarts = sup.maxRestarts
        self.period = sup.restartPeriodS
        self.backoff_initial = sup.backoffInitialMs / 1000
        self.backoff_max = sup.backoffMaxMs / 1000
        self.stable_after = sup.stableAfterS
        self.start_timeout = sup.startTimeoutS
        self.busy_limit = sup.busyLimitS

    @property
    def hung_after(self) -> float:
        return self.missed * self.heartbeat


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        return f"signal={-returncode}"
    return f"code={returncode}"


class Child:
    def __init__(self, spec: ChildSpec, launch: Callable[[ChildSpec], subprocess.Popen], timing: Timing):
        self.spec = spec
        self.name = spec.name
        self.launch = launch
        self.timing = timing
        self.window = RestartWindow(timing.max_restarts, timing.period)
        self.backoff = Backoff(timing.backoff_initial, timing.backoff_max, timing.stable_after)
        self.state = State.STOPPED
        self.proc: subprocess.Popen | None = None
        self.restarts = 0  # crash restarts since the supervisor started
        self.started_at = 0.0
        self.running_since: float | None = None
        self.last_hb: float | None = None
        self.backlog = 0
        self.info: dict = {}
        self.restart_at = 0.0  # BACKOFF: when to start again
        self.kill_at = 0.0  # STOPPING: when SIGTERM turns into SIGKILL
        self.kill_reason = ""  # why the watchdog killed it (logged with the exit)
        self.op = None  # the operator command in progress (control.py), one at a time
        self._ps = None  # psutil.Process, for rss/cpu in status
        self._cpu = CpuRate()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.state in ALIVE else None

    def change_state(self, new: State, detail: str = "") -> None:
        old, self.state = self.state, new
        if detail:
            log.info("%s: %s", self.name, detail)
        elif self.proc is not None and new in ALIVE:
            log.info("%s: %s pid=%d", self.name, new.value, self.proc.pid)
        else:
            log.info("%s: %s", self.name, new.value)
        log.debug("%s: %s -> %s", self.name, old.value, new.value)

    # -- commands ---------------------------------------------------------------
    def start(self, now: float) -> None:
        self.proc = self.launch(self.spec)
        self._ps, self._cpu = None, CpuRate()
        self.started_at = now
        self.running_since = self.last_hb = None
        self.backlog, self.info, self.kill_reason = 0, {}, ""
        self.change_state(State.STARTING)

    def stop(self, now: float) -> None:
        """SIGTERM now, SIGKILL after the shutdown timeout; a down child is simply STOPPED."""
        if self.state in ALIVE and self.state is not State.STOPPING:
            self._signal(signal.SIGTERM)
            self._signal(signal.SIGCONT)  # a stopped (SIGSTOP) process must run to see SIGTERM
            self.kill_at = now + self.spec.shutdown_timeout
            self.change_state(State.STOPPING, f"STOPPING pid={self.proc.pid} (SIGTERM)")
        elif self.state is not State.STOPPING and self.state is not State.STOPPED:
            self.change_state(State.STOPPED)

    def clear_failures(self) -> None:
        """An operator start/restart: not a crash; FATAL is forgotten."""
        self.window.reset()
        self.backoff.reset()

    def kill(self, reason: str) -> None:
        self.kill_reason = reason
        log.warning("%s: %s, SIGKILL pid=%d", self.name, reason, self.proc.pid)
        self._signal(signal.SIGKILL)

    def _signal(self, sig: int) -> None:
        try:
            os.kill(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    # -- events -----------------------------------------------------------------
    def on_heartbeat(self, state: str, backlog: int, info: dict, now: float) -> None:
        if self.state not in (State.STARTING, State.STANDBY, State.RUNNING):
            return
        self.last_hb = now
        self.backlog, self.info = backlog, info
        self._sample_cpu(now)
        if state == "running" and self.state is not State.RUNNING:
            self.running_since = now
            self.change_state(State.RUNNING)  # READY
        elif state == "standby" and self.state is State.STARTING:
            self.change_state(State.STANDBY)

    def tick(self, now: float) -> None:
        """Reap an exit, fire timers (backoff, start timeout, watchdog, SIGKILL)."""
        if self.proc is not None and self.state in ALIVE and self.proc.poll() is not None:
            self._on_exit(self.proc.returncode, now)
            return
        st, t = self.state, self.timing
        if st is State.BACKOFF and now >= self.restart_at:
            self.start(now)
        elif st is State.STOPPING and now >= self.kill_at:
            self.kill(f"still alive {self.spec.shutdown_timeout:g}s after SIGTERM")
            self.kill_at = float("inf")
        elif (
            st is State.STARTING
            and not self.spec.is_front
            and not self.kill_reason
            and now - self.started_at > t.start_timeout
        ):
            self.kill(f"no READY within {t.start_timeout:g}s")
        elif st in (State.RUNNING, State.STANDBY) and self.last_hb is not None and now - self.last_hb > t.hung_after:
            self.kill(f"no heartbeat for {now - self.last_hb:.1f}s ({t.missed} missed)")
            self.last_hb = None  # one SIGKILL; the exit is reaped on a later tick
        elif st is State.RUNNING and self.last_hb is not None and self.busy_s(now) > t.busy_limit:
            # Beats from the pulse thread alone: the loop is stuck in one handler.
            self.kill(f"busy in one handler for {self.busy_s(now):.1f}s (supervisor.busyLimitS={t.busy_limit:g})")
            self.last_hb = None
        elif st is State.RUNNING and self.running_since is not None:
            self.backoff.on_running(self.running_since, now)

    def next_due(self) -> float:
        """The earliest monotonic time a ``tick`` could act on a timer (inf: none
        pending): the supervisor sleeps until then instead of polling. Exits are
        not timers; the supervisor wakes on those through the child's pidfd."""
        st, t = self.state, self.timing
        due = float("inf")
        if self.kill_reason and st in ALIVE:
            pass  # SIGKILLed: the exit comes next, nothing else is due
        elif st is State.BACKOFF:
            due = self.restart_at
        elif st is State.STOPPING:
            due = self.kill_at
        elif st is State.STARTING and not self.spec.is_front:
            due = self.started_at + t.start_timeout
        elif st in (State.RUNNING, State.STANDBY) and self.last_hb is not None:
            due = self.last_hb + t.hung_after
            busy = self.info.get("busy_s") if isinstance(self.info, dict) else None
            if st is State.RUNNING and isinstance(busy, (int, float)) and busy > 0:
                due = min(due, self.last_hb + t.busy_limit - busy)
        if st is State.RUNNING and self.running_since is not None and self.backoff.attempt:
            due = min(due, self.running_since + t.stable_after)
        if self.op is not None:
            due = min(due, self.op.deadline)
        return due

    def busy_s(self, now: float) -> float:
        """How long the actor's loop has been inside one handler (0: not busy)."""
        busy = self.info.get("busy_s") if isinstance(self.info, dict) else None
        if not isinstance(busy, (int, float)) or self.last_hb is None:
            return 0.0
        return busy + (now - self.last_hb)

    def _on_exit(self, returncode: int, now: float) -> None:
        how = describe_exit(returncode)
        if self.kill_reason:
            how += f" ({self.kill_reason})"
        if self.state is State.STOPPING:
            self.change_state(State.STOPPED, f"STOPPED, exited {how}")
            return
        restart = self.spec.restart == PERMANENT or (self.spec.restart == TRANSIENT and returncode != 0)
        if not restart:
            self.change_state(State.EXITED, f"exited {how}, not restarted")
            return
        if not self.window.add(now):
            log.info("%s: exited %s", self.name, how)
            self.change_state(State.FATAL, f"FATAL, {self.timing.max_restarts} restarts in {self.timing.period:g}s")
            return
        delay = self.backoff.next_delay()
        self.restarts += 1
        self.restart_at = now + delay
        self.change_state(State.BACKOFF, f"exited {how}, restart in {delay:.1f}s")

    # -- status -----------------------------------------------------------------
    def _process(self):
        """The psutil.Process of the live child, or None."""
        pid = self.pid
        if pid is None:
            return None
        import psutil

        try:
            if self._ps is None or self._ps.pid != pid:
                self._ps = psutil.Process(pid)
        except psutil.Error:
            return None
        return self._ps

    def _sample_cpu(self, now: float) -> None:
        """One cpu-time sample per heartbeat: status then shows a recent rate."""
        ps = self._process()
        if ps is None:
            return
        import psutil

        try:
            self._cpu.add(now, actor_cpu_seconds(ps))
        except psutil.Error:
            pass

    def status(self, now: float) -> dict:
        rss = cpu = prio = None
        ps = self._process()
        if ps is not None:
            import psutil

            try:
                rss = actor_rss(ps)
                cpu = round(self._cpu.percent(now, actor_cpu_seconds(ps), now - self.started_at), 1)
            except psutil.Error:
                rss = cpu = None
            prio = priority.describe(ps)
        alive = ps is not None
        info = self.info if alive else {}
        if alive and self.state is State.STARTING and self.last_hb is None and not self.spec.is_front:
            # Spawned and silent: still importing, or hung; the operator sees which limit applies.
            info = {
                "waiting": f"its first heartbeat (killed after supervisor.startTimeoutS={self.timing.start_timeout:g}s)"
            }
        return {
            "name": self.name,
            "module": self.spec.module,
            "state": self.state.value,
            "pid": self.pid,
            "restarts": self.restarts,
            "uptime_s": round(now - self.started_at, 3) if alive else None,
            "rss": rss,
            "cpu": cpu,
            "priority": prio,
            # A child that is not running has no heartbeat and no current counters.
            "last_heartbeat_s": round(now - self.last_hb, 3) if alive and self.last_hb is not None else None,
            "backlog": self.backlog if alive else None,
            "info": info,
        }
