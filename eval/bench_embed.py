"""Embedding figures (issue 9): the model, the backlog, KNN, and what the embed walker costs others.

    .venv/bin/python -m memtree.eval.bench_embed [--sizes 10000,100000] [--backlog 10000] [--samples 100]

Prints, measured in this run:
- the bundled model: import + load time, embeddings/s at batch 32 over real
  code chunks (stdlib functions), resident memory after load and after use;
- a 10k-chunk backlog drained by the real embed walker into the real writer
  (chunks/s, wall time from walker spawn, walker and writer RSS);
- KNN at each size: raw sqlite-vec brute force beside memtree's knn() (live
  join) and search.run semantic / hybrid with a given query vector;
- ingest (writer AddNode) and hybrid search (query embedding over the
  walker's socket + search.run) p95 with the walker idle, CPU-bound
  (draining a backlog) and SIGSTOPped, as ratios to idle; the busy run also
  beside idle on the grown store once drained ("idle after"), so a ratio is
  not the store's growth;
- whole-system RSS of `memtree serve` (front included) with the model loaded.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time

from memtree.eval.stats import fmt_ms, summary
from memtree.runtime.group import start_group

MIB = 1024 * 1024


def code_chunks(limit: int) -> list[str]:
    """Function and class bodies from the standard library: real code no one here wrote."""
    lib = sysconfig.get_paths()["stdlib"]
    out = []
    for name in sorted(os.listdir(lib)):
        if not name.endswith(".py"):
            continue
        try:
            src = open(os.path.join(lib, name), encoding="utf-8").read()
            tree = ast.parse(src)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = src.splitlines()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.end_lineno - node.lineno < 120:
                out.append("\n".join(lines[node.lineno - 1 : node.end_lineno]))
                if len(out) >= limit:
                    return out
    return out


MODEL_PROBE = r"""
import json, sys, time, psutil
t0 = time.perf_counter()
from memtree.config import Config
from memtree.config.defaults import defaults
from memtree.recall.embeddings import load_provider
p = load_provider(Config(defaults(), []))
load = time.perf_counter() - t0
rss_load = psutil.Process().memory_info().rss
texts = json.load(sys.stdin)
t0 = time.perf_counter()
for i in range(0, len(texts), 32):
    p.embed(texts[i:i + 32])
took = time.perf_counter() - t0
print(json.dumps({"model": p.name, "dim": p.dim, "load_s": load, "per_s": len(texts) / took,
                  "rss_load": rss_load, "rss_used": psutil.Process().memory_info().rss}))
"""


def bench_model(texts: list[str]) -> dict:
    import json

    done = subprocess.run(
        [sys.executable, "-P", "-c", MODEL_PROBE], input=json.dumps(texts), capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


# -- actors without the supervisor -------------------------------------------------------


class Actors:
    """A writer and an embed walker as real processes on a scratch store."""

    def __init__(self, workdir: str, overrides: dict | None = None):
        from memtree.config.defaults import defaults
        from memtree.config.loader import Config, validate
        from memtree.paths import prepare_store, store_paths

        project = os.path.join(workdir, "project")
        os.makedirs(project, exist_ok=True)
        self.paths = store_paths(
            project, "bench" + str(os.getpid())[-6:].rjust(6, "0") + "00000", home=os.path.join(workdir, "home")
        )
        prepare_store(self.paths)
        self.config = Config(validate(overrides or {}, "<bench>", defaults()), ["<bench>"])
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, name: str, module: str) -> subprocess.Popen:
        from memtree.eval.recall_eval import start_actor

        self.procs[name] = start_actor(module, name, self.paths, self.config)
        return self.procs[name]

    def stop(self) -> None:
        for p in self.procs.values():
            try:
                os.killpg(p.pid, signal.SIGCONT)
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)


def wait_for(pred, timeout: float, what: str):
    from memtree.runtime.polling import poll_until

    value = poll_until(pred, timeout, 0.05)
    if value is None:
        raise SystemExit(f"bench_embed: timed out waiting for {what}")
    return value


def writer_up(actors: Actors) -> None:
    from memtree import protocol
    from memtree.errors import MemtreeError
    from memtree.runtime.client import Caller

    c = Caller(actors.paths.endpoint(protocol.SOCK_WRITE), src="bench", timeout_ms=1000)

    def ping():
        try:
            return c.call(protocol.Ping())
        except MemtreeError:
            return None

    try:
        wait_for(ping, 60, "the writer")
    finally:
        c.close()


def backlog(actors: Actors) -> int:
    from memtree.recall.embeddings import model_name
    from memtree.store import db as store_db
    from memtree.store.vectors import backlog_count

    conn = store_db.open_read(actors.paths.db)
    try:
        return backlog_count(conn, model_name(actors.config))
    finally:
        conn.close()


def seed(actors: Actors, texts: list[str], tag: str) -> None:
    from memtree.eval.bench_core import add_notes

    add_notes(actors.paths.endpoint("write"), len(texts), 4, lambda i: f"{texts[i]}\n# {tag} {i}")


def bench_backlog(workdir: str, texts: list[str]) -> tuple[Actors, dict]:
    import psutil

    actors = Actors(workdir, {"walkers": {"embeddingIdleMs": 200}})
    actors.start("writer", "memtree.actors.writer")
    writer_up(actors)
    seed(actors, texts, "backlog")
    t0 = time.perf_counter()
    walker = actors.start("walker.embed", "memtree.actors.walkers.embed")
    wait_for(lambda: backlog(actors) == 0, 1200, "the backlog to drain")
    took = time.perf_counter() - t0
    rss = {n: psutil.Process(p.pid).memory_info().rss for n, p in actors.procs.items()}
    return actors, {"n": len(texts), "took": took, "per_s": len(texts) / took, "rss": rss, "walker": walker}


# -- latency with the walker idle / busy / stopped ---------------------------------------


def latencies(actors: Actors, samples: int, queries: list[str]) -> tuple[list[float], list[float]]:
    """(ingest, hybrid search) latencies in seconds, interleaved."""
    import anyio

    from memtree import protocol
    from memtree.front.services import Services
    from memtree.recall import search
    from memtree.runtime.client import Caller

    async def run():
        svc = Services(actors.config, actors.paths, session_id="bench")
        writer = Caller(actors.paths.endpoint(protocol.SOCK_WRITE), src="bench", timeout_ms=10000)
        ingest, found = [], []
        try:
            for i in range(samples):
                t0 = time.perf_counter()
                writer.call(protocol.AddNode(kind="note", status="live", content=f"latency probe {i} {time.time()}"))
                ingest.append(time.perf_counter() - t0)
                q = queries[i % len(queries)]
                t0 = time.perf_counter()
                emb, why = await search.query_vector(svc, q)
                search.run(svc.db(), q, "hybrid", query_vector=emb, vector_note=why)
                found.append(time.perf_counter() - t0)
        finally:
            writer.close()
        return ingest, found

    return anyio.run(run)


def bench_latency(actors: Actors, walker, texts: list[str], samples: int) -> dict:
    queries = [
        "retry a failing network call",
        "parse a date string",
        "strip leading whitespace",
        "copy a directory tree",
        "read a configuration file",
    ]
    out = {"idle": latencies(actors, samples, queries)}
    os.kill(walker.pid, signal.SIGSTOP)
    seed(actors, texts, "busy")  # a backlog for the walker once it runs again
    os.kill(walker.pid, signal.SIGCONT)
    time.sleep(0.3)  # let it load the batch queue: the measurement must overlap the drain
    before = backlog(actors)
    out["busy"] = latencies(actors, samples, queries)
    out["busy_backlog"] = (before, backlog(actors))
    # The busy run searched a bigger store (the backlog's notes): idle again on that store, drained,
    # so a ratio is not the store's growth.
    wait_for(lambda: backlog(actors) == 0, 1200, "the busy backlog to drain")
    out["idle after"] = latencies(actors, samples, queries)
    os.kill(walker.pid, signal.SIGSTOP)
    try:
        out["stopped"] = latencies(actors, samples, queries)
    finally:
        os.kill(walker.pid, signal.SIGCONT)
    return out


# -- KNN -------------------------------------------------------------------------------------


def bench_knn(workdir: str, size: int, queries: int = 30) -> dict:
    import numpy as np

    from memtree.ids import now_ms, ulid
    from memtree.recall import search
    from memtree.recall.embeddings import LOCAL_MODEL
    from memtree.store.db import open_write
    from memtree.store.vectors import knn

    path = os.path.join(workdir, f"knn{size}.db")
    db = open_write(path)
    rng = np.random.default_rng(7)
    words = ["retry", "network", "parse", "config", "invoice", "cache", "token", "stream", "socket", "queue"]
    with db:
        for start in range(0, size, 5000):
            rows, vecs = [], []
            m = rng.standard_normal((min(5000, size - start), 256)).astype("<f4")
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            for j in range(m.shape[0]):
                i = start + j
                nid, now = ulid(), now_ms()
                text = " ".join(random.Random(i).choices(words, k=12)) + f" row {i}"
                rows.append((nid, "note", text, f"h{i}", "live", now, now))
                vecs.append((nid, LOCAL_MODEL, 256, m[j].tobytes(), now))
            db.executemany(
                "INSERT INTO nodes(id, kind, content, content_hash, status, created_at, updated_at)"
                " VALUES (?,?,?,?,?,?,?)",
                rows,
            )
            db.executemany(
                "INSERT INTO nodes_vec(node_id, model, dim, embedding, embedded_at) VALUES (?,?,?,?,?)", vecs
            )
    qs = rng.standard_normal((queries, 256)).astype("<f4")
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    figures = {"raw": [], "knn": [], "semantic": [], "hybrid": []}
    for q in qs:
        t0 = time.perf_counter()
        db.execute(
            "SELECT node_id, vec_distance_cosine(embedding, ?) AS d FROM nodes_vec ORDER BY d LIMIT 10", (q.tobytes(),)
        ).fetchall()
        figures["raw"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        knn(db, q, 10, {}, LOCAL_MODEL)
        figures["knn"].append(time.perf_counter() - t0)
        emb = {"model": LOCAL_MODEL, "dim": 256, "vector": q.tolist()}
        for mode in ("semantic", "hybrid"):
            t0 = time.perf_counter()
            search.run(db, "retry the network queue", mode, query_vector=emb, abstain=False)
            figures[mode].append(time.perf_counter() - t0)
    from memtree.actors.walkers.dedupe import PER_PASS, near_pairs
    from memtree.store.vectors import embedded_since

    figures["dedupe"] = []
    for _ in range(3):  # one dedupe pass: PER_PASS new vectors against every live vector of the kind
        rows = embedded_since(db, LOCAL_MODEL, (0, ""), PER_PASS)
        t0 = time.perf_counter()
        near_pairs(db, LOCAL_MODEL, "note", rows, 0.97)
        figures["dedupe"].append(time.perf_counter() - t0)
    db.close()
    return figures


# -- whole system ------------------------------------------------------------------------------


def bench_system_rss(workdir: str) -> dict:
    import psutil

    from memtree.eval.bench_idle import _running

    project = os.path.join(workdir, "sys-project")
    os.makedirs(project)
    exe = shutil.which("memtree", path=os.path.dirname(sys.executable))
    argv = [exe] if exe else [sys.executable, "-P", "-m", "memtree.cli"]
    proc = start_group([*argv, "serve"], cwd=project, stdin=subprocess.PIPE)
    try:
        pids = wait_for(lambda: _running(project), 120, "every actor RUNNING")
        time.sleep(2.0)  # the embed walker has loaded its model before it reported RUNNING; let imports settle
        rss, pss = {}, {}
        for name, pid in [*pids.items(), ("supervisor", proc.pid)]:
            info = psutil.Process(pid).memory_full_info()
            rss[name], pss[name] = info.rss, info.pss
        return rss, pss
    finally:
        proc.stdin.close()  # Claude Code exiting: the supervisor stops everything
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def _ratio(st: dict, base: dict) -> str:
    return f"p95 x{st['p95'] / base['p95']:.2f} of idle, median x{st['median'] / base['median']:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--backlog", type=int, default=10000)
    ap.add_argument("--samples", type=int, default=100)
    args = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="memtree-embed-")
    os.environ["MEMTREE_HOME"] = os.path.join(workdir, "home")
    try:
        corpus = code_chunks(args.backlog)
        texts = [corpus[i % len(corpus)] for i in range(args.backlog)]
        m = bench_model(corpus[:2000])
        print(
            f"model {m['model']} ({m['dim']} dims): import+load {m['load_s']:.2f} s; "
            f"{m['per_s']:.0f} embeddings/s at batch 32 over {min(2000, len(corpus))} stdlib code chunks; "
            f"RSS {m['rss_load'] / MIB:.0f} MiB loaded, {m['rss_used'] / MIB:.0f} MiB after use",
            flush=True,
        )
        actors, b = bench_backlog(workdir, texts)
        try:
            print(
                f"backlog: {b['n']} chunks embedded by the embed walker in {b['took']:.1f} s "
                f"({b['per_s']:.0f}/s, walker spawn and model load included); RSS walker "
                f"{b['rss']['walker.embed'] / MIB:.0f} MiB, writer {b['rss']['writer'] / MIB:.0f} MiB",
                flush=True,
            )
            lat = bench_latency(actors, b["walker"], texts[: max(2000, args.backlog // 2)], args.samples)
        finally:
            actors.stop()
        base_i, base_s = summary(lat["idle"][0]), summary(lat["idle"][1])
        after_i, after_s = summary(lat["idle after"][0]), summary(lat["idle after"][1])
        for label in ("idle", "busy", "idle after", "stopped"):
            si, ss = summary(lat[label][0]), summary(lat[label][1])
            extra = ""
            if label == "busy":
                extra = f"  (walker backlog {lat['busy_backlog'][0]} -> {lat['busy_backlog'][1]} during the run)"
            again = f";  vs idle after: {_ratio(si, after_i)}" if label == "busy" else ""
            print(f"walker {label:10s} ingest  {fmt_ms(si)}  {_ratio(si, base_i)}{again}{extra}")
            again = f";  vs idle after: {_ratio(ss, after_s)}" if label == "busy" else ""
            print(f"walker {label:10s} search  {fmt_ms(ss)}  {_ratio(ss, base_s)}{again}", flush=True)
        for size in (int(s) for s in args.sizes.split(",") if s):
            f = bench_knn(workdir, size)
            for k in ("raw", "knn", "semantic", "hybrid", "dedupe"):
                name = {
                    "raw": "raw sqlite-vec KNN",
                    "knn": "memtree knn (live join)",
                    "semantic": "search.run semantic",
                    "hybrid": "search.run hybrid",
                    "dedupe": "dedupe pass (500 new)",
                }[k]
                print(f"{size:>7} nodes  {name:24s} {fmt_ms(summary(f[k]))}", flush=True)
        rss, pss = bench_system_rss(workdir)
        # RSS counts shared libraries once per process; PSS splits them, so its sum is the system's share.
        print(
            f"whole system with the model loaded: PSS {sum(pss.values()) / MIB:.0f} MiB, RSS sum "
            f"{sum(rss.values()) / MIB:.0f} MiB (goal <= 400 MiB); PSS by actor: "
            + ", ".join(f"{n} {v / MIB:.0f}" for n, v in sorted(pss.items(), key=lambda kv: -kv[1]))
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
