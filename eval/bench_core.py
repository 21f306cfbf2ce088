"""Core figures (issue 2): boot, note round trip, keyword search, writer throughput.

    .venv/bin/python -m memtree.eval.bench_core [--starts 10] [--notes 10000]

Prints medians and p95s beside baselines measured in the same run:
- `memtree serve` spawn -> MCP initialize answered (cold starts) beside
  `python -c "import mcp"`, and the biggest imports of the front;
- note write round trip over real stdio;
- keyword search over real stdio at N notes;
- writer throughput (group commit, concurrent clients) beside raw apsw
  inserting the rows it stored (nodes + audit) into the same schema, in the
  writer's mean transaction size and in one (eval/bench_writer has more).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from memtree.eval.stats import fmt_ms, summary


def _memtree() -> list[str]:
    exe = shutil.which("memtree", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-P", "-m", "memtree.cli"]


def _env(home: str) -> dict:
    return {**os.environ, "MEMTREE_HOME": home}


def bench_import_mcp(n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import mcp"], check=True)
        out.append(time.perf_counter() - t0)
    return out


async def _one_start(project: str, env: dict) -> float:
    from mcp import Client, StdioServerParameters

    cmd = _memtree()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "serve"], cwd=project, env=env)
    t0 = time.perf_counter()
    async with Client(params, mode="legacy", read_timeout_seconds=60):
        took = time.perf_counter() - t0
    return took


def bench_starts(n: int, workdir: str) -> list[float]:
    import anyio

    out = []
    for i in range(n):
        project = os.path.join(workdir, f"boot{i}")
        os.makedirs(project)
        out.append(anyio.run(_one_start, project, _env(os.path.join(workdir, "home-boot"))))
    return out


def importtime_front(top: int = 8) -> list[tuple[int, str]]:
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import memtree.actors.mcp_front"], capture_output=True, text=True
    )
    rows = []
    for line in res.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            raw = parts[2].rstrip()
            if len(raw) - len(raw.lstrip()) <= 3:  # the front and what it imports directly
                rows.append((int(parts[1]), raw.strip()))
    return sorted(rows, reverse=True)[:top]


async def _session_figures(project: str, env: dict, notes: list[int], searches: int, tput_rows: int) -> dict:
    from mcp import Client, StdioServerParameters

    from memtree import protocol
    from memtree.paths import paths_for_cwd

    cmd = _memtree()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "serve"], cwd=project, env=env)
    figures: dict = {}
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        rtt = []
        for i in range(200):
            t0 = time.perf_counter()
            await client.call_tool("recall", {"note": f"round trip note {i} about the parser and the cache layer"})
            rtt.append(time.perf_counter() - t0)
        figures["note_rtt"] = rtt

        os.environ["MEMTREE_HOME"] = env["MEMTREE_HOME"]
        endpoint = paths_for_cwd(project).endpoint(protocol.SOCK_WRITE)
        figures["tput"] = {c: _writer_phase(endpoint, paths_for_cwd(project).db, tput_rows, c) for c in (1, 8)}
        words = ["parser", "cache", "socket", "budget", "walker", "sqlite", "token", "hook", "spool", "graph"]

        def seed_text(i: int) -> str:
            w = words[i % 10], words[(i * 7) % 10], words[(i * 3) % 10]
            return f"note {i}: the {w[0]} talks to the {w[1]} through the {w[2]} ({i})"

        seeded, figures["search"] = 0, {}
        for size in notes:
            t0 = time.perf_counter()
            add_notes(endpoint, size - seeded, 8, lambda i, base=seeded: seed_text(base + i))
            figures.setdefault("seed_s", {})[size] = time.perf_counter() - t0
            seeded = size
            # broad: two of ten words, each in ~30% of notes (~half the store matches and is ranked);
            # selective: one note's number, a single match.
            for label, query in (
                ("broad", lambda i: f"{words[i % 10]} {words[(i * 7) % 10]}"),
                ("selective", lambda i, n=size: f"({(i * 7919) % n})"),
            ):
                lat = []
                for i in range(searches):
                    t0 = time.perf_counter()
                    await client.call_tool("recall", {"query": query(i), "opts": "mode=keyword limit=10"})
                    lat.append(time.perf_counter() - t0)
                figures["search"][(size, label)] = lat
    return figures


def _writer_phase(endpoint: str, db_path: str, rows: int, clients: int) -> dict:
    """notes/s through the writer, its mean batch, and the rows it stored (for raw apsw to insert again)."""
    from memtree.eval.bench_writer import stored_rows, writer_stats
    from memtree.runtime.client import Caller

    caller = Caller(endpoint, src="bench", timeout_ms=60000)
    marks = stored_rows(db_path, (0, 0))[2]
    req0, batch0 = writer_stats(caller)
    rate = add_notes(endpoint, rows, clients, _row)
    req1, batch1 = writer_stats(caller)
    caller.close()
    nodes, audit, _ = stored_rows(db_path, marks)
    return {"rate": rate, "batch": (req1 - req0 - 1) / max(1, batch1 - batch0 - 1), "nodes": nodes, "audit": audit}


def _note_threads(endpoint: str, indexes: range, clients: int, text, start=None, done=None) -> None:
    """``clients`` threads with one DEALER each adding the notes ``text(i)`` of
    ``indexes`` between them, each call waiting for its ack; after ``start``
    (a barrier) when given, and waiting at ``done`` (one too) once every ack came."""
    from memtree import protocol
    from memtree.runtime.client import Caller

    errors: list[BaseException] = []

    def worker(k: int) -> None:
        caller = Caller(endpoint, src=f"bench{os.getpid()}-{k}", timeout_ms=60000)
        try:
            for i in indexes[k::clients]:
                caller.call(protocol.AddNode(kind="note", status="live", content=text(i)))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
        finally:
            caller.close()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    if start is not None:
        start.wait(120)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if done is not None:
        if errors:
            done.abort()  # the parent stops waiting and reports the failure
            raise errors[0]
        done.wait(600)
    if errors:
        raise errors[0]


def add_notes(endpoint: str, rows: int, clients: int, text, procs: int = 1) -> float:
    """Add ``rows`` live notes (``text(i)``) through the real writer from
    ``clients`` threads, one DEALER each, spread over ``procs`` client
    processes (as hooks, walkers and the front are: threads of one process
    share its GIL, which bounds how fast they ask); returns notes/s, timed
    from when every process is ready until every one has its acks (not until
    they exit: an interpreter's teardown took ~10 % of a 4,000-note phase).
    ``text`` is a module-level function when ``procs`` > 1 (it is sent to the
    processes)."""
    if procs <= 1:
        t0 = time.perf_counter()
        _note_threads(endpoint, range(rows), clients, text)
        return rows / (time.perf_counter() - t0)
    import multiprocessing

    mp = multiprocessing.get_context("spawn")  # never a fork of a process holding ZeroMQ sockets
    start, done = mp.Barrier(procs + 1), mp.Barrier(procs + 1)
    per = [max(1, clients // procs + (k < clients % procs)) for k in range(procs)]
    workers = [
        mp.Process(target=_note_threads, args=(endpoint, range(k, rows, procs), per[k], text, start, done), daemon=True)
        for k in range(procs)
    ]
    for w in workers:
        w.start()
    try:
        start.wait(120)
        t0 = time.perf_counter()
        try:
            done.wait(600)
        except threading.BrokenBarrierError:
            pass  # a client process failed: its exit code is reported below
        took = time.perf_counter() - t0
        for w in workers:
            w.join(600)
    finally:
        for w in workers:
            if w.is_alive():
                w.kill()
                w.join(10)
    failed = [w.exitcode for w in workers if w.exitcode != 0]
    if failed:
        raise RuntimeError(f"client processes failed (exit codes {failed}); see their traceback above")
    return rows / took


def _row(i: int) -> str:
    return f"throughput note {i}: the writer batches concurrent requests into one transaction"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--notes", default="10000,100000", help="store sizes to search at, comma-separated")
    ap.add_argument("--searches", type=int, default=200)
    ap.add_argument("--throughput-rows", type=int, default=4000)
    args = ap.parse_args(argv)
    import anyio

    workdir = tempfile.mkdtemp(prefix="memtree-bench-")
    try:
        base = bench_import_mcp(args.starts)
        starts = bench_starts(args.starts, workdir)
        print(f"boot: python -c 'import mcp'              {fmt_ms(summary(base))}")
        print(
            f"boot: memtree serve -> initialize answered {fmt_ms(summary(starts))}"
            f"  ratio {summary(starts)['median'] / summary(base)['median']:.2f}x"
        )
        print("boot: biggest imports of the front (cumulative us):")
        for us, name in importtime_front():
            print(f"        {us:>9}  {name}")
        project = os.path.join(workdir, "session")
        os.makedirs(project)
        figs = anyio.run(
            _session_figures,
            project,
            _env(os.path.join(workdir, "home")),
            sorted(int(n) for n in args.notes.split(",")),
            args.searches,
            args.throughput_rows,
        )
        print(f"note write round trip over stdio           {fmt_ms(summary(figs['note_rtt']))}")
        for (size, label), lat in figs["search"].items():
            print(
                f"keyword search, {label:<9} at {size:>6} notes over stdio  {fmt_ms(summary(lat))}"
                f"  (seeded through the writer in {figs['seed_s'][size]:.0f}s)"
            )
        from memtree.eval.bench_writer import raw_insert

        for clients in (1, 8):
            print(
                f"writer throughput, {clients} client(s), group commit: {figs['tput'][clients]['rate']:8.0f} notes/s"
                f"  (mean batch {figs['tput'][clients]['batch']:.1f})"
            )
        at8 = figs["tput"][8]
        for label, per_tx in (("its mean batch", round(at8["batch"])), ("one transaction", len(at8["nodes"]))):
            raw, _cpu = raw_insert(workdir, at8["nodes"], at8["audit"], per_tx)
            print(
                f"raw apsw, the same rows (nodes + audit), {label:<15}: {raw:8.0f} rows/s"
                f"  (writer at 8 clients = {at8['rate'] / raw:.1%} of raw)"
            )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
