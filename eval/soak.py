"""A month of use, simulated (issue 17 point 5).

    nice -n 10 .venv/bin/python -m memtree.eval.soak [--sessions 300 --captures 200] [--max-mib 8]

The real system end to end: ``memtree serve`` started by the MCP SDK client
over stdio (as Claude Code starts it: the supervisor, the front, the writer
and every walker), a project of real code (eval/soak_payloads.py), and per
session the SessionStart hook, then ``--captures`` PostToolUse(Failure)
payloads each run through the hook process ``memtree install`` registers
(one process per capture, as Claude Code runs it), a FileChanged hook when
the agent edits a watched file, a ``recall`` through the MCP front every
``--query-every`` captures, and the Stop hook. Files change between sessions
too. Retention is compressed (stale and superseded nodes pruned after about
a minute, pruned rows purged after two), the pruner runs every
``--pruner-s`` seconds and ``storage.maxBytes`` is low enough to bite.

Sampled as it runs: the store's size (memtree.store.budget.store_bytes, the
size the pruner holds to the budget) and the files on disk, each actor's RSS
and backlog (the supervisor's status, as ``memtree ctl status`` shows them),
node counts by status, the pruner's counts, the hook's run time and the
recall latency. Accounting: after each hook run its ``capture_keys`` row
names the nodes the writer acknowledged; no row and the hook logged a spool
means spooled, resolved once the writer drains it; no row and no spool is a
capture the plan skipped (an unchanged re-read, a refused one). Every
purge's audit row is collected as it is written. At the end: the backlogs
drained, idle CPU over ``--idle-s`` seconds, PRAGMA integrity_check and
memtree's own index checks, and "lost" = acknowledged (or spooled) node ids
that are neither in the store nor purged by the pruner. The table shows
each tenth of the run; the summary checks the issue's goals.

Goals: RSS per actor within +-10 % between the first and the last tenth;
the store never over the budget by more than one pruner interval's captures
(the payload bytes of the busiest such interval x store bytes per payload
byte, measured before the budget first came near); 0 lost; integrity clean.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from memtree.eval.soak_payloads import Workload, corpus
from memtree.eval.soak_report import goals, report, tenths

MIB = 1048576
COLD_START_S = 90  # supervisor + front (MCP SDK import) + writer + walkers on a loaded 2-core box
STATUSES = ("pending", "live", "stale", "superseded", "pruned", "dropped")


def soak_config(args) -> dict:
    return {
        "storage": {"maxBytes": int(args.max_mib * MIB)},
        # A month in minutes: what waits hours or days in use waits seconds here.
        "retention": {"staleHours": 60 / 3600, "supersededDays": 60 / 86400, "prunedDays": 120 / 86400},
        "walkers": {
            "prunerIntervalMs": int(args.pruner_s * 1000),
            "stalenessIntervalMs": 5000,
            "dedupeIntervalMs": 10000,
            "embeddingIdleMs": 1000,
            "summarizerIntervalMs": 15000,
        },
    }


class System:
    """The project, its environment and the served memtree."""

    def __init__(self, work: str, args):
        from memtree.paths import compute_project, store_paths

        self.work = work
        self.project = os.path.join(work, "project")
        self.home = os.path.join(work, "home")
        os.makedirs(os.path.join(self.project, ".memtree"), exist_ok=True)
        os.makedirs(os.path.join(self.project, ".soak"), exist_ok=True)
        os.makedirs(self.home, exist_ok=True)
        self.config = soak_config(args)
        with open(os.path.join(self.project, ".memtree", "config.json"), "w") as f:
            json.dump(self.config, f)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTREE_", "CLAUDE_"))}
        self.env["MEMTREE_HOME"] = self.home
        os.environ["MEMTREE_HOME"] = self.home  # for this process's own paths and ctl calls
        root, phash, _ = compute_project(self.project)
        self.paths = store_paths(root, phash, home=self.home)
        self._conn = None
        self._sups = None

    # -- read side -------------------------------------------------------------------
    def conn(self):
        from memtree.store import db as store_db

        if self._conn is None and os.path.exists(self.paths.db):
            self._conn = store_db.open_read(self.paths.db)
        return self._conn

    def statuses(self) -> list[dict]:
        from memtree.ops.ctl import NotRunning, Supervisors

        try:
            if self._sups is None:
                self._sups = Supervisors(self.paths)
            return [a for s in self._sups.statuses().values() for a in s["actors"]]
        except NotRunning:
            return []

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._sups is not None:
            self._sups.close()

    # -- hooks -----------------------------------------------------------------------
    def hook(self, payload: dict, what: str | None = None) -> tuple[int, bytes, float, int]:
        """(pid, stdout, seconds, payload bytes) of one hook run exactly as `memtree install` registers it."""
        from memtree.ops.install import hook_argv

        t0 = time.perf_counter()
        proc = subprocess.Popen(
            hook_argv() + ([what] if what else []),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.project,
            env=self.env,
        )
        data = json.dumps(payload).encode()
        out, _ = proc.communicate(data, timeout=60)
        return proc.pid, out, time.perf_counter() - t0, len(data)


class HookLog:
    """The hook's own log, read as it grows: which runs spooled."""

    def __init__(self, path: str):
        self.path, self.pos = path, 0
        self.spooled: set[int] = set()
        self.other: list[str] = []

    def read(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        self.pos += end
        for line in data[:end].decode("utf-8", "replace").splitlines():
            m = re.search(r"hook\[(\d+)\]: (.*)", line)
            if m and m.group(2).endswith("; spooled"):
                self.spooled.add(int(m.group(1)))
            elif m:
                self.other.append(m.group(2))


class Ledger:
    """Every capture's fate, and every purge the audit records."""

    def __init__(self):
        self.acked: dict[str, list[str]] = {}  # tool_use_id -> node ids the writer answered with
        self.spooled: set[str] = set()  # spooled, not yet drained
        self.drained: set[str] = set()
        self.skipped = 0
        self.purged: set[str] = set()
        self.audit_seq = 0

    @staticmethod
    def key_ids(conn, tool_use_id: str) -> list[str] | None:
        prefix = tool_use_id[:200] + ":"
        row = conn.execute(
            "SELECT result FROM capture_keys WHERE key >= ? AND key < ? LIMIT 1", (prefix, prefix[:-1] + ";")
        ).fetchone()
        if row is None:
            return None
        result = json.loads(row[0])
        return [i for i in (result.get("stored") or []) + (result.get("deduped") or []) if isinstance(i, str)]

    def settle(self, conn) -> None:
        for tid in list(self.spooled):
            ids = self.key_ids(conn, tid)
            if ids is not None:
                self.spooled.discard(tid)
                self.drained.add(tid)
                self.acked[tid] = ids

    def read_audit(self, conn) -> None:
        for seq, node_id in conn.execute(
            "SELECT seq, node_id FROM audit WHERE seq > ? AND action = 'purge' ORDER BY seq", (self.audit_seq,)
        ):
            self.audit_seq = seq
            self.purged.add(node_id)
        top = conn.execute("SELECT max(seq) FROM audit").fetchone()[0]
        self.audit_seq = max(self.audit_seq, top or 0)

    @staticmethod
    def purges_total(conn) -> int:
        """Every purge the store records: rows still in the audit, and those Tidy compacted into counts."""
        rows = conn.execute("SELECT count(*) FROM audit WHERE action = 'purge'").fetchone()[0]
        rolled = conn.execute("SELECT COALESCE(SUM(n), 0) FROM audit_rollup WHERE action = 'purge'").fetchone()[0]
        return rows + rolled

    def lost(self, conn) -> list[str]:
        ids = {i for v in self.acked.values() for i in v}
        present = set()
        ids_l = sorted(ids)
        for k in range(0, len(ids_l), 500):
            part = ids_l[k : k + 500]
            q = "SELECT id FROM nodes WHERE id IN (" + ",".join("?" * len(part)) + ")"
            present.update(r[0] for r in conn.execute(q, part))
        return sorted(ids - present - self.purged)


def transcript(payload: dict) -> None:
    """The call and its result in the session's transcript, as Claude Code writes them
    (what the Stop hook compares the hook's accounting with)."""
    use = {
        "type": "tool_use",
        "id": payload["tool_use_id"],
        "name": payload["tool_name"],
        "input": payload["tool_input"],
    }
    res = {
        "type": "tool_result",
        "tool_use_id": payload["tool_use_id"],
        "is_error": payload["hook_event_name"] == "PostToolUseFailure",
    }
    with open(payload["transcript_path"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [use]}}) + "\n")
        f.write(json.dumps({"type": "user", "message": {"role": "user", "content": [res]}}) + "\n")


def sample(system: System, ledger: Ledger, t0: float, captures: int) -> dict:
    from memtree.store import budget

    conn = system.conn()
    out = {"t": round(time.monotonic() - t0, 1), "captures": captures}
    if conn is not None:
        ledger.settle(conn)
        ledger.read_audit(conn)
        out["store_bytes"] = budget.store_bytes(conn)
        out["file_bytes"] = budget.file_bytes(system.paths.db)
        counts = dict(conn.execute("SELECT status, count(*) FROM nodes GROUP BY status").fetchall())
        out["status"] = {s: counts.get(s, 0) for s in STATUSES}
    out["actors"] = {}
    for a in system.statuses():
        out["actors"][a["name"]] = {
            "rss": a.get("rss"),
            "backlog": a.get("backlog"),
            "restarts": a.get("restarts"),
            "pid": a.get("pid"),
            "info": a.get("info") or {},
        }
    return out


def wait_running(system: System, deadline_s: float) -> list[dict]:
    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        actors = system.statuses()
        if actors and all(a["state"] == "RUNNING" for a in actors) and len(actors) >= 7:
            return actors
        time.sleep(0.5)
    raise SystemExit(f"memtree serve did not start every actor within {deadline_s:g}s: {actors}")


def idle_cpu(system: System, seconds: float) -> dict:
    """CPU % (of one core) of the supervisor and each actor over ``seconds`` with nothing to do."""
    import psutil

    procs = {}
    for a in system.statuses():
        if a.get("pid"):
            procs[a["name"]] = psutil.Process(a["pid"])
    sup = system._sups and next(iter(system._sups.callers), None)
    if sup:
        procs["supervisor"] = psutil.Process(sup)

    def cpu(p):
        try:
            t = p.cpu_times()
            return t.user + t.system
        except psutil.Error:
            return 0.0

    before = {n: cpu(p) for n, p in procs.items()}
    time.sleep(seconds)
    return {n: round(100 * (cpu(p) - before[n]) / seconds, 2) for n, p in procs.items()}


def drain(system: System, ledger: Ledger, deadline_s: float) -> float:
    """Wait until nothing is pending, spooled or left to embed; returns the seconds it took."""
    from memtree.capture import spool

    t0 = time.monotonic()
    while time.monotonic() - t0 < deadline_s:
        conn = system.conn()
        ledger.settle(conn)
        pending = conn.execute("SELECT count(*) FROM nodes WHERE status = 'pending'").fetchone()[0]
        backlog = {a["name"]: a.get("backlog") or 0 for a in system.statuses()}
        if (
            not pending
            and not ledger.spooled
            and spool.oldest_ts(system.paths.spool) == 0
            and not backlog.get("walker.embed")
            and not backlog.get("walker.filter")
        ):
            return time.monotonic() - t0
        time.sleep(0.5)
    return time.monotonic() - t0


def run(args) -> dict:
    import anyio  # noqa: F401 - the MCP client's event loop
    from anyio.from_thread import start_blocking_portal
    from mcp import Client, StdioServerParameters

    work = tempfile.mkdtemp(prefix="soak-", dir="/tmp")
    system = System(work, args)
    files = corpus(args.files)
    load = Workload(system.project, files, seed=args.seed)
    log = HookLog(os.path.join(system.paths.log_dir, "hook.log"))
    ledger = Ledger()
    samples: list[dict] = []
    hook_s: list[tuple[int, float, float, int]] = []  # (capture number, when, seconds, payload bytes)
    recall_s: list[tuple[int, float]] = []
    recall_errors: list[str] = []
    watched_edits = file_changed = 0
    params = StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "memtree.cli", "serve"], cwd=system.project, env=system.env
    )
    result: dict = {"files": len(files), "config": system.config, "work": work}
    try:
        with start_blocking_portal() as portal:
            with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S)) as client:
                t_start = time.monotonic()
                wait_running(system, COLD_START_S)
                result["start_s"] = round(time.monotonic() - t_start, 1)
                t0 = time.monotonic()
                n = 0
                last_sample = 0.0
                for s in range(args.sessions):
                    if args.deadline_min and time.monotonic() - t0 > args.deadline_min * 60:
                        result["stopped_early_after_sessions"] = s  # the run's time limit: fewer sessions
                        break
                    if s:
                        load.between_sessions()
                    sid = str(uuid.UUID(int=load.rng.getrandbits(128)))
                    out = system.hook(load.session_start(sid), "session-start")[1]
                    try:
                        watch = set(json.loads(out)["hookSpecificOutput"].get("watchPaths") or []) if out else set()
                    except (ValueError, KeyError, TypeError):
                        watch = set()
                    for kind, item in load.session(sid, args.captures):
                        if kind == "edit":
                            if item in watch:  # Claude Code watches it: FileChanged runs
                                watched_edits += 1
                                system.hook(load.file_changed(sid, item), "file-changed")
                                file_changed += 1
                            continue
                        transcript(item)
                        pid, _, secs, size = system.hook(item)
                        n += 1
                        hook_s.append((n, time.monotonic() - t0, secs, size))
                        if system.conn() is not None:  # purge rows before Tidy compacts them into counts
                            ledger.read_audit(system.conn())
                        ids = Ledger.key_ids(system.conn(), item["tool_use_id"]) if system.conn() else None
                        if ids is not None:
                            ledger.acked[item["tool_use_id"]] = ids
                        else:
                            log.read()
                            if pid in log.spooled:
                                ledger.spooled.add(item["tool_use_id"])
                            else:
                                ledger.skipped += 1
                        if n % args.query_every == 0:
                            q = load.query()
                            t = time.perf_counter()
                            res = portal.call(client.call_tool, "recall", {"query": q})
                            recall_s.append((n, time.perf_counter() - t))
                            if res.is_error:
                                recall_errors.append(res.content[0].text[:200])
                        if time.monotonic() - last_sample >= args.sample_s:
                            last_sample = time.monotonic()
                            samples.append(sample(system, ledger, t0, n))
                    system.hook(load.stop(sid), "stop")
                result["drive_s"] = round(time.monotonic() - t0, 1)
                samples.append(sample(system, ledger, t0, n))
                result["drain_s"] = round(drain(system, ledger, args.drain_s), 1)
                # One more pruner interval: whatever the last captures pushed over the budget goes.
                time.sleep(args.pruner_s * 1.5)
                samples.append(sample(system, ledger, t0, n))
                result["idle_cpu"] = idle_cpu(system, args.idle_s)
                samples.append(sample(system, ledger, t0, n))
                conn = system.conn()
                ledger.read_audit(conn)
                result["lost"] = ledger.lost(conn)
                result["purges_total"] = ledger.purges_total(conn)
                result["integrity_check"] = [r[0] for r in conn.execute("PRAGMA integrity_check")]
                from memtree.store import integrity

                problems, facts = integrity.check(system.paths.db)
                result["index_problems"], result["index_facts"] = problems, facts
                pids = [a["pid"] for a in system.statuses() if a.get("pid")]
                pids += list(system._sups.callers) if system._sups else []
                system.close()
        result["serve_stopped"] = _stopped(pids)
    finally:
        system.close()
        log.read()
        result["log_errors"] = _log_errors(system.paths.log_dir)
        result["capture_gaps"] = [x for x in log.other if x.startswith("capture GAP")]
        result["hook_log_other"] = sorted({x for x in log.other if not x.startswith("capture GAP")})[:10]
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    result.update(
        captures=n,
        calls=load.calls,
        edits=load.edits,
        watched_edits=watched_edits,
        file_changed_hooks=file_changed,
        acked=len(ledger.acked) - len(ledger.drained),
        spooled_drained=len(ledger.drained),
        spooled_left=len(ledger.spooled),
        skipped=ledger.skipped,
        purged_seen=len(ledger.purged),
        recall_errors=recall_errors[:5],
        samples=samples,
        hook_s=hook_s,
        recall_s=recall_s,
    )
    return result


def _log_errors(log_dir: str) -> dict:
    """Per actor log: ERROR lines and tracebacks, and the first of them."""
    out = {}
    for name in sorted(os.listdir(log_dir)) if os.path.isdir(log_dir) else ():
        with open(os.path.join(log_dir, name), encoding="utf-8", errors="replace") as f:
            bad = [ln.strip() for ln in f if " ERROR " in ln or ln.startswith("Traceback")]
        if bad:
            out[name] = {"lines": len(bad), "first": bad[0][:240]}
    return out


def _stopped(pids: list[int], deadline_s: float = 30) -> bool:
    """The client left: every process of the session gone within the deadline."""
    import psutil

    until = time.monotonic() + deadline_s
    while time.monotonic() < until:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        if not alive:
            return True
        time.sleep(0.2)
    return False


def parse(argv):
    p = argparse.ArgumentParser(prog="memtree.eval.soak", description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=300, help="sessions (full scale: 300)")
    p.add_argument("--captures", type=int, default=200, help="captures per session (full scale: 200)")
    p.add_argument("--files", type=int, default=150, help="code files in the project")
    p.add_argument("--max-mib", type=float, default=8, help="storage.maxBytes in MiB")
    p.add_argument("--pruner-s", type=float, default=10, help="walkers.prunerIntervalMs in seconds")
    p.add_argument("--query-every", type=int, default=5, help="a recall through MCP every N captures")
    p.add_argument("--sample-s", type=float, default=3, help="seconds between samples")
    p.add_argument("--idle-s", type=float, default=10, help="idle CPU measured over this long at the end")
    p.add_argument("--drain-s", type=float, default=300, help="at most this long for backlogs to drain at the end")
    p.add_argument("--deadline-min", type=float, default=0, help="start no session after this many minutes (0: none)")
    p.add_argument("--seed", type=int, default=17)
    p.add_argument("--json", metavar="PATH", help="write the summary and goals as JSON")
    p.add_argument("--keep", action="store_true", help="keep the temporary project and store")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    result = run(args)
    rows = tenths(result)
    g = goals(result, rows, args)
    report(result, rows, g, args)
    if args.json:
        slim = {k: v for k, v in result.items() if k not in ("samples", "hook_s", "recall_s")}
        with open(args.json, "w") as f:
            json.dump({"result": slim, "goals": g, "last_sample": result["samples"][-1]}, f, indent=2, default=str)
    return 0 if all(g[k] for k in ("rss_flat", "budget_held", "lost_zero", "integrity_clean")) else 1


if __name__ == "__main__":
    sys.exit(main())
