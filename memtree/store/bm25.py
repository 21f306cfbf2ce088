"""FTS5's BM25 with the phrases' document counts given, not counted.

FTS5's ``bm25()`` counts, once per statement, the rows holding each phrase of
the MATCH (its IDF): a walk of the phrase's doclists over the whole index,
whatever rowid range the MATCH itself is bounded to. For a phrase of common
tokens ("get_in" is the phrase "get in") that walk intersects two long
doclists with their positions, and it cost as much as the MATCH again (24 ms
of 49 at a million rows) for the 199 rows found. ``memtree_bm25(nodes_fts,
hits...)`` is the same formula (fts5_aux.c: k1 1.2, b 0.75, every column
weighted 1) with the counts the search already made (search.doc_counts),
scored in Python: a few microseconds a row, so it pays where the rows are
few and the walk long.
"""

from __future__ import annotations

import math

import apsw

NAME = "memtree_bm25"
K1 = 1.2
B = 0.75


def idf(rows: int, hits: float) -> float:
    """FTS5's IDF of a phrase in ``hits`` of ``rows`` rows (never below 1e-6).
    An estimated count (search.doc_counts) can reach the rows, or pass them
    when a write lands between the count and the MATCH: 1e-6 then, as FTS5
    gives a phrase in every row, not a math domain error."""
    ratio = (rows - hits + 0.5) / (hits + 0.5)
    return math.log(ratio) if ratio > 1.0 else 1e-6


def score(freqs: list[int], weights: list[float], size: int, avgdl: float) -> float:
    """A row's BM25 (positive: higher ranks first) from each phrase's
    frequency in it and weight (IDF), its size in tokens and the average size."""
    norm = K1 * (1.0 - B + B * size / avgdl) if avgdl else K1
    return sum(w * f * (K1 + 1.0) / (f + norm) for f, w in zip(freqs, weights) if f)


def _score(api: apsw.FTS5ExtensionApi, *hits: float) -> float:
    """The row's BM25 (negated, as FTS5's: lower ranks first)."""
    stats = api.aux_data  # per statement: the averages and the IDFs
    if stats is None:
        rows = max(api.row_count, 1)
        stats = api.aux_data = (api.column_total_size(-1) / rows, [idf(rows, h) for h in hits])
    avgdl, weights = stats
    freqs = [sum(len(offsets) for offsets in api.phrase_locations(i)) for i in range(len(weights))]
    return -score(freqs, weights, api.column_size(-1), avgdl)


def register(conn: apsw.Connection) -> None:
    conn.register_fts5_function(NAME, _score)
