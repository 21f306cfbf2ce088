"""The first pass of semantic search: a 1-bit code per vector, scanned in memory.

An exact float scan reads 1 KB a vector (256 float32s): ~1.5 s a query at a
million nodes. Each vector also has its sign bits (``nodes_vec.code``, 32
bytes at 256 dims), written beside it by the writer. A reading process (the
front) keeps every code of one model in numpy arrays with the node's status,
kind and creation time, so a query's first pass is one XOR-popcount over
~32 MB plus the filters as boolean masks, then the best ``RERANK`` by Hamming
distance go back to SQL for the exact cosine and the live predicate
(store/vectors.knn). The first pass filters before it cuts, so non-live
vectors nearer than a live one never push it out; the SQL rerank decides
what a read may return.

A VACUUM may renumber rowids without a log entry; it bumps the schema cookie,
which each query compares with the one the arrays were loaded under.
Staying in step across processes: triggers (schema m005) append to ``vec_log``
the rowid of every vector that changed or whose node's status, kind or time did; each
query reads the log past the position its arrays reflect, in one read
transaction with the load. The writer trims the log (``vec_log_trimmed``
counter); a reader that fell behind the trim loads everything again.
Memory: ~50 bytes a vector (50 MB at 1M), bounded by the disk budget: the slots of
vectors that left are dropped once they outnumber the rest (``GONE_MAX``).
"""

from __future__ import annotations

import array
import os
import threading

from memtree.runtime import optional

RERANK = 4000  # first-pass candidates by Hamming distance (recall@100 vs exact: eval/bench_scale)
# Of those, this many (or 10 x k) best by the query's floats against their
# sign bits (by_query) are rescored exactly: the exact rerank (~a lookup of a
# 1 KB vector each) was most of a semantic query's time at 4,000.
RERANK_EXACT = 1000
# Fewer matching vectors than this many times those rescored exactly: the exact SQL scan is
# cheaper than reranking (a rerank lookup cost ~3.5 scanned rows here:
# eval/bench_scale at 2k and 10k), and it is exact.
EXACT_FACTOR = 3
TAIL_MAX = 4096  # unsorted appends before the arrays are sorted again
GONE = 255  # status code of a slot whose vector left
# Gone slots kept before the arrays drop them: at most this many or as many as
# the slots still held, so the arrays stay within twice the vectors present
# (a pruned store renews its vectors, and new ones take new rowids).
GONE_MAX = 1024


def code_of(vector) -> bytes:
    """Sign bits of a vector (float32 blob, list or array), most significant
    bit first, padded to whole 64-bit words. The writer and the query use this
    one function, so their codes always agree."""
    if optional.missing("numpy") is None:
        import numpy as np

        v = (
            np.frombuffer(vector, dtype="<f4")
            if isinstance(vector, (bytes, bytearray, memoryview))
            else np.asarray(vector, dtype=np.float32)
        )
        bits = np.packbits(v > 0)
        pad = -len(bits) % 8
        return bits.tobytes() + b"\0" * pad
    vals = array.array("f")
    if isinstance(vector, (bytes, bytearray, memoryview)):
        vals.frombytes(bytes(vector))
    else:
        vals.extend(vector)
    out = bytearray((len(vals) + 63) // 64 * 8)
    for i, x in enumerate(vals):
        if x > 0:
            out[i >> 3] |= 128 >> (i & 7)
    return bytes(out)


class _Codes:
    """One model's codes, in rowid order up to ``sorted_n`` then appended.
    ``codes`` is (words, n): each 64-bit word of every code contiguous, so the
    XOR-popcount runs over flat arrays (a sum along a short axis was 8x slower)."""

    def __init__(self, np, words: int):
        self.np, self.words = np, words
        self.rowids = np.zeros(0, np.int64)
        self.codes = np.zeros((words, 0), np.uint64)
        self.status = np.zeros(0, np.uint8)
        self.kind = np.zeros(0, np.uint8)
        self.created = np.zeros(0, np.int64)
        self.sorted_n = 0
        self.seq = 0
        self.schema = None  # PRAGMA schema_version the arrays were loaded under
        self.status_codes: dict[str, int] = {}
        self.kind_codes: dict[str, int] = {}

    def _code(self, table: dict, value: str) -> int:
        if value not in table:
            table[value] = len(table)  # < GONE: there are 7 statuses and 7 kinds
        return table[value]

    def _find(self, rowids):
        """Slot of each rowid, -1 where it has none."""
        np = self.np
        out = np.full(len(rowids), -1, np.int64)
        if self.sorted_n:
            pos = np.searchsorted(self.rowids[: self.sorted_n], rowids)
            pos_c = np.minimum(pos, self.sorted_n - 1)
            hit = self.rowids[pos_c] == rowids
            out[hit] = pos_c[hit]
        tail = self.rowids[self.sorted_n :]
        if len(tail):
            for i in np.nonzero(out < 0)[0]:
                j = np.nonzero(tail == rowids[i])[0]
                if len(j):
                    out[i] = self.sorted_n + j[0]
        return out

    def apply(self, rows) -> None:
        """rows: (rowid, code or None, status, kind, created_at); None = vector gone."""
        np = self.np
        if not rows:
            return
        last = {r[0]: r for r in rows}  # the latest state of each node wins
        rows = list(last.values())
        rowids = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        slots = self._find(rowids)
        new = []
        left = False
        for r, slot in zip(rows, slots):
            if slot >= 0:
                if r[1] is None:
                    self.status[slot] = GONE
                    self.codes[:, slot] = 0
                    left = True
                else:
                    self.codes[:, slot] = np.frombuffer(r[1], np.uint64, self.words)
                    self.status[slot] = self._code(self.status_codes, r[2])
                    self.kind[slot] = self._code(self.kind_codes, r[3])
                    self.created[slot] = r[4]
            elif r[1] is not None:
                new.append(r)
        if new:
            self._append(new)
        if left:
            self._drop_gone()

    def _drop_gone(self) -> None:
        """Drop the gone slots once they outnumber GONE_MAX and the slots held (amortised: each
        drop at least halves the arrays' gone share), keeping the rowid order."""
        gone = self.status == GONE
        n_gone = int(gone.sum())
        if n_gone <= max(GONE_MAX, len(gone) - n_gone):
            return
        keep = ~gone
        self.sorted_n = int(keep[: self.sorted_n].sum())
        self.rowids, self.codes = self.rowids[keep], self.codes[:, keep]
        self.status, self.kind, self.created = self.status[keep], self.kind[keep], self.created[keep]

    def _arrays(self, rows) -> tuple:
        np = self.np
        n = len(rows)
        return (
            np.fromiter((r[0] for r in rows), np.int64, n),
            np.frombuffer(b"".join(r[1] for r in rows), np.uint64).reshape(n, self.words).T,
            np.fromiter((self._code(self.status_codes, r[2]) for r in rows), np.uint8, n),
            np.fromiter((self._code(self.kind_codes, r[3]) for r in rows), np.uint8, n),
            np.fromiter((r[4] for r in rows), np.int64, n),
        )

    def _append(self, rows) -> None:
        self._extend([self._arrays(rows)])

    def _extend(self, parts: list[tuple]) -> None:
        """Append column arrays; the rowid order is kept when they continue it."""
        np = self.np
        rowids = np.concatenate([p[0] for p in parts])
        in_order = bool(np.all(rowids[1:] > rowids[:-1]))
        was_sorted = (
            self.sorted_n == len(self.rowids)
            and in_order
            and (not len(self.rowids) or not len(rowids) or rowids[0] > self.rowids[-1])
        )
        self.rowids = np.concatenate([self.rowids, rowids])
        self.codes = np.concatenate([self.codes, *[p[1] for p in parts]], axis=1)
        for i, name in enumerate(("status", "kind", "created"), 2):
            setattr(self, name, np.concatenate([getattr(self, name), *[p[i] for p in parts]]))
        if was_sorted:
            self.sorted_n = len(self.rowids)
        elif len(self.rowids) - self.sorted_n > TAIL_MAX:
            self._sort()

    def _sort(self) -> None:
        order = self.np.argsort(self.rowids, kind="stable")
        self.codes = self.codes[:, order]
        for name in ("rowids", "status", "kind", "created"):
            setattr(self, name, getattr(self, name)[order])
        self.sorted_n = len(self.rowids)

    def mask(self, filters: dict):
        np = self.np
        wanted = filters.get("status") or ("live",)
        ok = np.zeros(256, bool)
        ok[[self.status_codes[s] for s in wanted if s in self.status_codes]] = True
        m = ok[self.status]
        if filters.get("kind"):
            ok = np.zeros(256, bool)
            ok[[self.kind_codes[k] for k in filters["kind"] if k in self.kind_codes]] = True
            m &= ok[self.kind]
        if filters.get("since") is not None:
            m &= self.created >= filters["since"]
        if filters.get("until") is not None:
            m &= self.created <= filters["until"]
        return m


_LOCK = threading.Lock()
_CACHE: dict[tuple, _Codes] = {}


def _store_key(db, model: str, dim: int) -> tuple | None:
    path = db.db_filename("main")
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    born = db.execute("SELECT applied_at FROM schema_migrations WHERE name = 'm001_initial'").fetchone()
    return (path, st.st_dev, st.st_ino, born and born[0], model, dim)


def _rows_from(cursor, np):
    """(vector rowid, code, status, kind, created_at) with the code made from the
    float vector where the writer stored none (a row written before m005)."""
    out = []
    for rowid, code, emb, status, kind, created in cursor:
        if code is None and emb is not None:
            code = code_of(emb)
        if status is None:  # the node row is gone
            code = None
        out.append((rowid, code, status, kind, created))
    return out


def _load(db, idx: _Codes, model: str, dim: int) -> None:
    """Every code of the model, read in slices so the peak stays near the arrays' size."""
    import itertools

    np = idx.np
    idx.schema = db.execute("PRAGMA schema_version").fetchone()[0]
    idx.seq = db.execute("SELECT coalesce(max(seq), 0) FROM vec_log").fetchone()[0]
    cur = db.execute(
        "SELECT v.rowid, v.code, CASE WHEN v.code IS NULL THEN v.embedding END, n.status, n.kind, n.created_at "
        "FROM nodes_vec v JOIN nodes n ON n.id = v.node_id WHERE v.model = ? AND v.dim = ?",
        (model, dim),
    )
    parts = []
    while True:
        got = _rows_from(itertools.islice(cur, 65536), np)
        if not got:
            break
        rows = [r for r in got if r[1] is not None]
        if rows:
            parts.append(idx._arrays(rows))
    idx.sorted_n = 0
    idx.rowids = np.zeros(0, np.int64)
    idx.codes = np.zeros((idx.words, 0), np.uint64)
    for name in ("status", "kind"):
        setattr(idx, name, np.zeros(0, np.uint8))
    idx.created = np.zeros(0, np.int64)
    if parts:
        idx._extend(parts)
        if idx.sorted_n != len(idx.rowids):
            idx._sort()


def _sync(db, idx: _Codes, model: str, dim: int) -> None:
    trimmed = db.execute("SELECT value FROM counters WHERE name = 'vec_log_trimmed'").fetchone()
    # A VACUUM (open_write converts an older store with one) may renumber the
    # vectors' rowids behind the log, and bumps the schema cookie: load again.
    renumbered = db.execute("PRAGMA schema_version").fetchone()[0] != idx.schema
    if idx.seq == 0 and not len(idx.rowids) or (trimmed and trimmed[0] > idx.seq) or renumbered:
        return _load(db, idx, model, dim)
    rows = db.execute(
        "SELECT l.seq, l.vec_rowid, v.code, CASE WHEN v.code IS NULL THEN v.embedding END, n.status, n.kind, "
        "n.created_at FROM vec_log l LEFT JOIN nodes_vec v ON v.rowid = l.vec_rowid AND v.model = ? AND v.dim = ? "
        "LEFT JOIN nodes n ON n.id = v.node_id WHERE l.seq > ? ORDER BY l.seq",
        (model, dim, idx.seq),
    ).fetchall()
    if not rows:
        return
    idx.seq = rows[-1][0]
    idx.apply(_rows_from(((r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows), idx.np))


def candidates(db, model: str, dim: int, query_vector, filters: dict, n: int | None = None, keep: int | None = None):
    """nodes_vec rowids of at most ``n`` vectors of ``model`` whose nodes pass ``filters``, nearest
    by the sign bits first; with ``keep``, the ``keep`` of those the query
    itself (its floats, not its signs) scores best against their sign bits
    (``by_query``), best first. None when the exact scan should answer: no more
    than ``EXACT_FACTOR`` times the vectors rescored exactly match (cheaper and exact), no numpy, a
    parent/session filter that SQL narrows better, a store without the m005 log."""
    if optional.missing("numpy") or filters.get("parent_id") or filters.get("session_id"):
        return None
    import numpy as np

    if not hasattr(np, "bitwise_count"):  # numpy < 2
        return None
    if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_log'").fetchone() is None:
        return None
    n = RERANK if n is None else n
    key = _store_key(db, model, dim)
    if key is None:
        return None
    q = np.frombuffer(code_of(query_vector), np.uint64)
    with _LOCK:
        idx = _CACHE.get(key)
        if idx is None or idx.words != len(q):
            idx = _CACHE[key] = _Codes(np, len(q))
        db.execute("SAVEPOINT vector_index")  # the log position and the rows it covers: one snapshot
        try:
            _sync(db, idx, model, dim)
        finally:
            db.execute("RELEASE vector_index")
        mask = idx.mask(filters)
        if int(mask.sum()) <= EXACT_FACTOR * (n if keep is None else min(n, keep)):
            return None
        slots = nearest(idx, q, mask, n)
        if keep is not None and keep < len(slots):
            slots = slots[by_query(idx, slots, query_vector, dim)[:keep]]
        return idx.rowids[slots].tolist()


def by_query(idx: _Codes, slots, query_vector, dim: int):
    """``slots`` reordered best first by the query's floats summed over each
    code's set bits (the asymmetric estimate of the dot product from 1-bit
    codes: it ranks far closer to the exact cosine than the Hamming distance
    between signs does, so fewer candidates need the exact rerank). A table
    of the query's sum for each byte value at each byte position, then one
    lookup per code byte."""
    np = idx.np
    q = np.zeros(idx.words * 64, np.float32)
    q[:dim] = (
        np.frombuffer(query_vector, dtype="<f4")
        if isinstance(query_vector, (bytes, bytearray, memoryview))
        else np.asarray(query_vector, dtype=np.float32)
    )[:dim]
    table = _byte_bits(np) @ q.reshape(-1, 8).T  # [byte value, byte position]
    codes = np.ascontiguousarray(idx.codes[:, slots].T).view(np.uint8)  # the stored bytes, in order
    score = np.zeros(len(slots), np.float32)
    for j in range(codes.shape[1]):
        score += table[:, j][codes[:, j]]
    return np.argsort(-score, kind="stable")


def _byte_bits(np):
    """[byte value, bit] of every byte, most significant bit first (code_of's order)."""
    global _BYTE_BITS_TABLE
    if _BYTE_BITS_TABLE is None:
        _BYTE_BITS_TABLE = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
    return _BYTE_BITS_TABLE


_BYTE_BITS_TABLE = None


def nearest(idx: _Codes, q, mask, n: int):
    """Slots of ``n`` masked-in codes nearest ``q`` by Hamming distance.
    Distances are small integers, so a histogram finds the cut-off distance
    and two flat scans take what is under it and enough at it (an
    argpartition of a million was twice the cost)."""
    np = idx.np
    dist = np.bitwise_count(idx.codes[0] ^ q[0]).astype(np.uint16)
    for w in range(1, idx.words):
        dist += np.bitwise_count(idx.codes[w] ^ q[w])
    far = np.uint16(64 * idx.words + 1)
    dist[~mask] = far
    cum = np.cumsum(np.bincount(dist, minlength=int(far) + 1))
    cut = int(np.searchsorted(cum, n))  # the first distance at which n codes are reached
    under = np.flatnonzero(dist < cut)
    at = np.flatnonzero(dist == cut)[: n - len(under)]
    return np.concatenate([under, at])


def forget_cache() -> None:
    """Drop every cached index (tests that rewrite a store under the same path)."""
    with _LOCK:
        _CACHE.clear()
