"""Search latency by mode at several store sizes (issue 9 figures).

    .venv/bin/python -m memtree.eval.bench_search [--sizes 10000,100000] [--searches 100]

Seeds a store through the real writer with notes cut from the recall eval's
corpus (real code, a unique tail each), embeds them with the embed walker's
provider (the function the walker calls) and stores the vectors through the
writer's PutVectors, then times memtree's search library on a read-only
connection, the way the front calls it, for the eval's queries:
plain BM25 (FTS5, no ranking), keyword, semantic and hybrid (ranking
included; the query embedding is computed beforehand and timed on its own),
beside a raw sqlite-vec KNN of the same size in the same run.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile
import time

from memtree.eval.stats import fmt_ms, summary


def corpus_texts(root: str, limit: int = 4000) -> list[str]:
    from memtree.text.chunking import chunk_text

    texts = []
    for path in sorted(glob.glob(os.path.join(root, "*", "**", "*.py"), recursive=True)):
        with open(path, encoding="utf-8", errors="replace") as f:
            texts += [c["content"] for c in chunk_text(path, f.read()).chunks if c["content"].strip()]
    return texts[:limit]


def seed(caller_endpoint: str, texts: list[str], start: int, stop: int) -> None:
    from memtree.eval.bench_core import add_notes

    add_notes(caller_endpoint, stop - start, 8, lambda i: f"{texts[(start + i) % len(texts)]}\n# note {start + i}")


def embed_backlog(db_path: str, caller, provider, batch: int = 512) -> int:
    """Embed every live note without a vector (the walker's provider, its PutVectors)."""
    from memtree import protocol
    from memtree.store import db as store_db
    from memtree.store import vectors

    n = 0
    while True:
        conn = store_db.open_read(db_path)
        try:
            rows = vectors.backlog(conn, provider.name, batch, ("note",))
        finally:
            conn.close()
        if not rows:
            return n
        mat = provider.embed([r[2] for r in rows])
        items = [{"node_id": r[0], "content_hash": r[1], "vector": v.tolist()} for r, v in zip(rows, mat)]
        caller.call(protocol.PutVectors(model=provider.name, dim=provider.dim, items=items))
        n += len(rows)


def time_modes(conn, queries: list[str], provider, searches: int) -> dict[str, list[float]]:
    from memtree.recall import search
    from memtree.store import vectors

    lat: dict[str, list[float]] = {m: [] for m in ("embed query", "raw knn", "bm25", "keyword", "semantic", "hybrid")}
    for i in range(searches):
        q = queries[i % len(queries)]
        t0 = time.perf_counter()
        emb = {"model": provider.name, "dim": provider.dim, "vector": provider.embed([q])[0]}
        lat["embed query"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        vectors.knn(conn, emb["vector"], 10, {}, model=provider.name)
        lat["raw knn"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        search.keyword(conn, q, {}, 10)
        lat["bm25"].append(time.perf_counter() - t0)
        for mode in ("keyword", "semantic", "hybrid"):
            t0 = time.perf_counter()
            search.run(conn, q, mode, {}, 10, query_vector=emb)
            lat[mode].append(time.perf_counter() - t0)
    return lat


def main(argv: list[str] | None = None) -> int:
    from memtree.eval import recall_eval
    from memtree.eval.recall_queries import QUERIES
    from memtree.recall.embeddings import load_provider
    from memtree.store import db as store_db

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="store sizes (notes), comma-separated")
    ap.add_argument("--searches", type=int, default=100, help="searches per mode and size")
    args = ap.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    texts = corpus_texts(recall_eval.fetch(recall_eval.cache_dir()))
    queries = [q[1] for q in QUERIES]
    config = recall_eval.eval_config()
    provider = load_provider(config)
    work = tempfile.mkdtemp(prefix="memtree-bench-search-")
    proc, caller, paths = recall_eval.start_writer(work, config)
    try:
        from memtree import protocol

        endpoint = paths.endpoint(protocol.SOCK_WRITE)
        seeded = 0
        for size in sizes:
            t0 = time.perf_counter()
            seed(endpoint, texts, seeded, size)
            seeded = size
            t_seed = time.perf_counter() - t0
            t0 = time.perf_counter()
            embedded = embed_backlog(paths.db, caller, provider)
            t_embed = time.perf_counter() - t0
            print(
                f"search at {size} notes (seeded in {t_seed:.0f}s; {embedded} embedded in {t_embed:.0f}s, "
                f"{provider.name}):"
            )
            conn = store_db.open_read(paths.db)
            try:
                lat = time_modes(conn, queries, provider, args.searches)
            finally:
                conn.close()
            knn = summary(lat["raw knn"])["median"]
            for mode, samples in lat.items():
                st = summary(samples)
                ratio = f"  {st['median'] / knn:5.2f}x raw knn" if mode in ("semantic", "hybrid") else ""
                print(f"  {mode:<12} {fmt_ms(st)}{ratio}")
    finally:
        caller.close()
        recall_eval.stop(proc)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
