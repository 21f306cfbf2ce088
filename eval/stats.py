"""Small statistics for the benchmarks: medians and p95s, printed in ms."""

from __future__ import annotations

import statistics


def summary(samples: list[float]) -> dict:
    s = sorted(samples)
    p95 = s[min(len(s) - 1, max(0, round(0.95 * len(s)) - 1))]
    return {"n": len(s), "median": statistics.median(s), "p95": p95, "min": s[0], "max": s[-1]}


def fmt_ms(st: dict) -> str:
    return f"median {st['median'] * 1000:8.1f} ms  p95 {st['p95'] * 1000:8.1f} ms  (n={st['n']})"


def kind_means(rows: list[dict], kinds: tuple, total: str, extra: tuple = ()) -> dict:
    """Per query kind (and ``total``: every answerable one), the mean NDCG,
    recall and MRR (and ``extra`` fields) of the answerable rows, with n."""
    out = {}
    for kind in (*kinds, total):
        sel = [r for r in rows if r["kind"] != "none" and kind in (r["kind"], total)]
        if sel:
            out[kind] = {m: round(sum(r[m] for r in sel) / len(sel), 3) for m in ("ndcg", "recall", "mrr", *extra)}
            out[kind]["n"] = len(sel)
    return out
