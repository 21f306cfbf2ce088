"""Recall eval: hand-written golden queries over real code no one here wrote.

    .venv/bin/python -m memtree.eval.recall_eval [--small] [--write-baseline] [--cache DIR]

Fetches five pinned sdists (eval/recall_queries.py CORPUS) with
``pip download --no-deps --no-binary :all:`` into a cache dir, ingests every
``.py`` file the way an agent's ``read`` would (memtree.text.chunking + PutFile to a
real writer process), embeds the chunks in-process with the embed walker's
provider when it is installed, then runs each query through memtree's search
in every mode beside plain BM25 (FTS5 bm25, no ranking) in the same run.

Figures, by kind and mode: NDCG@10 with file-level gold (as semble), Recall@10
and MRR@10 with line-range gold (a hit counts when its chunk overlaps a gold
range), and abstention: the share of no-answer queries answered with no hits,
beside the share of answerable ones wrongly left empty.
"""

from __future__ import annotations

import argparse
import ast
import glob
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time

from memtree.eval import baselines, sdists
from memtree.eval.recall_queries import CORPUS, QUERIES, SMALL
from memtree.eval.stats import kind_means

BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recall_baseline.json")
KINDS = ("symbol", "paraphrase", "architecture")
MODES = ("bm25", "keyword", "semantic", "hybrid")


def cache_dir(explicit: str | None = None) -> str:
    return (
        explicit
        or os.environ.get("MEMTREE_EVAL_CACHE")
        or os.path.join(os.path.expanduser("~"), ".cache", "memtree-eval")
    )


def fetch(cache: str, corpus: dict | None = None, folder: str = "corpus") -> str:
    """The corpus root (one extracted sdist per package), downloading what is missing."""
    root = os.path.join(cache, folder)
    os.makedirs(root, exist_ok=True)
    for name, version in (CORPUS if corpus is None else corpus).items():
        if os.path.isdir(os.path.join(root, f"{name}-{version}")):
            continue
        path = sdists.download(name, version, os.path.join(cache, "sdists"), timeout=300)
        with tarfile.open(path) as tar:
            tar.extractall(root, filter="data")
    return root


def symbol_lines(tree: ast.Module, symbol: str, where: str) -> tuple[int, int]:
    """``Class.method`` in a parsed file: (its first line, decorators included, its last line)."""
    body, node = tree.body, None
    for part in symbol.split("."):
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        node = next((n for n in body if isinstance(n, defs) and n.name == part), None)
        if node is None:
            raise SystemExit(f"gold symbol {symbol!r} not found in {where}: the pinned corpus changed?")
        body = getattr(node, "body", [])
    return min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno


def _symbol_range(path: str, symbol: str) -> tuple[int, int]:
    with open(path, encoding="utf-8") as f:
        return symbol_lines(ast.parse(f.read()), symbol, path)


def gold_ranges(root: str, gold: list[str]) -> list[tuple[str, int, int]]:
    out = []
    for g in gold:
        rel, _, symbol = g.rpartition(":")
        out.append((rel, *_symbol_range(os.path.join(root, rel), symbol)))
    return out


# -- ingest through the real writer ----------------------------------------------------------


def eval_config():
    from memtree.config.defaults import defaults
    from memtree.config.loader import Config, validate

    # The embed walker starts on the backlog at once instead of after 5 s idle.
    return Config(validate({"walkers": {"embeddingIdleMs": 100}}, "<eval>", defaults()), ["<eval>"])


def start_actor(module: str, name: str, paths, config, python: str = sys.executable):
    """One actor process on ``paths``' store, as the supervisor starts it (its log in the store's logs),
    run by ``python``."""
    from memtree.runtime.actorenv import ActorContext
    from memtree.runtime.group import start_group

    env = {**os.environ, **ActorContext(name, paths, config, None).child_env()}
    with open(paths.log_file(name), "ab") as log:
        return start_group([python, "-P", "-m", module], env=env, stdout=log, stderr=log, same_session=True)


def start_writer(workdir: str, config):
    from memtree import protocol
    from memtree.paths import prepare_store, store_paths
    from memtree.runtime.client import Caller

    project = os.path.join(workdir, "project")
    os.makedirs(project, exist_ok=True)
    paths = store_paths(project, "e" * 16, home=os.path.join(workdir, "home"))
    prepare_store(paths)
    proc = start_actor("memtree.actors.writer", "writer", paths, config)
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="eval", timeout_ms=60_000)
    deadline = time.monotonic() + 30  # a cold interpreter importing zmq/apsw on a busy box
    while True:
        try:
            caller.call(protocol.Ping(), timeout_ms=500)
            break
        except Exception:  # noqa: BLE001 - not up yet
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc)
                raise SystemExit(f"writer did not start; see {paths.log_file('writer')}") from None
    return proc, caller, paths


def stop(proc) -> None:
    import signal

    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                proc.wait(wait)
            except subprocess.TimeoutExpired:
                pass


def put_file(caller, path: str, data: bytes) -> int:
    """One file sent as the wrapped read sends it (memtree.text.chunking + PutFile); returns the chunk count."""
    from memtree import protocol
    from memtree.text.chunking import chunk_text

    chunks = chunk_text(path, data.decode("utf-8", errors="replace")).chunks
    if chunks:
        st = os.stat(path)
        caller.call(protocol.PutFile(path=path, mtime=st.st_mtime_ns, size=len(data), chunks=chunks, session_id=None))
    return len(chunks)


def ingest(root: str, caller, corpus: dict | None = None) -> int:
    """Every .py file of the corpus (only the pinned packages' folders: the cache
    may hold other evals' sdists), sent as the wrapped read sends it."""
    n = 0
    # The pinned packages' folders only (unless told): nothing else in the cache may become a distractor.
    dirs = ["*"] if corpus is False else [f"{k}-{v}" for k, v in (CORPUS if corpus is None else corpus).items()]
    for path in sorted(p for d in dirs for p in glob.glob(os.path.join(root, d, "**", "*.py"), recursive=True)):
        with open(path, "rb") as f:
            n += put_file(caller, path, f.read())
    return n


def embed_corpus(paths, config) -> object | None:
    """Run the real embed walker until every live chunk has a vector; return
    the provider (queries are embedded in-process by the same function the
    walker answers EmbedQuery with), or None when no provider can load here
    (hybrid then runs degraded to keyword, as it would for a user)."""
    from memtree.recall.embeddings import ProviderUnavailable, load_provider
    from memtree.store import db as store_db

    try:
        provider = load_provider(config)
    except ProviderUnavailable as e:
        print(f"embeddings unavailable: {e.message}")
        return None
    proc = start_actor("memtree.actors.walkers.embed", "walker.embed", paths, config)
    conn = store_db.open_read(paths.db)
    try:
        deadline = time.monotonic() + 600  # the bound for a 10k backlog on 2 cores
        while True:
            missing = conn.execute(
                "SELECT count(*) FROM nodes n WHERE n.kind = 'file_chunk' AND n.status = 'live' AND NOT EXISTS "
                "(SELECT 1 FROM nodes_vec v WHERE v.node_id = n.id AND v.model = ?)",
                (provider.name,),
            ).fetchone()[0]
            if not missing:
                return provider
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"embed walker left {missing} chunks unembedded; see {paths.log_file('walker.embed')}")
            time.sleep(0.2)
    finally:
        conn.close()
        stop(proc)


def query_embedder(provider):
    def embed(text: str) -> dict:
        return {"model": provider.name, "dim": provider.dim, "vector": provider.embed([text])[0]}

    return embed


# -- metrics ---------------------------------------------------------------------------------


def hit_span(node: dict, root: str) -> tuple[str, int, int]:
    import orjson

    meta = node["metadata"] if isinstance(node["metadata"], dict) else orjson.loads(node["metadata"] or "{}")
    return os.path.relpath(meta.get("path", ""), root), meta.get("start", 0), meta.get("end", 0)


def metrics(spans: list[tuple[str, int, int]], gold: list[tuple[str, int, int]], k: int = 10) -> dict:
    spans = spans[:k]
    gold_files = {g[0] for g in gold}
    files = list(dict.fromkeys(s[0] for s in spans))[:k]
    dcg = sum(1 / math.log2(i + 2) for i, f in enumerate(files) if f in gold_files)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(gold_files), k)))

    def overlaps(s, g):
        return s[0] == g[0] and s[1] <= g[2] and s[2] >= g[1]

    found = sum(1 for g in gold if any(overlaps(s, g) for s in spans))
    rr = next((1 / (i + 1) for i, s in enumerate(spans) if any(overlaps(s, g) for g in gold)), 0.0)
    return {"ndcg": dcg / idcg if idcg else 0.0, "recall": found / len(gold), "mrr": rr}


def run_queries(conn, root: str, queries, vectors) -> dict:
    """{mode: {"per_query": [...]}}: spans and metrics of every query in every mode."""
    from memtree.errors import BadRequest
    from memtree.recall import search

    out: dict = {m: [] for m in MODES}
    for kind, text, gold in queries:
        g = gold_ranges(root, gold)
        vec = vectors(text) if vectors else None
        for mode in MODES:
            t0 = time.perf_counter()
            if mode == "bm25":
                rows = search.keyword(conn, text, {}, 10)
                spans, abstained, weak, ev = [hit_span(r[0], root) for r in rows], False, False, {}
            else:
                try:
                    res = search.run(conn, text, mode, {}, 10, query_vector=vec)
                except BadRequest:
                    continue  # semantic without vectors: the mode is not reported
                spans, abstained, weak, ev = (
                    [hit_span(c.node, root) for c in res.hits],
                    res.abstained,
                    res.weak,
                    res.evidence,
                )
            ms = (time.perf_counter() - t0) * 1000
            row = {
                "kind": kind,
                "query": text,
                "abstained": abstained or not spans,
                "weak": weak,
                "evidence": ev,
                "ms": ms,
                "degraded": mode != "bm25" and bool(res.degraded),
            }
            row.update(metrics(spans, g) if g else {})
            out[mode].append(row)
    return out


def table(results: dict) -> dict:
    """{mode: {kind: {ndcg, recall, mrr, n}, "abstain": {...}}}"""
    summary: dict = {}
    for mode, rows in results.items():
        if not rows:
            continue
        s = kind_means(rows, KINDS, "all")
        none = [r for r in rows if r["kind"] == "none"]
        ans = [r for r in rows if r["kind"] != "none"]
        # A no-answer query is caught when it comes back empty or flagged weak; an
        # answerable one is lost only when emptied (flagged weak, its hits are still there).
        s["abstain"] = {
            "no_answer": round(sum(r["abstained"] or r.get("weak", False) for r in none) / max(len(none), 1), 3),
            "answerable_left_empty": round(sum(r["abstained"] for r in ans) / max(len(ans), 1), 3),
            "answerable_flagged_weak": round(sum(r.get("weak", False) for r in ans) / max(len(ans), 1), 3),
            "n_none": len(none),
        }
        summary[mode] = s
    return summary


def print_table(summary: dict) -> None:
    print(f"{'mode':<9} {'kind':<13} {'NDCG@10':>8} {'R@10':>6} {'MRR@10':>7} {'n':>4}")
    for mode, s in summary.items():
        for kind in (*KINDS, "all"):
            if kind in s:
                r = s[kind]
                print(f"{mode:<9} {kind:<13} {r['ndcg']:>8.3f} {r['recall']:>6.3f} {r['mrr']:>7.3f} {r['n']:>4}")
        a = s["abstain"]
        print(
            f"{mode:<9} no-answer emptied or flagged weak: {a['no_answer']:.3f} of {a['n_none']}; "
            f"answerable emptied {a['answerable_left_empty']:.3f}, flagged weak "
            f"{a.get('answerable_flagged_weak', 0.0):.3f}"
        )


def evaluate(small: bool = False, cache: str | None = None) -> dict:
    from memtree.store import db as store_db

    root = fetch(cache_dir(cache))
    queries = [q for q in QUERIES if not small or q[1] in SMALL]
    with tempfile.TemporaryDirectory(prefix="memtree-eval-") as work:
        config = eval_config()
        proc, caller, paths = start_writer(work, config)
        try:
            t0 = time.perf_counter()
            n_chunks = ingest(root, caller)
            ingest_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            provider = embed_corpus(paths, config)
            embed_s = time.perf_counter() - t0
            vectors = query_embedder(provider) if provider else None
        finally:
            caller.close()
            stop(proc)
        conn = store_db.open_read(paths.db)
        try:
            results = run_queries(conn, root, queries, vectors)
        finally:
            conn.close()
    return {
        "chunks": n_chunks,
        "ingest_s": ingest_s,
        "results": results,
        "summary": table(results),
        "answerable": sum(1 for q in queries if q[0] != "none"),
        "no_answer": sum(1 for q in queries if q[0] == "none"),
        "provider": provider.name if provider else "none",
        "embed_s": embed_s,
    }


def load_baseline() -> dict:
    return baselines.load(BASELINE)


def write_baseline(subset: str, provider: str, summary: dict) -> None:
    """Baselines are kept per subset and per embedding provider: a run is only
    compared with one made under the same conditions."""
    baselines.store(BASELINE, subset, provider, summary)


def main(argv: list[str] | None = None) -> int:

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="the CI subset only")
    ap.add_argument("--cache", help="where the sdists are kept (default ~/.cache/memtree-eval)")
    ap.add_argument("--write-baseline", action="store_true", help=f"write the figures to {BASELINE}")
    args = ap.parse_args(argv)
    out = evaluate(args.small, args.cache)
    print(
        f"corpus: {', '.join(f'{k}=={v}' for k, v in CORPUS.items())}; {out['chunks']} chunks ingested "
        f"through PutFile in {out['ingest_s']:.1f}s; {out['answerable']} answerable + {out['no_answer']} no-answer "
        f"queries"
    )
    print_table(out["summary"])
    print(
        f"embeddings: {out['provider']}, corpus embedded by the embed walker in {out['embed_s']:.1f}s"
        + (
            ""
            if out["provider"] != "none"
            else " (no provider installed: semantic not run, hybrid ran degraded to keyword)"
        )
    )
    if args.write_baseline:
        write_baseline("small" if args.small else "full", out["provider"], out["summary"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
