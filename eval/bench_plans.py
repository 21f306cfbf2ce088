"""A node's children at store sizes a year of use reaches, with and without the
planner statistics memtree pins (memtree/store/planner_stats.py).

    nice -n 10 .venv/bin/python -m memtree.eval.bench_plans [--sizes 100000,1000000] [--lookups 200]

Per size: a store file made by memtree's own schema and migrations, ``nodes``
rows inserted with raw apsw (live file chunks under one root per 20, the shape
of files read chunk by chunk), then the lookups the read tool, compose and
the capture path run per file: ``reads.file_chunks`` and ``reads.children``
of a random root, from a read-only connection as the front opens it; then
the same after the statistics rows are deleted (what SQLite does with none:
the store never runs ANALYZE), in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

from memtree.eval.stats import fmt_ms, summary


def build(path: str, n: int, rng: random.Random) -> list[str]:
    from memtree.ids import ulid
    from memtree.store import db as store_db

    conn = store_db.open_write(path)
    parents = [ulid() for _ in range(max(1, n // 20))]
    now = int(time.time() * 1000)
    try:
        with conn:
            conn.executemany(
                "INSERT INTO nodes(id, parent_id, kind, source_uri, content_hash, status, created_at, updated_at)"
                " VALUES (?, ?, 'file_chunk', ?, ?, 'live', ?, ?)",
                (
                    (ulid(), rng.choice(parents), f"file:///p/f{i}.py#L1-9", f"{i:064x}", now + i, now + i)
                    for i in range(n)
                ),
            )
    finally:
        conn.close()
    return parents


def lookups(path: str, parents: list[str], k: int, rng: random.Random) -> list[float]:
    from memtree.store import db as store_db
    from memtree.store import reads

    conn = store_db.open_read(path)
    try:
        out = []
        for pid in rng.sample(parents, min(k, len(parents))):
            t0 = time.perf_counter()
            reads.file_chunks(conn, pid)
            reads.children(conn, pid)
            out.append(time.perf_counter() - t0)
        return out
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    from memtree.store import db as store_db

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100000,1000000", help="store sizes (nodes), comma-separated")
    ap.add_argument("--lookups", type=int, default=200, help="roots looked up per size and variant")
    args = ap.parse_args(argv)
    rng = random.Random(17)
    work = tempfile.mkdtemp(prefix="memtree-plans-")
    try:
        for n in (int(s) for s in args.sizes.split(",")):
            path = os.path.join(work, f"store-{n}.db")
            parents = build(path, n, rng)
            pinned = summary(lookups(path, parents, args.lookups, rng))
            conn = store_db.open_write(path)
            conn.execute("DELETE FROM sqlite_stat1")  # what a store without the pinned statistics plans with
            conn.close()
            bare = summary(lookups(path, parents, args.lookups, rng))
            print(f"{n} nodes, a root's chunks and children (file_chunks + children):")
            print(f"  pinned statistics  {fmt_ms(pinned)}")
            print(f"  no statistics      {fmt_ms(bare)}  ({bare['median'] / pinned['median']:.0f}x the pinned median)")
            os.remove(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
