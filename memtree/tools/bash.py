"""The wrapped ``bash`` tool: run a command in the project, store what it
printed, return the head and tail that fit the budget plus the node id.

The command runs as ``bash -c`` in its own process group, so a timeout, a
cancelled call or the front's exit kills everything it started. The shell's
exit is reported at once; background processes still holding its output are
killed with the group (run_command has the one rule). Output beyond
``bash.maxOutputBytes`` is counted and dropped. A command on the denylist (gate.command_denied, config
``bash.deny``) still runs but nothing of it is stored; so is everything when
``capture.bash`` is off. The writer's redaction gate cleans what is stored.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import subprocess
import threading
import time

from memtree import gate, protocol
from memtree.errors import BadRequest
from memtree.text.fit import clip_line, fit_rows
from memtree.tools import call_repr, check_budget, count, finish

MAX_TIMEOUT_S = 600
KILL_GRACE_S = 2.0  # after SIGTERM to the group, before SIGKILL
# After the shell exits, how long its background processes may keep the
# output pipes open (trailing output) before they are killed with the group.
PIPE_GRACE_S = 0.1


class Captured:
    """One stream's bytes up to a cap, and how many were dropped beyond it."""

    __slots__ = ("data", "dropped", "cap")

    def __init__(self, cap: int):
        self.data, self.dropped, self.cap = bytearray(), 0, cap

    async def drain(self, stream) -> None:
        while chunk := await stream.read(65536):
            room = self.cap - len(self.data)
            self.data += chunk[: max(0, room)]
            self.dropped += max(0, len(chunk) - max(0, room))

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


def _check_args(command, timeout_s, default_timeout) -> float:
    if not isinstance(command, str) or not command.strip():
        raise BadRequest("command must be a non-empty string (run with bash -c in the project root)")
    if "\x00" in command:
        raise BadRequest("command contains a NUL byte")
    if timeout_s is None:
        return float(default_timeout)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= MAX_TIMEOUT_S:
        raise BadRequest(
            f"timeout_s must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}, got {timeout_s!r}"
        )
    return float(timeout_s)


def _signal_group(pgid: int, sig: int) -> bool:
    """Signal a process group; False when no process is left in it."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # someone else's process took the id: nothing of ours is left in it
    return True


# Process groups of the commands in flight. A cancelled call kills its own
# (the front only has to cancel the task); kill_running() is for an exit that
# cancels nothing (atexit; a front ending with os._exit should call it first).
_RUNNING: set[int] = set()


def kill_running() -> None:
    """SIGKILL the process group of every command still running (front exit)."""
    for pgid in list(_RUNNING):
        _signal_group(pgid, signal.SIGKILL)
    _RUNNING.clear()


atexit.register(kill_running)


class _Shell:
    """``bash -c`` started synchronously (no await between the fork and its
    registration in _RUNNING, so a cancel can never miss it), its pipes read
    by the event loop, its exit noticed by a waiter thread. asyncio's
    ``Process.wait()`` is not used: it returns only once the pipes close too,
    and a background child holding them would hide the shell's exit."""

    def __init__(self, command: str, cwd: str):
        self.loop = asyncio.get_running_loop()
        self.proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.pgid = self.proc.pid
        _RUNNING.add(self.pgid)
        self.exited = self.loop.create_future()
        self.pipes: list = []
        threading.Thread(target=self._wait, name=f"bash-{self.pgid}", daemon=True).start()

    def _wait(self) -> None:
        self.proc.wait()
        try:
            self.loop.call_soon_threadsafe(lambda: self.exited.done() or self.exited.set_result(None))
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    async def reader(self, pipe) -> asyncio.StreamReader:
        stream = asyncio.StreamReader(limit=2**16, loop=self.loop)
        transport, _ = await self.loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
        self.pipes.append(transport)
        return stream

    def close(self) -> None:
        for transport in self.pipes:
            transport.close()
        for pipe in (self.proc.stdout, self.proc.stderr):
            pipe.close()


async def _exit_within(exited, wait_s: float) -> bool:
    try:
        await asyncio.wait_for(asyncio.shield(exited), wait_s)
    except TimeoutError:
        return False
    return True


async def _settle(readers: list, wait_s: float) -> bool:
    """True when both streams reached end of file within ``wait_s``."""
    _done, pending = await asyncio.wait(readers, timeout=wait_s)
    return not pending


async def run_command(command: str, cwd: str, timeout_s: float, cap: int) -> dict:
    """Run ``command`` in its own process group; output beyond ``cap`` bytes
    (stdout and stderr each) is counted, not kept.

    One rule for what the shell leaves behind: its exit is reported as soon
    as it exits (with its status). Background processes that still hold
    stdout/stderr ``PIPE_GRACE_S`` later are killed with the process group,
    and the answer says so; those that let go of the pipes keep running and
    the answer says that too. At the timeout, or when the call is cancelled,
    the whole group is killed.
    """
    started = time.monotonic()
    shell = _Shell(command, cwd)
    pgid, exited = shell.pgid, shell.exited
    out, err = Captured(cap), Captured(cap)
    readers: list = []
    timed_out, leftover = False, None
    try:
        readers = [
            asyncio.ensure_future(out.drain(await shell.reader(shell.proc.stdout))),
            asyncio.ensure_future(err.drain(await shell.reader(shell.proc.stderr))),
        ]
        if not await _exit_within(exited, timeout_s):
            timed_out = True
            _signal_group(pgid, signal.SIGTERM)
            if not await _exit_within(exited, KILL_GRACE_S):
                _signal_group(pgid, signal.SIGKILL)
                await exited
        if not await _settle(readers, PIPE_GRACE_S):
            leftover = "killed"  # background processes still hold the pipes
            _signal_group(pgid, signal.SIGKILL)
            if not await _settle(readers, KILL_GRACE_S):
                leftover = "detached"  # they left the process group (setsid): stop reading
        elif not timed_out and _signal_group(pgid, 0):
            leftover = "running"  # let go of the pipes (redirected, nohup): left alone, said so
    finally:
        _RUNNING.discard(pgid)
        if leftover != "running":
            # Also when cancelled (front cancel, request cancel, front exit): nothing of it outlives the call.
            _signal_group(pgid, signal.SIGKILL)
        for task in readers:
            task.cancel()
        shell.close()  # the pipes, also when a detached child still holds them
        await asyncio.gather(*readers, return_exceptions=True)
    proc = shell.proc
    return {
        "exit": proc.returncode,
        "stdout": out,
        "stderr": err,
        "timed_out": timed_out,
        "leftover": leftover,
        "duration_ms": int((time.monotonic() - started) * 1000),
    }


LEFTOVER = {
    "killed": "background processes still held the output after the shell exited: killed with its process group",
    "detached": "background processes left the process group and still hold the output: detached, not read further",
    "running": "background processes let go of the output and are still running, detached from memtree",
}


def _status(res: dict, timeout_s: float) -> str:
    code = res["exit"]
    if res["timed_out"]:
        status = f"killed after the {timeout_s:g}s timeout (process group terminated)"
    elif code is not None and code < 0:
        status = f"killed by signal {-code}"
    else:
        status = f"exit {code}"
    if res["leftover"] and not (res["timed_out"] and res["leftover"] == "killed"):
        status += "; " + LEFTOVER[res["leftover"]]
    return status


def stored_text(command: str, res: dict, status: str) -> str:
    parts = [f"$ {command}", f"[{status}]"]
    for name in ("stdout", "stderr"):
        cap: Captured = res[name]
        if cap.data or cap.dropped:
            more = f" ({cap.dropped} bytes beyond bash.maxOutputBytes dropped)" if cap.dropped else ""
            parts.append(f"--- {name}{more} ---\n{cap.text()}")
    return "\n".join(parts) + "\n"


async def bash(svc, command, timeout_s=None, budget_tokens=None) -> str:
    budget = check_budget(budget_tokens)
    conf = svc.config.bash
    timeout = _check_args(command, timeout_s, conf.timeoutS)
    res = await run_command(command, svc.project_root, timeout, int(conf.maxOutputBytes))
    status = _status(res, timeout)
    denied = gate.command_denied(command, conf.deny, svc.config.path.deny, svc.project_root)  # as the hook checks it
    if denied is None and not svc.config.capture.bash:
        denied = "capture.bash is off for this project"
    if denied:
        where, fetch = f"not stored: {denied}", "not stored"
    else:
        meta = {
            "tool": "bash",
            "command": command,
            "exit": res["exit"],
            "timed_out": res["timed_out"],
            "stdout_bytes": len(res["stdout"].data) + res["stdout"].dropped,
            "stderr_bytes": len(res["stderr"].data) + res["stderr"].dropped,
            "truncated": bool(res["stdout"].dropped or res["stderr"].dropped),
            "duration_ms": res["duration_ms"],
            "cwd": svc.project_root,
        }
        reply = await svc.call(
            protocol.PutToolOutput(
                tool="bash",
                content=stored_text(command, res, status),
                metadata=meta,
                session_id=svc.session_id,
            )
        )
        node_id = reply.get("id")
        where = f"memtree {node_id}"
        fetch = call_repr("recall", ids=node_id)
    return await svc.run_sync(preview, command, res, status, where, fetch, budget)  # off the event loop


def _elision(name: str, n_lines: int, n_bytes: int, dropped: int, where: str) -> str:
    msg = f"… {n_lines} lines ({n_bytes} bytes) of {name} left out"
    if dropped:
        msg += f", plus {dropped} bytes over bash.maxOutputBytes never kept"
    return f"{msg}; {where}"


def _head_tail(text: str, room: int, name: str, dropped: int, where: str) -> list[str]:
    """As many head lines and tail lines as fit ``room`` with one elision line."""
    lines = [clip_line(line, 2000) for line in text.splitlines()]
    if count("\n".join(lines) + "\n") <= room and not dropped:
        return lines
    # Sized for the most that could be left out: the real line can only be shorter.
    room -= count(_elision(name, len(lines), len(text.encode()), dropped, where) + "\n")
    head, used = fit_rows(lines, room * 2 // 3)
    tail_rev, _ = fit_rows(list(reversed(lines[len(head) :])), room - used)
    tail = list(reversed(tail_rev))
    skipped = lines[len(head) : len(lines) - len(tail)]
    if not skipped and not dropped:
        return head + tail
    return head + [_elision(name, len(skipped), len("\n".join(skipped).encode()), dropped, where)] + tail


def _block(name: str, cap: Captured, room: int, fetch: str, labelled: bool = True) -> list[str]:
    text = cap.text()
    if not text and not cap.dropped:
        return []
    label = [f"--- {name} ---"] if labelled else []
    return label + _head_tail(text, room - count("\n".join(label) + "\n"), name, cap.dropped, fetch)


def preview(command: str, res: dict, status: str, where: str, fetch: str, budget: int) -> str:
    """What native Bash shows (stdout, then stderr) and one status line last;
    stdout/stderr are labelled only when both have something, byte counts
    only when the output was cut."""
    out, err = res["stdout"], res["stderr"]
    both = bool((out.data or out.dropped) and (err.data or err.dropped))
    if not (out.dropped or err.dropped):
        whole = [t.rstrip("\n") for t in (out.text(), err.text()) if t]
        if both:
            whole = [f"--- stdout ---\n{whole[0]}", f"--- stderr ---\n{whole[1]}"]
        text = "\n".join(whole + [f"[{status}; {where}]"])
        if count(text) <= budget:
            return text
    footer = [
        f"[{status}; {len(out.data) + out.dropped} bytes stdout, {len(err.data) + err.dropped} bytes stderr; {where}]"
    ]
    room = budget - count("\n".join(footer) + "\n")
    text = "\n".join(footer)
    for _ in range(8):  # the elision lines' sizes are estimates: shrink until it fits
        err_room = room // 3 if out.data else room
        err_block = _block("stderr", err, err_room, fetch, both)
        out_block = _block("stdout", out, room - count("\n".join(err_block) + "\n"), fetch, both)
        candidate = "\n".join(out_block + err_block + footer)
        over = count(candidate) - budget
        if over <= 0:
            text = candidate
            break
        room -= over
    # Too small a budget for any output: the status line says where it is.
    return finish(text, budget)
