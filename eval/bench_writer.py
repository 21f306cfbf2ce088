"""Writer throughput beside raw apsw inserting the same rows (issue 17 point 3).

    .venv/bin/python -m memtree.eval.bench_writer [--rows 4000] [--clients 1,8,32]
        [--client-procs 4] [--against /work/main/.venv/bin/python] [--acks 200] [--rounds 3]

For each client count: notes/s through the real writer process (clients are
threads with one DEALER each, every call waiting for its ack, as
bench_core's, spread over ``--client-procs`` processes as the writer's real
clients are: 32 threads of one process share its GIL and asked at ~12k
notes/s at most here, 4 processes at ~14k), the writer's CPU per note and
its mean batch (requests per transaction). Right after each phase, so both see the same machine load, the
rows that phase stored (its ``nodes`` and ``audit`` rows, read back from the
writer's database) are inserted with raw apsw ``executemany`` into a fresh
store of the same schema (every index and FTS trigger), with the writer
process's SQLite settings (store/db.py tune_process): once in transactions
of the writer's mean batch, once more so with each transaction's FTS rows
indexed in one statement at its end as the writer does (store/write/fts.py),
once in transactions of one request from every client (the batch the writer
made before it split batches between its peers: actors/writer.py
SPLIT_PEERS; a bigger transaction costs raw less a row), once in one
transaction. The ratios compare the
writer with both, by rate (wall clock) and by CPU per row (raw's CPU a row
over the writer process's CPU a note; on a shared box the rate of a
request/reply loop also pays for every wake-up the scheduler delays).

Then the capture path's ack (the hook's wait: one ZMTP connection per
Ingest of an ordinary Bash capture, as the hook sends it), alone and while
four clients' ordinary captures share batches with rewritten 40 KB Reads.
With ``--against PYTHON`` a second writer, run by that interpreter (another
checkout's venv: the code before a change), is measured in the same run,
phase by phase and ack by ack interleaved, so both see the same load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from memtree.eval.bench_core import _row

NODE_COLS = (
    "id, parent_id, kind, source_uri, content, content_hash, status, mtime, created_at, updated_at,"
    " truncated, original_bytes, metadata, session_id"
)
AUDIT_COLS = "at, actor, action, node_id, from_status, to_status, reason, detail"


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stored_rows(db_path: str, after: tuple[int, int]) -> tuple[list, list, tuple[int, int]]:
    """The nodes and audit rows stored after rowids ``after``, and the new high marks."""
    from memtree.store.db import open_read

    conn = open_read(db_path)
    try:
        nodes = conn.execute(f"SELECT rowid, {NODE_COLS} FROM nodes WHERE rowid > ? ORDER BY rowid", (after[0],))
        nodes = [tuple(r) for r in nodes]
        audit = conn.execute(f"SELECT seq, {AUDIT_COLS} FROM audit WHERE seq > ? ORDER BY seq", (after[1],))
        audit = [tuple(r) for r in audit]
    finally:
        conn.close()
    marks = (nodes[-1][0] if nodes else after[0], audit[-1][0] if audit else after[1])
    return [r[1:] for r in nodes], [r[1:] for r in audit], marks


def raw_insert(workdir: str, nodes: list, audit: list, per_tx: int, deferred: bool = False) -> tuple[float, float]:
    """Rows/s (nodes) and CPU seconds a row for raw apsw inserting ``nodes`` and
    ``audit`` into a fresh store of the same schema, ``per_tx`` nodes (and their
    share of audit rows) a transaction; with ``deferred``, each transaction's
    FTS rows indexed in one statement at its end, as the writer does."""
    from memtree.store.db import open_write
    from memtree.store.write import fts

    path = os.path.join(workdir, f"raw-{time.monotonic_ns()}.db")
    db = open_write(path)
    ins_node = f"INSERT INTO nodes({NODE_COLS}) VALUES ({','.join('?' * 14)})"
    ins_audit = f"INSERT INTO audit({AUDIT_COLS}) VALUES ({','.join('?' * 8)})"
    per_tx = max(1, per_tx)
    audit_per = len(audit) / max(1, len(nodes))
    t0, c0 = time.perf_counter(), time.thread_time()
    for start in range(0, len(nodes), per_tx):
        a, b = round(start * audit_per), round(min(len(nodes), start + per_tx) * audit_per)
        with db:
            if deferred:
                fts.defer(db)
            db.executemany(ins_node, nodes[start : start + per_tx])
            db.executemany(ins_audit, audit[a:b])
            if deferred:
                fts.index_deferred(db)
            fts.index_queued_definitions(db)  # the schema's own work before a commit, as the writer's
    took, cpu = time.perf_counter() - t0, time.thread_time() - c0
    db.close()
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(path + suffix)
        except FileNotFoundError:
            pass
    return len(nodes) / took, cpu / len(nodes)


def writer_stats(caller) -> tuple[int, int]:
    from memtree import protocol

    got = caller.call(protocol.Ping())
    return got.get("requests", 0), got.get("batches", 0)


class Subject:
    """One writer process under test, on its own store."""

    def __init__(self, workdir: str, label: str, python: str, config):
        from memtree import protocol
        from memtree.eval.recall_eval import start_actor
        from memtree.paths import prepare_store, store_paths
        from memtree.runtime.client import Caller

        self.label = label
        self.project = os.path.join(workdir, label)
        os.makedirs(self.project)
        self.paths = store_paths(
            self.project, f"{len(label):x}{label}"[:16].ljust(16, "0"), home=os.path.join(workdir, "home")
        )
        prepare_store(self.paths)
        self.proc = start_actor("memtree.actors.writer", "writer", self.paths, config, python)
        self.caller = Caller(self.paths.endpoint(protocol.SOCK_WRITE), src="bench", timeout_ms=60_000)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.caller.call(protocol.Ping(), timeout_ms=500)
                break
            except Exception:  # noqa: BLE001 - not up yet
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"writer {label} did not start; see {self.paths.log_file('writer')}") from None
        self.marks = stored_rows(self.paths.db, (0, 0))[2]
        self.ingest = self.paths.endpoint(protocol.SOCK_INGEST)

    def throughput(self, rows: int, clients: int, procs: int = 1) -> dict:
        """notes/s, CPU a note, mean batch (None when the writer does not count
        its batches: an older one) and the rows it stored."""
        from memtree import protocol
        from memtree.eval.bench_core import add_notes

        req0, batch0 = writer_stats(self.caller)
        cpu0 = _cpu_s(self.proc.pid)
        rate = add_notes(self.paths.endpoint(protocol.SOCK_WRITE), rows, clients, _row, procs)
        cpu = _cpu_s(self.proc.pid) - cpu0
        req1, batch1 = writer_stats(self.caller)
        mean_batch = (req1 - req0 - 1) / max(1, batch1 - batch0 - 1)  # less the Ping that read the stats
        nodes, audit, self.marks = stored_rows(self.paths.db, self.marks)
        return {
            "rate": rate,
            "cpu": cpu / rows,
            "batch": mean_batch if batch1 else None,
            "rows": (nodes, audit),
            "nodes": len(nodes),
            "audit": len(audit),
        }

    def ack(self, make, i: int, rewrite: bool = False) -> float:
        from memtree import protocol
        from memtree.capture import zmtp

        rid, frame = protocol.encode_ingest_raw(make(self.project, i), rewrite=rewrite)
        t0 = time.perf_counter()
        reply = zmtp.request(self.ingest, [frame], 30.0)
        took = time.perf_counter() - t0
        if not protocol.reply_is_ok(reply[-1], rid) and protocol.decode(reply[-1]).kind != "reply":
            raise SystemExit(f"writer {self.label}: bad ingest reply")
        return took

    def mixed(self, runs: int, base: int, clients: int = 4) -> tuple[list[float], list[float]]:
        """bench_hook's mixed batches against this writer."""
        from memtree.eval.bench_hook import mixed_batches

        return mixed_batches(self.ack, runs, base, base, clients)

    def close(self) -> None:
        from memtree.eval.recall_eval import stop

        self.caller.close()
        stop(self.proc)


def _print_tput(label: str, clients: int, runs: list[dict]) -> None:
    """Medians over the rounds (each round's raw figures are for that round's rows)."""
    med = statistics.median
    rate, cpu, batch = (med(r[k] for r in runs) for k in ("rate", "cpu", "batch"))
    lines = [
        f"  [{label}] {clients:>3} client(s), median of {len(runs)}: writer {rate:7.0f} notes/s, mean batch {batch:5.1f},"
        f" writer CPU {cpu * 1e6:5.0f} us/note; raw apsw, the same {runs[0]['nodes']} nodes + {runs[0]['audit']}"
        " audit rows:"
    ]
    for key, text in (
        ("same", f"{round(batch):>5} nodes a transaction:"),
        ("deferred", "the same, FTS deferred: "),
        ("full", f"{clients:>5} nodes (every client once):"),
        ("one", "one transaction:        "),
    ):
        raw, raw_cpu = med(r[key][0] for r in runs), med(r[key][1] for r in runs)
        lines.append(
            f"        {text} {raw:7.0f} rows/s, CPU {raw_cpu * 1e6:5.0f} us/row"
            f"  -> writer = {rate / raw:6.1%} of its rate, {raw_cpu / cpu:6.1%} of its CPU efficiency"
        )
    print("\n".join(lines), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4000, help="notes per phase")
    ap.add_argument("--clients", default="1,8,32", help="client counts, comma-separated")
    ap.add_argument(
        "--client-procs",
        type=int,
        default=4,
        help="processes the clients are spread over (1: threads of this one, whose GIL bounds their pace)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each phase (medians printed)")
    ap.add_argument("--acks", type=int, default=200, help="ingest acks per writer and series (0: none)")
    ap.add_argument("--against", help="interpreter of another checkout whose writer is measured beside this one")
    args = ap.parse_args(argv)

    from memtree.eval.bench_hook import _payload
    from memtree.eval.recall_eval import eval_config
    from memtree.eval.stats import fmt_ms, summary
    from memtree.store.db import tune_process

    # Raw apsw runs with the writer process's SQLite settings (store/db.py), so the
    # ratio compares the writer with the same SQLite, not with SQLite's defaults.
    if not tune_process():
        raise SystemExit("bench_writer: a SQLite connection was open before the raw runs could be set up")
    workdir = tempfile.mkdtemp(prefix="memtree-bench-writer-")
    subjects: list[Subject] = []
    try:
        subjects.append(Subject(workdir, "this", sys.executable, eval_config()))
        if args.against:
            subjects.append(Subject(workdir, "against", args.against, eval_config()))
        print(
            f"writer throughput beside raw apsw of the same rows; {args.rows} notes a phase; cores: {os.cpu_count()};"
            f" clients: threads of {args.client_procs} process(es);"
            f" writers: {', '.join(f'{s.label} ({s.proc.args[0]})' for s in subjects)}"
        )
        for clients in (int(c) for c in args.clients.split(",")):
            runs: dict[str, list[dict]] = {s.label: [] for s in subjects}
            for r in range(args.rounds):  # alternating order: neither writer always runs first
                for s in subjects if r % 2 == 0 else subjects[::-1]:
                    runs[s.label].append(s.throughput(args.rows, clients, min(args.client_procs, clients)))
                known = next(runs[s.label][-1]["batch"] for s in subjects if runs[s.label][-1]["batch"])
                for s in subjects:  # raw apsw, right after: a writer that counts no batches gets the other's size
                    f = runs[s.label][-1]
                    f["batch"] = f["batch"] or known
                    nodes, audit = f.pop("rows")
                    f["same"], f["full"], f["one"] = (
                        raw_insert(workdir, nodes, audit, n) for n in (round(f["batch"]), clients, len(nodes))
                    )
                    f["deferred"] = raw_insert(workdir, nodes, audit, round(f["batch"]), deferred=True)
            for s in subjects:
                _print_tput(s.label, clients, runs[s.label])
        if args.acks:
            acks: dict[str, list[float]] = {s.label: [] for s in subjects}
            for i in range(args.acks):  # interleaved: both writers see the same moments
                for s in subjects if i % 2 else subjects[::-1]:
                    acks[s.label].append(s.ack(_payload, 1_000_000 + i))
            print("\ningest ack (one ZMTP connection per ordinary Bash capture, as the hook sends it):")
            for s in subjects:
                print(f"  [{s.label}] {fmt_ms(summary(acks[s.label]))}")
            mixed: dict[str, tuple[list, list]] = {s.label: ([], []) for s in subjects}
            rounds = 4
            for r in range(rounds):
                for s in subjects if r % 2 else subjects[::-1]:
                    small, big = s.mixed(max(5, args.acks // 4 // rounds), 2_000_000 + r * 1_000_000)
                    mixed[s.label][0].extend(small)
                    mixed[s.label][1].extend(big)
            print("ingest ack, 4 clients of ordinary captures sharing batches with rewritten 40 KB Reads:")
            for s in subjects:
                print(f"  [{s.label}] ordinary: {fmt_ms(summary(mixed[s.label][0]))}")
                print(f"  [{s.label}] 40 KB Read + preview: {fmt_ms(summary(mixed[s.label][1]))}")
    finally:
        for s in subjects:
            s.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
