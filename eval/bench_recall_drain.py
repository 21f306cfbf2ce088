"""A recall while the embed walker drains a backlog: what the front's foreground mark buys.

    .venv/bin/python -m memtree.eval.bench_recall_drain --store DIR [--share 0.5] [--block 20]

DIR is a ``bench_scale --keep`` directory. Its store is copied (the original
stays as it is) and the vectors of ``--share`` of its chunks are deleted, so
the real embed walker, started on the copy beside the real writer, has a
backlog to drain. While it drains, recall searches (the recall eval's
queries, embedded beforehand, run as the recall tool runs them:
``retrieval._search``, a pause between two as an agent's pace) go in blocks
of ``--block``, in turns:

- **marked**: each search inside a front's foreground mark, as
  actors/mcp_front.py holds it around every tool call (the walker waits);
- **unmarked**: the same searches with no mark (the front before the mark);
- **stopped**: the walker's process group stopped (SIGSTOP), the floor; its
  searches also sync no new vectors into the front's index, so the floor
  is a little lower than a drain can reach.

Prints each arm's p50/p95 and its ratios to the stopped blocks, and the
drain's rate. A diagnostic of the mark; not in ``make bench`` (it needs a
kept store).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time

SEARCH_PAUSE_S = 0.05  # between two searches of a block
ARMS = ("marked", "unmarked", "stopped")


def backlog_store(src: str, work: str, share: float) -> str:
    """The kept store copied to ``work``, with the vectors of ``share`` of its chunks deleted."""
    from memtree.eval.bench_scale import kept_store
    from memtree.store import db as store_db

    shutil.copytree(os.path.join(src, "home"), os.path.join(work, "home"))
    os.makedirs(os.path.join(work, "project"), exist_ok=True)
    db_path = kept_store(work)
    conn = store_db.open_write(db_path)
    try:
        with conn:
            conn.execute("DELETE FROM nodes_vec WHERE abs(random() % 1000) < ?", (int(share * 1000),))
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return db_path


def main(argv: list[str] | None = None) -> int:
    from memtree.eval import recall_eval
    from memtree.eval.bench_scale import (
        PRUNER_INTERVAL_MS,
        _ReadOnlyServices,
        bench_config,
        kept_store,
        load,
        stop_group,
    )
    from memtree.eval.recall_queries import QUERIES
    from memtree.eval.stats import summary
    from memtree.recall import retrieval
    from memtree.recall.embeddings import load_provider
    from memtree.runtime import foreground
    from memtree.runtime.heap import settle
    from memtree.store import db as store_db

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="a bench_scale --keep directory")
    ap.add_argument("--share", type=float, default=0.5, help="share of the chunks whose vectors are deleted")
    ap.add_argument("--block", type=int, default=20, help="searches a block, one arm at a time")
    ap.add_argument("--most-s", type=float, default=600, help="stop measuring after this long even if not drained")
    args = ap.parse_args(argv)
    kept_store(args.store)  # there is one to copy
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the actors below are stopped on a kill too
    config = bench_config(PRUNER_INTERVAL_MS)
    provider = load_provider(config)
    queries = [q[1] for q in QUERIES]
    embs = [{"model": provider.name, "dim": provider.dim, "vector": provider.embed([q])[0]} for q in queries]
    work = tempfile.mkdtemp(prefix="memtree-recall-drain-")
    procs: dict = {}
    mark = conn = None
    try:
        db_path = backlog_store(args.store, work, args.share)
        proc, caller, paths = recall_eval.start_writer(work, config)
        caller.close()
        procs["writer"] = proc
        conn = store_db.open_read(db_path)
        vectors = "SELECT count(*) FROM nodes_vec"
        chunks = conn.execute("SELECT count(*) FROM nodes WHERE status = 'live' AND kind = 'file_chunk'").fetchone()[0]
        start = conn.execute(vectors).fetchone()[0]
        print(f"{db_path}: {start} vectors left of {chunks} live chunks; {load()}", flush=True)
        tool = _ReadOnlyServices(conn)
        retrieval._search(tool, queries[0], "hybrid", 10, {}, embs[0], None)  # loads the vector index
        settle()
        mark = foreground.Mark(paths.store_dir, front=True)
        procs["walker.embed"] = recall_eval.start_actor("memtree.actors.walkers.embed", "walker.embed", paths, config)
        walker = procs["walker.embed"].pid
        lat: dict[str, list[float]] = {a: [] for a in ARMS}
        t0, i, blocks = time.monotonic(), 0, 0
        while time.monotonic() - t0 < args.most_s:
            arm = ARMS[blocks % len(ARMS)]
            if arm == ARMS[0] and blocks and conn.execute(vectors).fetchone()[0] >= chunks:
                break  # drained: every arm had as many blocks
            if arm == "stopped":
                stop_group(walker)
            try:
                for _ in range(args.block):
                    k = i % len(queries)
                    t = time.perf_counter()
                    with mark.hold() if arm == "marked" else contextlib.nullcontext():
                        retrieval._search(tool, queries[k], "hybrid", 10, {}, embs[k], None)
                    lat[arm].append(time.perf_counter() - t)
                    i += 1
                    time.sleep(SEARCH_PAUSE_S)
            finally:
                if arm == "stopped":
                    os.killpg(walker, signal.SIGCONT)
            blocks += 1
            if procs["walker.embed"].poll() is not None:
                raise SystemExit("the embed walker died; see its log")
        took = time.monotonic() - t0
        done = conn.execute(vectors).fetchone()[0] - start
        # The walker ran in two of the three arms' blocks.
        print(f"drain: {done} vectors in {took:.0f}s ({done / took:.0f}/s, stopped a third of it); {load()}")
        floor = summary(lat["stopped"])
        for arm in ARMS:
            st = summary(lat[arm])
            print(
                f"  {arm:<9} median {st['median'] * 1e3:6.1f} ms  p95 {st['p95'] * 1e3:6.1f} ms  (n={len(lat[arm])})"
                f"  {st['median'] / floor['median']:.2f}x / {st['p95'] / floor['p95']:.2f}x stopped"
            )
    finally:
        if mark is not None:
            mark.close()
        if conn is not None:
            conn.close()
        for p in procs.values():
            recall_eval.stop(p)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
