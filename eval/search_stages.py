"""Where a search spends its time, on a store bench_scale kept.

    .venv/bin/python -m memtree.eval.search_stages --store DIR [--rounds 3] [--worst 8]

DIR is a ``bench_scale --keep`` directory (its store is found under it). For
the recall eval's queries (eval/recall_queries.py), embedded beforehand, each
hybrid search is timed whole and by stage: the semantic arm, the document
counts, each FTS5 query (``reads.search_fts``), the IDF, the ranking and the
snippets; p50 / p95 per stage, then the slowest queries with every FTS5 query
and count they ran (a phrase over common tokens, ``"def at"``, shows here).
In-process and on one thread, so the stages add up (but for the keyword
rows' prepare, which counts under both prepare and score); timing wrappers
are set on the functions for the run only. A diagnostic, not in ``make bench``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

STAGES = (
    ("semantic", "memtree.recall.search", "semantic_candidates"),
    ("doc_counts", "memtree.store.reads", "doc_counts"),
    ("search_fts", "memtree.store.reads", "search_fts"),
    ("idf", "memtree.recall.search", "_idf"),
    # The semantic candidates are prepared before the keyword arm's rows come; score
    # prepares the rest (its time holds that part of "prepare" too).
    ("prepare", "memtree.recall.ranking", "Scorer.prepare"),
    ("score", "memtree.recall.ranking", "Scorer.score"),
    ("snippets", "memtree.recall.search", "with_snippets"),
)


class Timer:
    """Wraps the stage functions; ``spent`` is the current search's time a
    stage, ``calls`` its FTS5 queries and counts (what, ms)."""

    def __init__(self):
        self.spent: dict[str, float] = defaultdict(float)
        self.calls: list[tuple[str, float]] = []
        self._undo: list = []

    def wrap(self) -> None:
        import importlib

        for label, module, path in STAGES:
            owner = importlib.import_module(module)
            *outer, name = path.split(".")
            for part in outer:  # a method: Scorer.score
                owner = getattr(owner, part)
            fn = getattr(owner, name)
            setattr(owner, name, self._timed(label, fn))
            self._undo.append((owner, name, fn))

    def unwrap(self) -> None:
        for mod, name, fn in reversed(self._undo):
            setattr(mod, name, fn)

    def _timed(self, label: str, fn):
        def timed(*args, **kw):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kw)
            finally:
                took = time.perf_counter() - t0
                self.spent[label] += took
                if label in ("search_fts", "doc_counts"):
                    what = args[1] if label == "search_fts" else " ".join(args[1])
                    above = kw.get("above_rowid")
                    self.calls.append((f"{label} {what[:100]}" + (f" (rowid > {above})" if above else ""), took))

        return timed


def main(argv: list[str] | None = None) -> int:
    from memtree.eval.bench_scale import PRUNER_INTERVAL_MS, bench_config, kept_store
    from memtree.eval.recall_queries import QUERIES
    from memtree.eval.stats import summary
    from memtree.recall import search
    from memtree.recall.embeddings import load_provider
    from memtree.store import db as store_db

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="a bench_scale --keep directory")
    ap.add_argument("--rounds", type=int, default=3, help="passes over the queries")
    ap.add_argument("--worst", type=int, default=8, help="slowest queries shown with their FTS5 calls")
    args = ap.parse_args(argv)
    db_path = kept_store(args.store)
    conn = store_db.open_read(db_path)
    provider = load_provider(bench_config(PRUNER_INTERVAL_MS))
    queries = [q[1] for q in QUERIES]
    embs = {q: {"model": provider.name, "dim": provider.dim, "vector": provider.embed([q])[0]} for q in queries}
    nodes = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    print(f"{db_path}: {nodes} nodes; {len(queries)} queries x {args.rounds}, hybrid, one thread")
    search.run(conn, queries[0], "hybrid", {}, 10, query_vector=embs[queries[0]])  # loads the vector index
    timer = Timer()
    timer.wrap()
    per_stage: dict[str, list[float]] = defaultdict(list)
    per_query: dict[str, list[tuple[float, list]]] = defaultdict(list)
    try:
        for _ in range(args.rounds):
            for q in queries:
                timer.spent.clear()
                timer.calls = []
                t0 = time.perf_counter()
                search.run(conn, q, "hybrid", {}, 10, query_vector=embs[q])
                total = time.perf_counter() - t0
                for label, _, _ in STAGES:
                    per_stage[label].append(timer.spent[label])
                per_stage["total"].append(total)
                per_query[q].append((total, timer.calls))
    finally:
        timer.unwrap()
        conn.close()
    for label in [s[0] for s in STAGES] + ["total"]:
        st = summary(per_stage[label])
        print(f"  {label:<11} p50 {st['median'] * 1e3:7.2f} ms  p95 {st['p95'] * 1e3:7.2f} ms")
    worst = sorted(per_query.items(), key=lambda kv: -sorted(t for t, _ in kv[1])[len(kv[1]) // 2])
    print(f"slowest {args.worst} queries (median of their runs), with the FTS5 calls of one run:")
    for q, runs in worst[: args.worst]:
        total, calls = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
        print(f"  {total * 1e3:7.1f} ms  {q[:90]}")
        for what, took in calls:
            print(f"      {took * 1e3:6.1f} ms  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
