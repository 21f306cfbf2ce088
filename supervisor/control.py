"""Operator commands: control ROUTER -> ``COMMANDS[type]`` -> child.

``COMMANDS`` is a plain dict filled by ``@command``; each handler's docstring
is its help. A lifecycle command (restart/stop/start) replies when it is done
(the child RUNNING/STANDBY, or STOPPED), so ``memtree ctl restart filter``
returns with the new pid in place. One lifecycle command per child at a
time: a second gets BUSY (circus ``synchronized``). An operator restart or
start is not a crash: it clears FATAL and resets the restart window.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from memtree import protocol
from memtree.protocol import ErrorCode, ProtocolError
from memtree.supervisor.states import ALIVE, State

COMMANDS: dict[str, Callable] = {}
DEFERRED = object()  # the handler will reply later, from advance()


def command(rec_cls) -> Callable:
    def register(fn: Callable) -> Callable:
        COMMANDS[rec_cls.TYPE] = fn
        return fn

    return register


class Op:
    """A lifecycle command waiting for its child: stop first (if asked), then start."""

    def __init__(self, kind: str, reply: Callable, deadline: float, then_start: bool):
        self.kind, self.reply, self.deadline, self.then_start = kind, reply, deadline, then_start


def _summary(child) -> dict:
    return {"name": child.name, "state": child.state.value, "pid": child.pid}


def _lifecycle_child(sup, name: str):
    child = sup.child(name)  # raises NOT_FOUND listing the names
    if child.spec.is_front:
        raise ProtocolError(
            ErrorCode.REFUSED,
            f"{child.name} is this session's MCP server; it ends with the session and cannot be restarted",
        )
    if child.op is not None:
        raise ProtocolError(ErrorCode.BUSY, f"{child.name}: a {child.op.kind} is already in progress")
    return child


def _op_deadline(sup, child, now: float) -> float:
    return now + child.spec.shutdown_timeout + sup.timing.start_timeout + 1.0


@command(protocol.CtlStatus)
def status(sup, rec, reply, now):
    """Show every actor: state, pid, uptime, restarts, rss, cpu, heartbeat age, backlog."""
    actors = []
    for child in sup.children:
        row = child.status(now)
        row["supervisor_pid"] = os.getpid()
        actors.append(row)
    return {
        "supervisor_pid": os.getpid(),
        "project_root": sup.paths.project_root,
        "op_timeout_s": sup.op_timeout_s,
        "actors": actors,
    }


@command(protocol.CtlRestart)
def restart(sup, rec, reply, now):
    """Stop an actor (SIGTERM, then SIGKILL after the timeout) and start it again; clears FATAL."""
    child = _lifecycle_child(sup, rec.name)
    child.clear_failures()
    child.op = Op("restart", reply, _op_deadline(sup, child, now), then_start=True)
    if child.state in ALIVE:
        child.stop(now)
    else:
        child.change_state(State.STOPPED, "STOPPED by operator restart")
    advance(child, now)
    return DEFERRED


@command(protocol.CtlStop)
def stop(sup, rec, reply, now):
    """Stop an actor and leave it stopped (a singleton's standby elsewhere takes over)."""
    child = _lifecycle_child(sup, rec.name)
    child.op = Op("stop", reply, _op_deadline(sup, child, now), then_start=False)
    child.stop(now)
    advance(child, now)
    return DEFERRED


@command(protocol.CtlStart)
def start(sup, rec, reply, now):
    """Start a stopped, exited or FATAL actor (after a FATAL writer: back to read-write)."""
    child = _lifecycle_child(sup, rec.name)
    if child.state is State.STOPPING:
        raise ProtocolError(ErrorCode.BUSY, f"{child.name} is stopping")
    child.op = Op("start", reply, _op_deadline(sup, child, now), then_start=False)
    if child.state not in ALIVE:
        child.clear_failures()
        child.start(now)
    advance(child, now)
    return DEFERRED


@command(protocol.CtlShutdown)
def shutdown(sup, rec, reply, now):
    """Stop every actor in reverse start order, then the supervisor."""
    sup.request_shutdown("operator shutdown")
    return {"supervisor_pid": os.getpid()}


def advance(child, now: float) -> None:
    """Move ``child.op`` on: start once stopped, reply once settled or past its deadline."""
    op = child.op
    if op is None:
        return
    st = child.state
    if op.then_start and st is State.STOPPED:
        op.then_start = False
        child.start(now)
        st = child.state
    done = None
    if op.kind == "stop" and st is State.STOPPED:
        done = (True, _summary(child))
    elif op.kind != "stop" and not op.then_start and st in (State.RUNNING, State.STANDBY):
        done = (True, _summary(child))
    elif op.kind != "stop" and not op.then_start and st is State.FATAL:
        done = (False, (ErrorCode.INTERNAL, f"{child.name} crashed on start and is FATAL; see its log"))
    elif now > op.deadline:
        done = (False, (ErrorCode.TIMEOUT, f"{child.name}: {op.kind} not done in time; it is {st.value}"))
    if done is not None:
        child.op = None
        op.reply(*done)


def abandon(child, reason: str) -> None:
    """Answer a pending command when the supervisor goes away under it."""
    if child.op is not None:
        op, child.op = child.op, None
        op.reply(False, (ErrorCode.UNAVAILABLE, reason))
