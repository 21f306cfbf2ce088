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
from memtree.eval.stats import summary

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


# -- the report ----------------------------------------------------------------------
ACTORS = (
    "mcp",
    "writer",
    "walker.filter",
    "walker.staleness",
    "walker.pruner",
    "walker.embed",
    "walker.dedupe",
    "walker.summarize",
)


def tenths(result: dict) -> list[dict]:
    n = max(1, result["captures"])
    rows = []
    drive = [x for x in result["samples"] if x["captures"] <= n]
    for k in range(10):
        lo, hi = n * k / 10, n * (k + 1) / 10
        inside = [x for x in drive if lo < x["captures"] <= hi] or [min(drive, key=lambda x: abs(x["captures"] - hi))]
        last = inside[-1]
        hooks = [h[2] for h in result["hook_s"] if lo < h[0] <= hi]
        recalls = [r[1] for r in result["recall_s"] if lo < r[0] <= hi]
        row = {
            "tenth": k + 1,
            "captures": last["captures"],
            "t": last["t"],
            "store_mib": max(x.get("store_bytes", 0) for x in inside) / MIB,
            "disk_mib": max(x.get("file_bytes", 0) for x in inside) / MIB,
            "hook": summary(hooks) if hooks else None,
            "recall": summary(recalls) if recalls else None,
            "status": last.get("status", {}),
            "backlog": {
                a: max((x["actors"].get(a, {}).get("backlog") or 0) for x in inside)
                for a in ("walker.filter", "walker.embed", "walker.dedupe", "walker.summarize")
            },
            "rss": {},
            "pruner": last["actors"].get("walker.pruner", {}).get("info", {}),
        }
        for a in ACTORS:
            vals = [x["actors"][a]["rss"] for x in inside if x["actors"].get(a, {}).get("rss")]
            row["rss"][a] = sum(vals) / len(vals) / MIB if vals else None
        rows.append(row)
    return rows


def goals(result: dict, rows: list[dict], args) -> dict:
    limit = result["config"]["storage"]["maxBytes"]
    drive = [x for x in result["samples"] if "store_bytes" in x]
    # Store bytes per payload byte, from the samples before the budget first came near
    # (the pruner had removed nothing yet); captures differ in size, so the allowance
    # is the payload bytes of the busiest pruner interval at that rate.
    sent = [0]  # payload bytes sent up to capture n
    for h in result["hook_s"]:
        sent.append(sent[-1] + h[3])
    before = []
    for x in drive:
        if x["store_bytes"] >= 0.9 * limit:
            break
        before.append(x)
    if len(before) >= 2 and sent[before[-1]["captures"]] > sent[before[0]["captures"]]:
        per_byte = (before[-1]["store_bytes"] - before[0]["store_bytes"]) / (
            sent[before[-1]["captures"]] - sent[before[0]["captures"]]
        )
    else:  # the budget bit before two samples: the whole run's peak per byte sent (an overestimate)
        per_byte = max((x["store_bytes"] for x in drive), default=0) / max(1, sent[-1])
    busiest = busiest_n = j = 0
    hooks = result["hook_s"]
    for i, h in enumerate(hooks):  # the payload bytes of the busiest pruner interval
        while hooks[j][1] < h[1] - args.pruner_s:
            j += 1
        window = sent[h[0]] - sent[hooks[j][0] - 1]
        if window > busiest:
            busiest, busiest_n = window, i - j + 1
    per_capture = sent[-1] * per_byte / max(1, len(hooks))
    allowance = busiest * per_byte if per_byte > 0 else None
    peak = max((x["store_bytes"] for x in drive), default=0)
    end = drive[-1]["store_bytes"] if drive else 0
    rss = {}
    for a in ACTORS:
        first, second, last = rows[0]["rss"].get(a), rows[1]["rss"].get(a), rows[-1]["rss"].get(a)
        if first and last:
            rss[a] = {"first_mib": round(first, 1), "last_mib": round(last, 1), "change": round(last / first - 1, 3)}
            if second:  # past the warm-up (caches, the model, the first imports of a handler)
                rss[a]["change_from_second"] = round(last / second - 1, 3)
    restarts = {a: v.get("restarts") for a, v in (drive[-1]["actors"] if drive else {}).items() if v.get("restarts")}
    bit = any(x["store_bytes"] > limit for x in drive) or bool(
        result["samples"][-1]["actors"].get("walker.pruner", {}).get("info", {}).get("over_budget_removed")
    )
    return {
        "rss_flat": bool(rss) and all(abs(v["change"]) <= 0.10 for v in rss.values()),
        "rss": rss,
        "restarts": restarts,
        "budget_held": allowance is not None and peak - limit <= allowance and end <= limit,
        "budget_bit": bit,
        "budget": {
            "max_bytes": limit,
            "peak_bytes": peak,
            "end_bytes": end,
            "over_peak_bytes": max(0, peak - limit),
            "bytes_per_capture": round(per_capture) if per_capture else None,
            "captures_in_busiest_pruner_interval": busiest_n,
            "payload_bytes_in_busiest_pruner_interval": busiest,
            "store_bytes_per_payload_byte": round(per_byte, 3),
            "allowance_bytes": round(allowance) if allowance else None,
        },
        # An id gone without a purge row seen is lost unless a purge compacted into counts
        # before it was read accounts for it (the counts keep no ids, so this is by number).
        "unseen_purges": result["purges_total"] - result["purged_seen"],
        "lost_unexplained": max(0, len(result["lost"]) - (result["purges_total"] - result["purged_seen"])),
        "lost_zero": len(result["lost"]) <= result["purges_total"] - result["purged_seen"]
        and not result["spooled_left"]
        and not result["capture_gaps"],
        "integrity_clean": result["integrity_check"] == ["ok"] and not result["index_problems"],
    }


def _ms(st) -> str:
    return "-" if st is None else f"{st['median'] * 1000:.0f}/{st['p95'] * 1000:.0f}"


def report(result: dict, rows: list[dict], g: dict, args) -> None:
    limit_mib = result["config"]["storage"]["maxBytes"] / MIB
    if result.get("stopped_early_after_sessions") is not None:
        print(f"soak: --deadline-min reached: {result['stopped_early_after_sessions']} of {args.sessions} sessions run")
    print(
        f"soak: {args.sessions} sessions x {args.captures} captures = {result['captures']} hook runs, "
        f"{result['files']} files, storage.maxBytes {limit_mib:g} MiB, pruner every {args.pruner_s:g} s, "
        f"recall every {args.query_every} captures"
    )
    print(
        "\ntenth  captures     t_s  store_MiB  disk_MiB  hook_ms p50/p95  recall_ms p50/p95"
        "   live  stale  supsd  pruned  dropped  pend  purged  over_budget  backlog f/e/d/s"
    )
    for r in rows:
        st, p, b = r["status"], r["pruner"], r["backlog"]
        print(
            f"{r['tenth']:>5}  {r['captures']:>8}  {r['t']:>6.0f}  {r['store_mib']:>9.2f}  {r['disk_mib']:>8.2f}  "
            f"{_ms(r['hook']):>15}  {_ms(r['recall']):>17}  {st.get('live', 0):>5}  {st.get('stale', 0):>5}  "
            f"{st.get('superseded', 0):>5}  {st.get('pruned', 0):>6}  {st.get('dropped', 0):>7}  {st.get('pending', 0):>4}  "
            f"{p.get('purged', 0):>6}  {p.get('over_budget_removed', 0):>11}  "
            f"{b['walker.filter']}/{b['walker.embed']}/{b['walker.dedupe']}/{b['walker.summarize']}"
        )
    print("\nRSS MiB (mean over the tenth's samples)")
    print("tenth  " + "  ".join(f"{a.replace('walker.', ''):>9}" for a in ACTORS))
    for r in rows:
        print(f"{r['tenth']:>5}  " + "  ".join(f"{(r['rss'][a] or 0):>9.1f}" for a in ACTORS))
    b = g["budget"]
    hooks = summary([h[2] for h in result["hook_s"]])
    recalls = summary([r[1] for r in result["recall_s"]]) if result["recall_s"] else None
    rate = result["captures"] / max(result["drive_s"], 1e-9)
    print(
        f"\nrun: start {result['start_s']} s, driving {result['drive_s']} s ({rate:.2f} captures/s, hook + recall + "
        f"sampling), drain {result['drain_s']} s; full scale 300 x 200 = 60,000 captures at this rate: "
        f"{60000 / rate / 3600:.1f} h"
    )
    print(
        f"hook: {_ms(hooks)} ms p50/p95 (n={hooks['n']}); recall through MCP: {_ms(recalls)} ms p50/p95 "
        f"(n={recalls['n'] if recalls else 0}, errors {len(result['recall_errors'])})"
    )
    print(
        f"captures: {result['acked']} acked, {result['spooled_drained']} spooled and drained, "
        f"{result['spooled_left']} spooled not drained, {result['skipped']} skipped by the plan (unchanged re-reads, refused); "
        f"{result['edits']} file edits ({result['watched_edits']} watched -> {result['file_changed_hooks']} FileChanged hooks)"
    )
    last = result["samples"][-1]
    print(
        f"end: statuses {last.get('status')}; pruner {last['actors'].get('walker.pruner', {}).get('info')}; "
        f"purges seen in the audit {result['purged_seen']}"
    )
    print(f"idle CPU % over {args.idle_s:g} s: {result['idle_cpu']} (sum {sum(result['idle_cpu'].values()):.2f})")
    print(
        f"integrity: PRAGMA integrity_check {result['integrity_check'][:3]}; index checks "
        f"{result['index_problems'] or 'clean'} ({result['index_facts']}); serve stopped cleanly: {result['serve_stopped']}"
    )
    print(f"errors in the actors' logs: {result['log_errors'] or 'none'}")
    if result["hook_log_other"]:
        print(f"hook.log (other lines): {result['hook_log_other']}")
    if result["recall_errors"]:
        print(f"recall errors: {result['recall_errors']}")

    def mark(ok):
        return "MET" if ok else "NOT MET"

    print("\ngoals:")
    print(f"  RSS per actor within +-10 % first vs last tenth: {mark(g['rss_flat'])}")
    for a, v in g["rss"].items():
        print(
            f"      {a:<18} {v['first_mib']:>7.1f} -> {v['last_mib']:>7.1f} MiB  ({v['change'] * 100:+.1f} %; "
            f"from the second tenth {v.get('change_from_second', 0) * 100:+.1f} %)"
        )
    if g["restarts"]:
        print(f"      restarts: {g['restarts']}")
    print(
        f"  budget held (over by at most one pruner interval's captures): {mark(g['budget_held'])}; "
        f"peak {b['peak_bytes'] / MIB:.2f} MiB, end {b['end_bytes'] / MIB:.2f} MiB of {b['max_bytes'] / MIB:g} MiB; "
        f"over by {b['over_peak_bytes'] / 1024:.0f} KiB at most, allowance {((b['allowance_bytes'] or 0) / 1024):.0f} KiB "
        f"({b['captures_in_busiest_pruner_interval']} captures, {b['payload_bytes_in_busiest_pruner_interval'] / 1024:.0f} KiB "
        f"of payload x {b['store_bytes_per_payload_byte']} store bytes per payload byte; {b['bytes_per_capture']} B a capture "
        f"on average); the budget bit: {g['budget_bit']}"
    )
    print(
        f"  0 lost: {mark(g['lost_zero'])}: {len(result['lost'])} acknowledged ids gone without a purge row seen, "
        f"{g['unseen_purges']} purges whose rows Tidy compacted into counts before they were read "
        f"({result['purges_total']} purges in all, {result['purged_seen']} seen by id); unexplained {g['lost_unexplained']}; "
        f"spooled and never drained {result['spooled_left']}"
    )
    print(f"  integrity clean: {mark(g['integrity_clean'])}")
    print(
        f"  the Stop hook's capture check: {len(result['capture_gaps'])} sessions with a gap {result['capture_gaps'][:3]}"
    )


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
