"""Broad recall eval: 1,000+ queries of five kinds over eleven pinned sdists.

    .venv/bin/python -m memtree.eval.broad_eval [--small] [--write-baseline] [--cache DIR] [--json FILE]

Corpus: eval/broad_corpus.py (pinned versions and sha256, fetched once into
the shared eval cache). Queries, by kind:

- ``symbol``: a definition's name (generated from the AST, eval/broad_gen.py);
- ``where``: short "where is X handled" questions (hand-written, eval/broad_queries.py);
- ``paraphrase``: 10-30 words in plain language, avoiding the code's words (hand-written);
- ``docstring``: a docstring's first sentence, searched over a copy of the
  corpus with every docstring removed (generated);
- ``none``: questions the corpus does not answer (hand-written).

Ingest is what an agent's ``read`` does: each file chunked by
memtree.text.chunking and sent to a real writer process as one PutFile; then
the real embed walker runs until every chunk has a vector. Two stores are
built: the corpus as it is (symbol, where, paraphrase, none) and its
docstring-free copy (docstring). Each query then goes the way the MCP
``recall`` tool sends it (memtree.recall.retrieval._search: search.run with
limit+1, cut to the limit; the query embedded by the provider the walker
answers EmbedQuery with) in every mode, beside plain BM25: FTS5 bm25 over the
same stored chunks, every token ORed, no ranking, no abstention.

Figures per kind and mode: NDCG@10 with file-level gold, Recall@10 and MRR@10
with line-range gold (a hit counts when its chunk overlaps a gold range), and
the emptied rate (abstained or no hits). Every tenth query of each store is
also asked through the recall tool itself (eval/broad_tool.py), to show the
figures are the tool's. For ``none``: the share abstained,
and the share flagged (abstained, or the outcome marked weak: an Outcome
attribute ``confidence`` of "weak"/"low", when search has one).
"""

from __future__ import annotations

import argparse
import ast
import functools
import os
import re
import sys
import tempfile
import time

from memtree.eval import baselines, broad_corpus, broad_gen, broad_tool
from memtree.eval.recall_eval import (
    embed_corpus,
    eval_config,
    hit_span,
    metrics,
    put_file,
    query_embedder,
    start_writer,
    stop,
    symbol_lines,
)
from memtree.eval.stats import kind_means

BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "broad_baseline.json")
KINDS = ("symbol", "where", "paraphrase", "docstring", "none")
ANSWERABLE = KINDS[:-1]
MODES = ("bm25", "keyword", "semantic", "hybrid")
LIMIT = 10
WEAK = {"weak", "low"}
TOOL_SAMPLE_EVERY = 10  # of each store's queries, in list order, also run through the recall tool itself

# The CI subset (tests/unit/recall/test_broad_eval.py): four packages of different styles
# ingested whole, and of their queries every one of the hand-written kinds and
# every second generated one; every second no-answer query. Fixed by list
# position, never by what a search returns.
SMALL_PACKAGES = {"bottle", "sqlparse", "tablib", "tomlkit"}


@functools.lru_cache(maxsize=64)
def _parsed(path: str) -> ast.Module:
    return ast.parse(open(path, encoding="utf-8").read())


def _resolve(root: str, gold: list[str]) -> list[tuple[str, int, int]]:
    """``path:Class.method`` -> (path, first line with decorators, last line)."""
    out = []
    for g in gold:
        rel, _, symbol = g.rpartition(":")
        out.append((rel, *symbol_lines(_parsed(os.path.join(root, rel)), symbol, rel)))
    return out


def all_queries(root: str, small: bool = False) -> list[dict]:
    from memtree.eval.broad_queries import HAND

    only = SMALL_PACKAGES if small else None
    files = broad_corpus.source_files(root, only)
    out = []
    gen = broad_gen.generated(root, files)
    for i, (kind, text, gold, pkg) in enumerate(gen):
        out.append({"kind": kind, "query": text, "gold": gold, "package": pkg, "pos": i})
    for i, (kind, text, gold) in enumerate(HAND):
        pkg = broad_corpus.package_of(gold[0].split(":", 1)[0]) if gold else None
        if only is not None and pkg is not None and pkg not in only:
            continue
        out.append({"kind": kind, "query": text, "gold": _resolve(root, gold), "package": pkg, "pos": i})
    if small:
        out = [q for q in out if q["kind"] in ("where", "paraphrase") or q["pos"] % 2 == 0]
    return out


# -- stores ----------------------------------------------------------------------------------


def ingest(files: list[str], root: str, caller, mirror: str | None = None) -> int:
    """PutFile per file as the wrapped read sends it; with ``mirror``, the
    docstring-free copy is written under it and ingested from there."""
    n = 0
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        if mirror is not None:
            text = broad_corpus.strip_docstrings(data.decode("utf-8", errors="replace"))
            path = os.path.join(mirror, os.path.relpath(path, root))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            data = text.encode("utf-8")
            with open(path, "wb") as f:
                f.write(data)
        n += put_file(caller, path, data)
    return n


def build_store(work: str, files: list[str], root: str, stripped: bool) -> dict:
    config = eval_config()
    where = os.path.join(work, "stripped" if stripped else "plain")
    os.makedirs(where)
    proc, caller, paths = start_writer(where, config)
    try:
        t0 = time.perf_counter()
        mirror = os.path.join(where, "corpus") if stripped else None
        n = ingest(files, root, caller, mirror)
        ingest_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        provider = embed_corpus(paths, config)
        embed_s = time.perf_counter() - t0
    finally:
        caller.close()
        stop(proc)
    return {
        "paths": paths,
        "root": mirror or root,
        "chunks": n,
        "ingest_s": ingest_s,
        "embed_s": embed_s,
        "provider": provider,
        "where": where,
    }


# -- queries ---------------------------------------------------------------------------------


def bm25_match(text: str) -> str:
    """Plain BM25's query: every token of the text (split as the FTS5
    unicode61 tokenizer splits, so ``Row.append`` and ``to_seconds`` are two
    words each, not a phrase) ORed; no stopwords, no ranking."""
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(re.findall(r"[A-Za-z0-9]+", text.lower())))


def search_once(conn, text: str, mode: str, vec):
    """(hits, emptied, flagged) as the MCP recall tool would get them."""
    from memtree.errors import BadRequest
    from memtree.recall import search
    from memtree.store import reads

    if mode == "bm25":
        rows = reads.search_fts(conn, bm25_match(text), {}, LIMIT)
        return [r[0] for r in rows], not rows, not rows
    try:
        res = search.run(conn, text, mode, {}, LIMIT + 1, query_vector=vec)
    except BadRequest:
        return None
    hits = [c.node for c in res.hits[:LIMIT]]
    emptied = bool(res.abstained) or not hits
    weak = str(getattr(res, "confidence", "") or "").lower() in WEAK
    return hits, emptied, emptied or weak


def run_queries(store: dict, queries: list[dict], vectors) -> dict:
    from memtree.store import db as store_db

    out: dict = {m: [] for m in MODES}
    conn = store_db.open_read(store["paths"].db)
    try:
        for q in queries:
            vec = vectors(q["query"]) if vectors else None
            for mode in MODES:
                t0 = time.perf_counter()
                got = search_once(conn, q["query"], mode, vec)
                if got is None:
                    continue  # semantic without vectors: the mode is not reported
                hits, emptied, flagged = got
                row = {
                    "kind": q["kind"],
                    "package": q["package"],
                    "query": q["query"],
                    "emptied": emptied,
                    "flagged": flagged,
                    "ms": (time.perf_counter() - t0) * 1000,
                    "top": [hit_span(h, store["root"]) for h in hits[:3]],
                    "ids": [h["id"] for h in hits],
                }
                if q["gold"]:
                    row.update(metrics([hit_span(h, store["root"]) for h in hits], q["gold"], LIMIT))
                out[mode].append(row)
    finally:
        conn.close()
    return out


def summarise(results: dict) -> dict:
    """{mode: {kind: {ndcg, recall, mrr, emptied, n}, "none": {abstained, flagged, n}, "answerable": {...}}}"""
    summary: dict = {}
    for mode, rows in results.items():
        if not rows:
            continue
        s = kind_means(rows, ANSWERABLE, "answerable", extra=("emptied",))
        none = [r for r in rows if r["kind"] == "none"]
        if none:
            s["none"] = {
                "abstained": round(sum(r["emptied"] for r in none) / len(none), 3),
                "flagged": round(sum(r["flagged"] for r in none) / len(none), 3),
                "n": len(none),
            }
        summary[mode] = s
    return summary


def print_table(summary: dict) -> None:
    print(f"{'kind':<11} {'mode':<9} {'NDCG@10':>8} {'R@10':>6} {'MRR@10':>7} {'emptied':>8} {'n':>5}")
    for kind in (*ANSWERABLE, "answerable"):
        for mode in MODES:
            r = summary.get(mode, {}).get(kind)
            if r:
                print(
                    f"{kind:<11} {mode:<9} {r['ndcg']:>8.3f} {r['recall']:>6.3f} {r['mrr']:>7.3f} "
                    f"{r['emptied']:>8.3f} {r['n']:>5}"
                )
    for mode in MODES:
        r = summary.get(mode, {}).get("none")
        if r:
            print(
                f"{'none':<11} {mode:<9} abstained {r['abstained']:.3f}, abstained or flagged weak "
                f"{r['flagged']:.3f} of {r['n']} no-answer queries"
            )


def evaluate(small: bool = False, cache: str | None = None) -> dict:
    only = SMALL_PACKAGES if small else None
    root = broad_corpus.fetch(cache, only)
    files = broad_corpus.source_files(root, only)
    queries = all_queries(root, small)
    results: dict = {m: [] for m in MODES}
    info: dict = {}
    tool: dict = {}
    with tempfile.TemporaryDirectory(prefix="memtree-broad-") as work:
        for stripped in (False, True):
            store = build_store(work, files, root, stripped)
            sel = [q for q in queries if (q["kind"] == "docstring") == stripped]
            vectors = query_embedder(store["provider"]) if store["provider"] else None
            got = run_queries(store, sel, vectors)
            for mode, rows in got.items():
                results[mode] += rows
            if store["provider"]:
                sample = [q["query"] for q in sel[::TOOL_SAMPLE_EVERY]]
                mine = {m: {r["query"]: (r["ids"], r["emptied"]) for r in got[m]} for m in broad_tool.MODES}
                for mode, c in broad_tool.compare(broad_tool.tool_answers(store["where"], sample), mine).items():
                    agg = tool.setdefault(
                        mode,
                        {
                            "n": 0,
                            "same_ids": 0,
                            "same_emptied": 0,
                            "degraded": 0,
                            "hits_within_budget": 0.0,
                            "differ": [],
                        },
                    )
                    for k in ("n", "same_ids", "same_emptied", "degraded"):
                        agg[k] += c[k]
                    agg["hits_within_budget"] += c["mean_hits_within_budget"] * c["n"]
                    agg["differ"] += c["differ"]
            info["stripped" if stripped else "plain"] = {k: store[k] for k in ("chunks", "ingest_s", "embed_s")}
            info["provider"] = store["provider"].name if store["provider"] else "none"
    for agg in tool.values():
        agg["hits_within_budget"] = round(agg["hits_within_budget"] / max(agg["n"], 1), 2)
    return {
        "summary": summarise(results),
        "results": results,
        "stores": info,
        "files": len(files),
        "queries": len(queries),
        "provider": info["provider"],
        "small": small,
        "tool": tool,
    }


def load_baseline() -> dict:
    return baselines.load(BASELINE)


def write_baseline(subset: str, provider: str, summary: dict, commit: str) -> None:
    """Per subset and embedding provider, with the commit whose ranking made
    it. Rewrite it (``--small --write-baseline``) in the commit that changes
    the ranking, so the change and the figures it moves are reviewed together."""
    baselines.store(BASELINE, subset, provider, {"commit": commit, "summary": summary})


def _commit() -> str:
    import subprocess

    try:
        # The last commit that changed what a search returns (ranking, chunking, the store), not the eval's own.
        return (
            subprocess.run(
                [
                    "git",
                    "log",
                    "-1",
                    "--format=%h",
                    "--",
                    "memtree/recall",
                    "memtree/text",
                    "memtree/store",
                    "actors/walkers",
                    "config",
                ],
                capture_output=True,
                text=True,
                timeout=10,
                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            ).stdout.strip()
            or "unknown"
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    import orjson

    from memtree.text import budget

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", action="store_true", help="the CI subset only")
    ap.add_argument("--cache", help="where the sdists are kept (default ~/.cache/memtree-eval)")
    ap.add_argument("--json", help="write every query's row to this file")
    ap.add_argument("--write-baseline", action="store_true", help=f"write the figures to {BASELINE}")
    args = ap.parse_args(argv)
    out = evaluate(args.small, args.cache)
    st = out["stores"]
    print(
        f"corpus: {', '.join(f'{c[0]}=={c[1]}' for c in broad_corpus.CORPUS if not args.small or c[0] in SMALL_PACKAGES)}"
        f"; {out['files']} files; {out['queries']} queries"
    )
    print(
        f"plain store: {st['plain']['chunks']} chunks, PutFile {st['plain']['ingest_s']:.1f}s, embedded "
        f"{st['plain']['embed_s']:.1f}s; docstring-free store: {st['stripped']['chunks']} chunks, "
        f"{st['stripped']['ingest_s']:.1f}s, {st['stripped']['embed_s']:.1f}s; embeddings: {out['provider']}"
    )
    print_table(out["summary"])
    for mode, t in out["tool"].items():
        print(
            f"through the recall tool ({mode}, every {TOOL_SAMPLE_EVERY}th query, {t['n']}): same hits in the same "
            f"order {t['same_ids']}, same emptiness {t['same_emptied']}, degraded {t['degraded']}; hits an agent "
            f"sees within the default {budget.DEFAULT_BUDGET}-token budget: {t['hits_within_budget']:.2f} on average"
        )
        for q in t["differ"][:3]:
            print(f"  differs: {q!r}")
    if args.json:
        with open(args.json, "wb") as f:
            f.write(orjson.dumps(out["results"], option=orjson.OPT_INDENT_2))
    if args.write_baseline:
        write_baseline("small" if args.small else "full", out["provider"], out["summary"], _commit())
    return 0


if __name__ == "__main__":
    sys.exit(main())


# -- the CI gate ------------------------------------------------------------------------------

GATED_MODES = ("keyword", "semantic", "hybrid")  # bm25 is the yardstick, not memtree's ranking
KIND_TOL = 0.05  # per kind (25-70 queries each in the subset): one or two queries moving
ALL_TOL = 0.02  # over every answerable query of the subset
NONE_TOL = 0.06  # no-answer share abstained or flagged (about 50 queries): three queries


def regressions(now: dict, base: dict) -> list[str]:
    """Every figure of ``now`` that fell below ``base`` by more than its
    tolerance (or, for an emptied rate, rose above it), named; [] when none."""
    out = []
    for mode in GATED_MODES:
        if mode not in base:
            continue
        if mode not in now:
            out.append(f"{mode}: not run (baseline has it)")
            continue
        for kind, b in base[mode].items():
            n = now[mode].get(kind)
            if n is None:
                out.append(f"{mode}/{kind}: missing")
                continue
            if kind == "none":
                if n["flagged"] < b["flagged"] - NONE_TOL:
                    out.append(f"{mode}/none: abstained or flagged {n['flagged']:.3f} < baseline {b['flagged']:.3f}")
                continue
            tol = ALL_TOL if kind == "answerable" else KIND_TOL
            for m in ("ndcg", "recall", "mrr"):
                if n[m] < b[m] - tol:
                    out.append(f"{mode}/{kind}: {m} {n[m]:.3f} < baseline {b[m]:.3f} - {tol}")
            if n["emptied"] > b["emptied"] + tol:
                out.append(f"{mode}/{kind}: emptied {n['emptied']:.3f} > baseline {b['emptied']:.3f} + {tol}")
    return out
