"""``memtree doctor [--project DIR] [--fix] [--json]``: is capture really working?

One line per check, each failure with its fix: hook registered and its
interpreter present; MCP entry present and the server answering
``initialize``; config valid; store integrity (quick check, the FTS index and
the vectors agree with the nodes); permissions; free disk and the budget;
actors' CPU at idle; spool backlog; the capture heartbeat. Exit 0 only when
every check is ok (a check that cannot run, e.g. actors when none is
running, is ``skip``, not a failure). ``--fix`` asks the writer to rebuild
the derived indexes from nodes and tightens permissions.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

OK, FAIL, SKIP = "ok", "FAIL", "skip"
IDLE_CPU_PCT = 5.0
MIN_FREE_BYTES = 512 * 1048576
INIT_TIMEOUT_S = 30.0  # a cold `memtree serve` imports the MCP SDK (~1-2 s here), more on a busy box
INSTALL_FIX = "run `memtree install` in the project (or enable the memtree plugin)"


class Report:
    def __init__(self):
        self.rows: list[dict] = []
        self._t = time.monotonic()

    def add(self, check: str, status: str, message: str, fix: str = "") -> None:
        now = time.monotonic()  # time since the previous row: what this check cost
        self.rows.append(
            {"check": check, "status": status, "message": message, "fix": fix, "ms": round((now - self._t) * 1000, 1)}
        )
        self._t = now

    @property
    def healthy(self) -> bool:
        return all(r["status"] != FAIL for r in self.rows)


def check_config(rep: Report, paths) -> object | None:
    from memtree.config.loader import load_config
    from memtree.errors import MemtreeError
    from memtree.paths import memtree_home

    try:
        config = load_config(paths.project_root, memtree_home())
    except MemtreeError as e:
        rep.add("config", FAIL, e.message, "correct the key named above, or remove it to use the default")
        return None
    rep.add("config", OK, f"valid ({', '.join(config.sources) or 'built-in defaults'})")
    return config


def _runnable(argv: list[str]) -> str | None:
    """Why this hook command cannot run, or None."""
    if not argv:
        return "empty command"
    exe = argv[0]
    if not os.path.isabs(exe):
        return None if __import__("shutil").which(exe) else f"{exe} is not on PATH"
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        return f"interpreter {exe} is missing"
    scripts = [a for a in argv[1:] if a.endswith(".py")]
    missing = [s for s in scripts if not os.path.isfile(s)]
    return f"hook script {missing[0]} is missing" if missing else None


def check_hooks(rep: Report, project: str) -> None:
    from memtree.ops.claude_settings import hook_registrations

    regs = hook_registrations(project)
    for event, found in regs.items():
        if not found:
            what = "the capture heartbeat's check" if event == "Stop" else "capture of Read/Grep/Bash"
            rep.add(f"hook.{event}", FAIL, f"not registered: no {what}", INSTALL_FIX)
            continue
        where, argv = found[0]
        why = _runnable(argv)
        if why:
            rep.add(f"hook.{event}", FAIL, f"registered in {where}, but {why}", INSTALL_FIX + " again")
        else:
            rep.add(f"hook.{event}", OK, f"registered in {where}; {argv[0]} present")


def _initialize(entry: dict, project: str) -> tuple[bool, str]:
    """Spawn the server as Claude Code would and wait for its initialize answer."""
    import select
    import signal
    import subprocess

    from memtree.runtime.group import start_group

    argv = [entry.get("command", "")] + [str(a) for a in entry.get("args") or []]
    env = {**os.environ, **{k: str(v) for k, v in (entry.get("env") or {}).items()}, "CLAUDE_PROJECT_DIR": project}
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "memtree-doctor", "version": "1"},
        },
    }
    t0 = time.monotonic()
    try:
        proc = start_group(argv, cwd=project, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as e:
        return False, f"cannot start {argv[0]}: {e.strerror}"
    try:
        proc.stdin.write((json.dumps(request) + "\n").encode())
        proc.stdin.flush()
        buf = b""
        while b"\n" not in buf:
            left = INIT_TIMEOUT_S - (time.monotonic() - t0)
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                return False, f"no initialize answer within {INIT_TIMEOUT_S:.0f} s"
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                return False, f"exited ({proc.wait(timeout=5)}) before answering initialize"
            buf += chunk
        reply = json.loads(buf.split(b"\n", 1)[0])
        name = ((reply.get("result") or {}).get("serverInfo") or {}).get("name")
        if not name:
            return False, f"answered initialize without a result: {str(reply)[:120]}"
        return True, f"{name} answered initialize in {time.monotonic() - t0:.1f} s"
    except (OSError, ValueError) as e:
        return False, f"broken initialize exchange: {e}"
    finally:
        try:
            proc.stdin.close()  # stdin closed: memtree serve shuts every actor down
            proc.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()


def check_mcp(rep: Report, project: str) -> None:
    from memtree.ops.claude_settings import listed_tools, mcp_registrations

    regs = mcp_registrations(project)
    if not regs:
        rep.add("mcp", FAIL, "no memtree MCP server in .mcp.json, ~/.claude.json or an enabled plugin", INSTALL_FIX)
        return
    where, entry = regs[0]
    tools, why = listed_tools(entry)
    if why:
        rep.add("mcp", FAIL, f"{where}: {why}", "rerun `memtree install --tools LIST` with names from that list")
        return
    ok, message = _initialize(entry, project)
    rep.add(
        "mcp",
        OK if ok else FAIL,
        f"{where}: {message}; lists {', '.join(tools)}",
        "" if ok else "see <store>/logs/mcp.log and supervisor.log; rerun `memtree install` if the path moved",
    )


def check_store(rep: Report, paths, fix: bool) -> None:
    from memtree.store import integrity

    if not os.path.exists(paths.db):
        rep.add("store", SKIP, f"no store yet at {paths.db} (created at the first capture)")
        return
    problems, facts = integrity.check(paths.db)
    if not problems:
        rep.add("store", OK, facts)
        return
    if fix:
        done = _rebuild(paths)
        if done:
            problems, facts = integrity.check(paths.db)
            if not problems:
                rep.add("store", OK, f"fixed ({done}); {facts}")
                return
    rep.add(
        "store",
        FAIL,
        "; ".join(problems),
        "`memtree doctor --fix` rebuilds the FTS index and vectors from nodes (needs memtree running)",
    )


def _rebuild(paths) -> str | None:
    from memtree import protocol
    from memtree.errors import MemtreeError
    from memtree.runtime.client import Caller

    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="doctor", timeout_ms=120_000)
    try:
        r = caller.call(protocol.RebuildIndexes(reason="memtree doctor --fix"))
    except MemtreeError:
        return None
    finally:
        caller.close()
    return f"FTS rebuilt with {r['fts_rows']} rows, {r['vectors_dropped']} stray vectors dropped"


def check_permissions(rep: Report, paths, fix: bool) -> None:
    wanted = [(paths.store_dir, 0o700)] + [
        (os.path.join(paths.store_dir, n), 0o600)
        for n in ("store.db", "store.db-wal", "store.db-shm", "spool.jsonl", "heartbeat.bin", "foreground.bin")
    ]
    loose = []
    for path, mode in wanted:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        if stat.S_IMODE(st.st_mode) & 0o077:
            if fix:
                os.chmod(path, mode)
            else:
                loose.append(f"{path} is {oct(stat.S_IMODE(st.st_mode))}")
    if loose:
        rep.add(
            "permissions",
            FAIL,
            "; ".join(loose),
            "chmod 700 the store directory and 600 its files (or `memtree doctor --fix`)",
        )
    else:
        rep.add("permissions", OK, "store directory 0700, files 0600")


def check_disk(rep: Report, paths, config) -> None:
    import shutil

    from memtree.store import budget

    where = paths.store_dir if os.path.isdir(paths.store_dir) else os.path.dirname(paths.store_dir)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        rep.add("disk", SKIP, f"cannot stat {where}")
        return
    size, files = _store_size(paths.db), budget.file_bytes(paths.db)
    limit = config.storage.maxBytes if config else None
    msg = f"{free / 1073741824:.1f} GiB free; store {size / 1048576:.1f} MiB"
    msg += f" of a {limit / 1048576:.0f} MiB budget" if limit else ""
    msg += f" (files {files / 1048576:.1f} MiB with the WAL)"
    if free < MIN_FREE_BYTES:
        rep.add("disk", FAIL, msg, "free disk space, or lower storage.maxBytes")
    elif limit and size > limit * 1.1:
        rep.add("disk", FAIL, msg + " (over budget)", "check walker.pruner in `memtree ctl status` and its log")
    else:
        rep.add("disk", OK, msg)


def _store_size(db_path: str) -> int:
    """The store's size as the pruner measures it (memtree.store.budget.store_bytes);
    0 before the store exists."""
    import apsw

    from memtree.store import budget
    from memtree.store.db import open_read

    if not os.path.exists(db_path):
        return 0
    try:
        db = open_read(db_path)
    except apsw.Error:
        return budget.file_bytes(db_path)  # unreadable: the files are all there is to go by
    try:
        return budget.store_bytes(db)
    except apsw.Error:
        return budget.file_bytes(db_path)
    finally:
        db.close()


def check_actors(rep: Report, paths) -> None:
    from memtree.ops.ctl import CtlFailure, Supervisors

    try:
        sups = Supervisors(paths)
    except CtlFailure:
        rep.add("actors", SKIP, "not running (Claude Code starts memtree with a session)")
        return
    try:
        actors = [a for st in sups.statuses().values() for a in st["actors"]]
    except CtlFailure as e:
        rep.add("actors", FAIL, e.message, "`memtree ctl shutdown`, then start a new session")
        return
    finally:
        sups.close()
    down = [f"{a['name']} {a['state']}" for a in actors if a["state"] not in ("RUNNING", "STANDBY")]
    busy = [f"{a['name']} {pct:.1f}%" for a, pct in _still_busy(actors)]
    if down or busy:
        rep.add(
            "actors",
            FAIL,
            "; ".join(down + [f"{b} CPU" for b in busy]),
            "`memtree ctl restart NAME`; see <store>/logs/NAME.log",
        )
    else:
        cpu = sum(a.get("cpu") or 0 for a in actors)
        rep.add("actors", OK, f"{len(actors)} running, {cpu:.1f}% CPU in all")


def _still_busy(actors: list[dict]) -> list[tuple[dict, float]]:
    """The actors over IDLE_CPU_PCT now: those whose status rate is over it,
    measured again over the next second (the status rate covers the last
    second or so, which after a capture or a start is the walkers' real work
    on it, not a spin)."""
    from memtree.runtime import cpu

    suspects = [a for a in actors if (a.get("cpu") or 0) > IDLE_CPU_PCT and a.get("pid")]
    if not suspects:
        return []
    rates = cpu.measure([a["pid"] for a in suspects], cpu.WINDOW_S)
    return [(a, rates[a["pid"]]) for a in suspects if rates.get(a["pid"], 0.0) > IDLE_CPU_PCT]


def check_spool(rep: Report, paths) -> None:
    from memtree.capture import spool

    n = spool.pending_count(paths.spool)
    if n:
        rep.add(
            "spool",
            FAIL,
            f"{n} captures waiting in the spool (the writer was away)",
            "start memtree (a Claude Code session, or `memtree serve --no-front`); the writer drains it",
        )
    else:
        rep.add("spool", OK, "empty")


def check_heartbeat(rep: Report, paths) -> None:
    from memtree.capture import heartbeat

    slots = heartbeat.read_all(paths.store_dir)
    if not slots:
        rep.add("capture", SKIP, "no hook run recorded yet")
        return
    bad = heartbeat.problems(slots)
    if bad:
        rep.add("capture", FAIL, "; ".join(bad), "check the hook registration above and <store>/logs/hook.log")
    else:
        rep.add("capture", OK, heartbeat.summary(slots).removeprefix("capture: "))


def check_savings(rep: Report, paths) -> None:
    """Informational: what memtree kept out of the context (memtree/ops/savings.py); never fails."""
    from memtree.ops import savings

    try:
        m = savings.load(paths)
    except Exception as e:  # noqa: BLE001 - a figure, not a health check
        rep.add("savings", SKIP, f"not computed ({type(e).__name__})")
        return
    if m is None:
        rep.add("savings", SKIP, "no store yet")
    else:
        rep.add("savings", OK, savings.summary_line(m).removeprefix("savings: ") + " (`memtree stats` per day)")


def run(project: str, fix: bool = False) -> Report:
    from memtree.paths import paths_for_cwd

    paths = paths_for_cwd(project)
    rep = Report()
    config = check_config(rep, paths)
    check_hooks(rep, paths.project_root)
    check_mcp(rep, paths.project_root)
    check_store(rep, paths, fix)
    check_permissions(rep, paths, fix)
    check_disk(rep, paths, config)
    check_actors(rep, paths)
    check_spool(rep, paths)
    check_heartbeat(rep, paths)
    check_savings(rep, paths)
    return rep


def main(argv: list[str] | None = None) -> int:
    import argparse

    from memtree.paths import start_dir

    p = argparse.ArgumentParser(prog="memtree doctor", description="Check that memtree is installed and capturing.")
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument("--fix", action="store_true", help="rebuild derived indexes from nodes; tighten permissions")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    args = p.parse_args(argv)
    project = start_dir(args.project)
    if not os.path.isdir(project):
        print(f"memtree doctor: --project {project}: not a directory", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    rep = run(os.path.abspath(project), fix=args.fix)
    if args.json:
        print(
            json.dumps(
                {"healthy": rep.healthy, "seconds": round(time.monotonic() - t0, 2), "checks": rep.rows}, indent=2
            )
        )
    else:
        for r in rep.rows:
            line = f"{r['status']:<4}  {r['check']}: {r['message']}"
            print(line + (f" -- fix: {r['fix']}" if r["status"] == FAIL and r["fix"] else ""))
    return 0 if rep.healthy else 1
