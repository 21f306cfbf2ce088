"""``memtree ctl``: the operator's control client.

Finds the supervisors of this project by their control sockets
(``<run_dir>/sup-<pid>.ctl.sock``; files of dead pids are removed), asks
each one, and merges the answers: ``status`` lists the actors of every
supervisor; restart/stop/start go to the supervisor whose child holds the
role (RUNNING, not a STANDBY); ``shutdown`` goes to all. ``COMMANDS`` is
filled by ``@command``; each docstring is the subcommand's help.
"""

from __future__ import annotations

import glob
import json
import os
import re
import sys
from collections.abc import Callable

from memtree.runtime.actorenv import FRONT_NAME

COMMANDS: dict[str, Callable] = {}
TAKES_NAME: set[str] = set()
STATUS_TIMEOUT_MS = 3000
_SOCK_RE = re.compile(r"sup-(\d+)\.ctl\.sock$")


class CtlFailure(Exception):
    """One clear line for the operator, and the exit code."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message, self.code = message, code


class NotRunning(CtlFailure):
    """No supervisor runs (or answers) for the project: `status --json` still answers."""


def command(name: str, takes_name: bool = False) -> Callable:
    def register(fn: Callable) -> Callable:
        COMMANDS[name] = fn
        if takes_name:
            TAKES_NAME.add(name)
        return fn

    return register


def resolve_name(name: str, names: list[str]) -> str | None:
    """Exact name, else a short one: ``filter`` -> ``walker.filter``."""
    if name in names:
        return name
    short = [n for n in names if n.rsplit(".", 1)[-1] == name]
    return short[0] if len(short) == 1 else None


def _pid_alive(pid: int) -> bool:
    """Alive and not a zombie (a killed supervisor its parent has not reaped yet)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True


def discover(run_dir: str) -> list[int]:
    """Pids of the live supervisors; socket files left by dead ones are removed."""
    pids = []
    for path in sorted(glob.glob(os.path.join(glob.escape(run_dir), "sup-*.ctl.sock"))):
        m = _SOCK_RE.search(os.path.basename(path))
        if not m:
            continue
        pid = int(m.group(1))
        if _pid_alive(pid):
            pids.append(pid)
            continue
        for stale in (path, path[: -len(".ctl.sock")] + ".hb.sock"):
            try:
                os.unlink(stale)
            except OSError:
                pass
    return pids


class Supervisors:
    """The live supervisors of one store, and calls to them."""

    def __init__(self, paths):
        from memtree.protocol import sup_control_sock
        from memtree.runtime.client import Caller

        self.paths = paths
        self.callers = {
            pid: Caller(paths.endpoint(sup_control_sock(pid)), src="ctl") for pid in discover(paths.run_dir)
        }
        if not self.callers:
            raise NotRunning(f"no memtree supervisor is running for {paths.project_root} (store {paths.store_dir})")

    def call(self, pid: int, rec, timeout_ms: int):
        from memtree.errors import MemtreeError

        try:
            return self.callers[pid].call(rec, timeout_ms=timeout_ms)
        except MemtreeError as e:
            raise CtlFailure(e.message) from None

    def statuses(self) -> dict[int, dict]:
        """pid -> status reply; a supervisor that does not answer is skipped."""
        from memtree.protocol import CtlStatus

        out = {}
        for pid in self.callers:
            try:
                out[pid] = self.call(pid, CtlStatus(), STATUS_TIMEOUT_MS)
            except CtlFailure as e:
                print(f"memtree ctl: supervisor {pid} did not answer: {e.message}", file=sys.stderr)
        if not out:
            raise NotRunning(
                f"no memtree supervisor answered for {self.paths.project_root} (store {self.paths.store_dir})"
            )
        return out

    def close(self) -> None:
        for c in self.callers.values():
            c.close()


# Which supervisor gets a lifecycle command: the one whose child holds the role.
_RANK = {"RUNNING": 0, "STARTING": 1, "BACKOFF": 2, "FATAL": 2, "STOPPED": 2, "EXITED": 2, "STOPPING": 2, "STANDBY": 3}


def _target(statuses: dict[int, dict], name: str) -> tuple[int, str]:
    rows = [(pid, a) for pid, st in statuses.items() for a in st["actors"]]
    names = sorted({a["name"] for _, a in rows})
    resolved = resolve_name(name, names)
    if resolved is None and name == FRONT_NAME:
        raise CtlFailure(
            f"there is no MCP front ({FRONT_NAME}): this memtree runs headless (serve --no-front); "
            "a front runs only inside a Claude Code session and ends with it"
        )
    if resolved is None:
        raise CtlFailure(f"unknown actor {name!r}; actors: {', '.join(names)}", code=2)
    pid, _ = min(
        ((pid, a) for pid, a in rows if a["name"] == resolved), key=lambda pa: (_RANK.get(pa[1]["state"], 2), pa[0])
    )
    return pid, resolved


def _lifecycle(sups: Supervisors, rec_name: str, name: str) -> int:
    from memtree import protocol

    statuses = sups.statuses()
    pid, resolved = _target(statuses, name)
    timeout_ms = int(statuses[pid].get("op_timeout_s", 60) * 1000)
    result = sups.call(pid, protocol.MESSAGES[rec_name](name=resolved), timeout_ms)
    print(f"{result['name']}: {result['state']} pid={result['pid'] or '-'}")
    return 0


def _fmt_age(s) -> str:
    if s is None:
        return "-"
    s = float(s)
    if s < 60:
        return f"{s:.1f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"


def _fmt_bytes(n) -> str:
    return "-" if n is None else f"{n / 1048576:.1f}M"


def _table(actors: list[dict], several: bool) -> str:
    # PRIO: nice/io-priority (walkers run at 10/be7 unless walkers.lowPriority is false)
    head = ["ACTOR", "STATE", "PID", "UPTIME", "RESTARTS", "RSS", "CPU", "HEARTBEAT", "BACKLOG", "PRIO"]
    if several:
        head.append("SUPERVISOR")
    notes = any(a.get("info") for a in actors)
    if notes:
        head.append("NOTE")  # e.g. a walker idle for lack of a soft dependency
    lines = [head]
    for a in actors:
        row = [
            a["name"],
            a["state"],
            str(a["pid"] or "-"),
            _fmt_age(a["uptime_s"]),
            str(a["restarts"]),
            _fmt_bytes(a["rss"]),
            "-" if a["cpu"] is None else f"{a['cpu']:.1f}%",
            _fmt_age(a["last_heartbeat_s"]),
            "-" if a["backlog"] is None else str(a["backlog"]),
            a.get("priority") or "-",
        ]
        if several:
            row.append(str(a["supervisor_pid"]))
        if notes:
            row.append(" ".join(f"{k}={v}" for k, v in sorted((a.get("info") or {}).items())) or "-")
        lines.append(row)
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in lines)


@command("status")
def cmd_status(sups: Supervisors, args) -> int:
    """Show every actor: state, pid, uptime, restarts, rss, cpu, heartbeat age, backlog, priority."""
    from memtree.capture import heartbeat

    statuses = sups.statuses()
    actors = [a for pid in sorted(statuses) for a in statuses[pid]["actors"]]
    captures = heartbeat.read_all(sups.paths.store_dir)
    store = _store_line(sups.paths)
    problem = hook_config_problem(sups.paths)
    saved = _savings(sups.paths)
    if args.json:
        print(
            json.dumps(
                {
                    "running": True,
                    "supervisors": sorted(statuses),
                    "actors": actors,
                    "capture": captures,
                    "store": store,
                    "hook_config_error": problem,
                    "savings": saved and saved["total"],
                },
                indent=2,
            )
        )
    else:
        print(_table(actors, several=len(statuses) > 1))
        print()  # the table ends at the first blank line
        print(store)
        print(heartbeat.summary(captures))
        if saved is not None:
            from memtree.ops.savings import summary_line

            print(summary_line(saved))
        if problem:
            print(f"hook: capturing nothing, config unreadable: {problem}")
    return 0


def _savings(paths) -> dict | None:
    """The savings meter (memtree/ops/savings.py), or None when it cannot be read."""
    from memtree.ops import savings

    try:
        return savings.load(paths)
    except Exception:  # noqa: BLE001 - status must show even if the figure cannot be computed
        return None


def _store_line(paths) -> str:
    """Store size, budget and bytes stored per byte captured (memtree.store.budget)."""
    from memtree.config.loader import load_config
    from memtree.errors import MemtreeError
    from memtree.paths import memtree_home
    from memtree.store import budget

    try:
        max_bytes = load_config(paths.project_root, memtree_home()).storage.maxBytes
    except MemtreeError as e:
        return f"store: config error: {e.message}"
    db = None
    try:
        from memtree.store.db import open_read

        db = open_read(paths.db)
        return budget.summary(paths.db, max_bytes, db)
    except Exception:  # noqa: BLE001 - no store yet, or busy: size only
        return budget.summary(paths.db, max_bytes)
    finally:
        if db is not None:
            db.close()


def hook_config_problem(paths) -> str | None:
    """Why the capture hook fails closed (it leaves the reason in the store dir), or None."""
    try:
        with open(os.path.join(paths.store_dir, "hook-config.error"), encoding="utf-8") as f:
            return f.read().strip() or None
    except OSError:
        return None


@command("restart", takes_name=True)
def cmd_restart(sups: Supervisors, args) -> int:
    """Restart an actor (short names work: filter = walker.filter); clears FATAL."""
    return _lifecycle(sups, "CtlRestart", args.name)


@command("stop", takes_name=True)
def cmd_stop(sups: Supervisors, args) -> int:
    """Stop an actor and leave it stopped until `start`."""
    return _lifecycle(sups, "CtlStop", args.name)


@command("start", takes_name=True)
def cmd_start(sups: Supervisors, args) -> int:
    """Start a stopped or FATAL actor (`start writer` leaves read-only mode)."""
    return _lifecycle(sups, "CtlStart", args.name)


@command("shutdown")
def cmd_shutdown(sups: Supervisors, args) -> int:
    """Stop every actor and every supervisor of this project."""
    from memtree.protocol import CtlShutdown

    for pid in list(sups.callers):
        sups.call(pid, CtlShutdown(), STATUS_TIMEOUT_MS)
        print(f"supervisor {pid}: shutting down")
    return 0


def build_parser():
    import argparse

    p = argparse.ArgumentParser(prog="memtree ctl", description="Control the running memtree actors.")
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, fn in COMMANDS.items():
        sp = sub.add_parser(name, help=fn.__doc__, description=fn.__doc__)
        if name in TAKES_NAME:
            sp.add_argument("name", metavar="NAME", help="actor name, e.g. writer, filter, walker.filter")
        if name == "status":
            sp.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def main(argv: list[str] | None = None) -> int:
    from memtree.paths import paths_for_cwd, start_dir

    args = build_parser().parse_args(argv)
    if args.project is not None and not os.path.isdir(args.project):
        print(f"memtree ctl: --project {args.project}: not a directory", file=sys.stderr)
        return 2
    sups = paths = None
    try:
        paths = paths_for_cwd(start_dir(args.project))
        sups = Supervisors(paths)
        return COMMANDS[args.command](sups, args)
    except NotRunning as e:
        if getattr(args, "json", False):  # a script reading the JSON gets an answer, not silence
            print(
                json.dumps(
                    {
                        "running": False,
                        "project_root": paths.project_root,
                        "store_dir": paths.store_dir,
                        "supervisors": [],
                        "actors": [],
                        "message": e.message,
                    },
                    indent=2,
                )
            )
        print(f"memtree ctl: {e.message}", file=sys.stderr)
        return e.code
    except CtlFailure as e:
        print(f"memtree ctl: {e.message}", file=sys.stderr)
        return e.code
    except BrokenPipeError:  # `memtree ctl status | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if sups is not None:
            sups.close()
