"""The wrapped ``bash`` tool: run a command in the project, store what it
printed, return the head and tail that fit the budget plus the node id.

The command runs as ``bash -c`` in its own process group, so a timeout kills
everything it started. Output beyond ``bash.maxOutputBytes`` is counted and
dropped. A command on the denylist (redact.command_denied, config
``bash.deny``) still runs but nothing of it is stored; so is everything when
``capture.bash`` is off. The writer's redaction gate cleans what is stored.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time

from memtree import protocol, redact
from memtree.errors import BadRequest
from memtree.tools import check_budget, clip_line, count, finish, fit_block

MAX_TIMEOUT_S = 600
KILL_GRACE_S = 2.0  # after SIGTERM to the group, before SIGKILL


class Captured:
    """One stream's bytes up to a cap, and how many were dropped beyond it."""

    __slots__ = ("data", "dropped", "cap")

    def __init__(self, cap: int):
        self.data, self.dropped, self.cap = bytearray(), 0, cap

    async def drain(self, stream) -> None:
        while chunk := await stream.read(65536):
            room = self.cap - len(self.data)
            self.data += chunk[:max(0, room)]
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
        raise BadRequest(f"timeout_s must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}, got {timeout_s!r}")
    return float(timeout_s)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def run_command(command: str, cwd: str, timeout_s: float, cap: int) -> dict:
    """Run ``command``; kill its process group at the deadline. Output beyond
    ``cap`` bytes (stdout and stderr each) is counted, not kept."""
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )
    out, err = Captured(cap), Captured(cap)
    readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
    timed_out = detached = False
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), timeout_s)
    except asyncio.TimeoutError:
        timed_out = True
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.shield(proc.wait()), KILL_GRACE_S)
        except asyncio.TimeoutError:
            pass
        _signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
    # Background children may keep the pipes open after bash exits: wait for
    # their output until the deadline, then stop reading and leave them be.
    left = max(0.1, timeout_s - (time.monotonic() - started))
    try:
        await asyncio.wait_for(asyncio.shield(readers), KILL_GRACE_S if timed_out else left)
    except asyncio.TimeoutError:
        detached = True
        readers.cancel()
    return {"exit": proc.returncode, "stdout": out, "stderr": err, "timed_out": timed_out,
            "detached": detached, "duration_ms": int((time.monotonic() - started) * 1000)}


def _status(res: dict, timeout_s: float) -> str:
    code = res["exit"]
    if res["timed_out"]:
        return f"killed after the {timeout_s:g}s timeout (process group terminated)"
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exit {code}"


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
    denied = redact.command_denied(command, conf.deny)
    if denied is None and not svc.config.capture.bash:
        denied = "capture.bash is off for this project"
    if denied:
        where, fetch = f"not stored: {denied}", "not stored"
    else:
        meta = {"tool": "bash", "command": command, "exit": res["exit"], "timed_out": res["timed_out"],
                "stdout_bytes": len(res["stdout"].data) + res["stdout"].dropped,
                "stderr_bytes": len(res["stderr"].data) + res["stderr"].dropped,
                "truncated": bool(res["stdout"].dropped or res["stderr"].dropped),
                "duration_ms": res["duration_ms"], "cwd": svc.project_root}
        reply = await svc.call(protocol.PutToolOutput(
            tool="bash", content=stored_text(command, res, status), metadata=meta, session_id=svc.session_id,
        ))
        node_id = reply.get("id")
        where = f"{'same output already stored' if reply.get('deduped') else 'stored'} as node {node_id}"
        fetch = f'get(node_id="{node_id}")'
    return preview(command, res, status, where, fetch, budget)


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
    head, used = fit_block(lines, room * 2 // 3)
    tail_rev, _ = fit_block(list(reversed(lines[len(head):])), room - used)
    tail = list(reversed(tail_rev))
    skipped = lines[len(head):len(lines) - len(tail)]
    if not skipped and not dropped:
        return head + tail
    return head + [_elision(name, len(skipped), len("\n".join(skipped).encode()), dropped, where)] + tail


def _block(name: str, cap: Captured, room: int, fetch: str) -> list[str]:
    text = cap.text()
    if not text and not cap.dropped:
        return []
    label = f"--- {name} ---"
    return [label] + _head_tail(text, room - count(label + "\n"), name, cap.dropped, fetch)


def preview(command: str, res: dict, status: str, where: str, fetch: str, budget: int) -> str:
    out, err = res["stdout"], res["stderr"]
    detached = "; background processes kept the output open, stopped reading" if res["detached"] else ""
    header = [f"$ {clip_line(command, 200)}", f"[{status}; {len(out.data) + out.dropped} bytes stdout, "
              f"{len(err.data) + err.dropped} bytes stderr; {where}{detached}]"]
    room = budget - count("\n".join(header) + "\n")
    text = "\n".join(header)
    for _ in range(8):  # the elision lines' sizes are estimates: shrink until it fits
        err_room = room // 3 if out.data else room
        err_block = _block("stderr", err, err_room, fetch)
        out_block = _block("stdout", out, room - count("\n".join(err_block) + "\n"), fetch)
        candidate = "\n".join(header + out_block + err_block)
        over = count(candidate) - budget
        if over <= 0:
            text = candidate
            break
        room -= over
    # Too small a budget for any output: the status line says where it is.
    return finish(text, budget)
