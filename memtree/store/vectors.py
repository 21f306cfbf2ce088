"""Vectors: KNN over live nodes with sqlite-vec, and the model-safety check.

Vectors live in ``nodes_vec`` as float32 blobs with their model name and
dimension, their sign bits (``code``) and 4-bit code (``fine``); sqlite-vec's
``vec_distance_cosine`` ranks the candidates the in-memory passes over those
codes name (store/vector_index.py), whose filters match the SQL's, so a
hidden node can never starve a live one.
Reads only; the writer stores.
"""

from __future__ import annotations

import array
import base64
import binascii
import json

from memtree.errors import MemtreeError
from memtree.protocol import ErrorCode

# Kinds whose content is embedded (session and file roots have none).
from memtree.store.kinds import EMBED_KINDS
from memtree.store.live import INDEXED, status_clause
from memtree.store.reads import _filters_sql


class ModelMismatch(MemtreeError):
    code = ErrorCode.REFUSED


def to_blob(vector) -> bytes:
    """float32 little-endian bytes, what sqlite-vec reads."""
    if isinstance(vector, bytes):
        return vector
    if hasattr(vector, "astype"):
        return vector.astype("<f4").tobytes()
    return array.array("f", vector).tobytes()


def from_blob(blob: bytes) -> list[float]:
    return array.array("f", blob).tolist()


def to_wire(vector) -> str:
    """A vector as PutVectors carries it: base64 of its float32 blob. A JSON
    list of 384 floats cost the writer ~17 us a vector to parse and convert,
    ~40 % of a PutVectors, while a capture waited for it."""
    return base64.b64encode(to_blob(vector)).decode("ascii")


def from_wire(value, dim: int) -> bytes | None:
    """The float32 blob of a PutVectors item's ``vector``: base64 of its bytes
    (``to_wire``) or a list of numbers. None unless it is ``dim`` float32s."""
    if isinstance(value, str):
        try:
            blob = binascii.a2b_base64(value, strict_mode=True)
        except (binascii.Error, ValueError):
            return None
    elif isinstance(value, list):
        try:  # array("f") refuses what is not a number, in C (a check per element cost 16 us a vector)
            blob = to_blob(value)
        except TypeError:
            return None
    else:
        return None
    return blob if len(blob) == 4 * dim else None


def other_model_count(db, model: str, dim: int) -> int:
    return db.execute("SELECT count(*) FROM nodes_vec WHERE model != ? OR dim != ?", (model, dim)).fetchone()[0]


def check_model(db, model: str, dim: int) -> None:
    """Refuse semantic search over a store holding vectors of another model or dimension."""
    # The lowest and the highest (model, dim) on the nodes_vec_model index: two
    # seeks, where "model != ? OR dim != ?" scanned the whole index (19 ms a
    # query at 100k vectors); any other pair sorts first or last of the two.
    other = None
    for order in ("", " DESC"):
        row = db.execute(f"SELECT model, dim FROM nodes_vec ORDER BY model{order}, dim{order} LIMIT 1").fetchone()
        if row is not None and (row[0], row[1]) != (model, dim):
            other = row
            break
    if other is not None:
        raise ModelMismatch(
            f"semantic search refused: the store holds vectors of model {other[0]!r} ({other[1]} dims) but the "
            f"configured model is {model!r} ({dim} dims); run `memtree reembed` to rebuild them"
        )


def knn(db, query_vector, k: int, filters: dict | None = None, model: str | None = None) -> list[tuple[str, float]]:
    """[(node_id, cosine distance)], nearest first, over live nodes (or the
    statuses named in ``filters``) matching the search filters.

    With a model: the sign-bit first pass (store/vector_index.py) names at
    most ``RERANK`` (or 10 x k) candidates that already pass the filters, the
    query against their 4-bit codes keeps ``RERANK_EXACT`` (or FINE_KEEP x k)
    of them, and only those are scored exactly here, under the same SQL
    filters. A store with few matches (vector_index.EXACT_FACTOR) gets the
    exact scan."""
    filters = filters or {}
    blob = to_blob(query_vector)
    rowids = None
    if model is not None:
        from memtree.store import vector_index

        # Never fewer first-pass candidates than ten times the hits asked for.
        rowids = vector_index.candidates(
            db,
            model,
            len(blob) // 4,
            blob,
            filters,
            max(vector_index.RERANK, 10 * int(k)),
            keep=max(vector_index.RERANK_EXACT, vector_index.FINE_KEEP * int(k)),
        )
    if rowids is not None:
        return _rerank(db, blob, rowids, filters, model, int(k))
    where, params = _filters_sql(filters)
    sql = [
        f"SELECT v.node_id, vec_distance_cosine(v.embedding, ?) AS d FROM nodes_vec v "
        f"JOIN nodes n ON n.id = v.node_id WHERE {where}"
    ]
    if model is not None:
        sql.append("AND v.model = ?")
        params.append(model)
    # A zero vector (a text of no known token) has no cosine: NULL, sorted last and left out
    # (``d IS NOT NULL`` in the WHERE would compute every distance twice).
    rows = db.execute(" ".join(sql) + " ORDER BY d NULLS LAST LIMIT ?", [blob, *params, int(k)])
    return [(r[0], float(r[1])) for r in rows if r[1] is not None]


def _rerank(db, blob: bytes, rowids: list[int], filters: dict, model: str, k: int) -> list[tuple[str, float]]:
    """Exact cosine of the first pass's candidates (one integer lookup each,
    nodes never read), then the live predicate and filters on the nearest,
    ``k`` and a quarter at a time, until ``k`` pass: what a read returns is decided here."""
    where, params = _filters_sql(filters)
    scored = db.execute(
        "SELECT v.rowid, vec_distance_cosine(v.embedding, ?) AS d FROM json_each(?) j "
        "CROSS JOIN nodes_vec v ON v.rowid = j.value WHERE v.model = ? AND v.dim = ? ORDER BY d",
        (blob, json.dumps(rowids), model, len(blob) // 4),
    ).fetchall()
    scored = [r for r in scored if r[1] is not None]  # a zero vector has no cosine (NULL)
    out: list[tuple[str, float]] = []
    # The first pass filtered by the same predicate, so nearly all pass: a quarter more
    # than asked is checked first (twice as many was as many lookups again, for nothing).
    step = max(k + k // 4, 32)
    for i in range(0, len(scored), step):
        part = scored[i : i + step]
        ok = dict(
            db.execute(
                f"SELECT v.rowid, v.node_id FROM json_each(?) j CROSS JOIN nodes_vec v ON v.rowid = j.value "
                f"CROSS JOIN nodes n ON n.id = v.node_id WHERE {where}",
                [json.dumps([r for r, _ in part]), *params],
            )
        )
        out += [(ok[r], float(d)) for r, d in part if r in ok]
        if len(out) >= k:
            break
    return out[:k]


def backlog(
    db, model: str, limit: int, kinds: tuple[str, ...] = EMBED_KINDS, after: tuple[int, str] = (0, "")
) -> list[tuple[str, str, str, int]]:
    """(id, content_hash, content, created_at) of live nodes of ``kinds`` with no
    vector of ``model``, in creation order after ``after`` = (created_at, id):
    a caller walking a long backlog passes its last row, so each batch starts
    where the previous one ended instead of rescanning the embedded prefix."""
    where, params = status_clause("n")
    rows = db.execute(
        f"SELECT n.id, n.content_hash, n.content, n.created_at FROM nodes n LEFT JOIN nodes_vec v "
        f"ON v.node_id = n.id AND v.model = ? WHERE {where} AND v.node_id IS NULL "
        f"AND n.kind IN ({','.join('?' * len(kinds))}) AND (n.created_at, n.id) > (?, ?) "
        f"ORDER BY n.created_at, n.id LIMIT ?",
        [model, *params, *kinds, after[0], after[1], limit],
    )
    return [tuple(r) for r in rows]


def unembedded(db, model: str, ids: list[str], kinds: tuple[str, ...] = EMBED_KINDS) -> list[tuple[str, str, str]]:
    """(id, content_hash, content) of those of ``ids`` that are live nodes of
    ``kinds`` with no vector of ``model``: one lookup an id, not a walk."""
    if not ids:
        return []
    where, params = status_clause("n")
    rows = db.execute(
        f"SELECT n.id, n.content_hash, n.content FROM nodes n LEFT JOIN nodes_vec v "
        f"ON v.node_id = n.id AND v.model = ? WHERE n.id IN ({','.join('?' * len(ids))}) AND {where} "
        f"AND v.node_id IS NULL AND n.kind IN ({','.join('?' * len(kinds))})",
        [model, *ids, *params, *kinds],
    )
    return [tuple(r) for r in rows]


def newest(db, kinds: tuple[str, ...] = EMBED_KINDS) -> tuple[int, str] | None:
    """(created_at, id) of the newest live node of ``kinds``: where a backlog
    walk that found nothing to do goes on from."""
    where, params = status_clause("n")
    row = db.execute(
        f"SELECT n.created_at, n.id FROM nodes n WHERE {where} AND n.kind IN ({','.join('?' * len(kinds))}) "
        f"ORDER BY n.created_at DESC, n.id DESC LIMIT 1",
        [*params, *kinds],
    ).fetchone()
    return (row[0], row[1]) if row else None


def backlog_count(db, model: str, kinds: tuple[str, ...] = EMBED_KINDS) -> int:
    where, params = status_clause("n")
    return db.execute(
        f"SELECT count(*) FROM nodes n LEFT JOIN nodes_vec v ON v.node_id = n.id AND v.model = ? "
        f"WHERE {where} AND v.node_id IS NULL AND n.kind IN ({','.join('?' * len(kinds))})",
        [model, *params, *kinds],
    ).fetchone()[0]


def embedded_hashes(db, hashes: list[str], model: str) -> dict[str, bytes]:
    """content hash -> a stored vector of ``model`` for that content (from any live node)."""
    if not hashes:
        return {}
    where, params = status_clause("n")
    rows = db.execute(
        f"SELECT n.content_hash, v.embedding FROM nodes n INDEXED BY nodes_hash JOIN nodes_vec v ON v.node_id = n.id "
        f"WHERE v.model = ? AND {where} AND n.content_hash IN ({','.join('?' * len(hashes))})",
        [model, *params, *hashes],
    )
    return {r[0]: r[1] for r in rows}


def other_model_nodes(db, model: str, dim: int, limit: int) -> list[tuple[str, str, str]]:
    """(id, content_hash, content) of indexed nodes whose vector is of another model."""
    where, params = status_clause("n", INDEXED)
    rows = db.execute(
        # Four ranges of nodes_vec_model, not "model != ? OR dim != ?": that read every vector
        # (~0.9 s at 1M nodes) each time the walker looked, and found none on most stores.
        f"SELECT n.id, n.content_hash, n.content FROM nodes_vec v JOIN nodes n ON n.id = v.node_id "
        f"WHERE (v.model < ?1 OR v.model > ?1 OR (v.model = ?1 AND v.dim < ?2) OR (v.model = ?1 AND v.dim > ?2))"
        f" AND {where} LIMIT {int(limit)}",
        [model, dim, *params],
    )
    return [tuple(r) for r in rows]


def embedded_since(db, model: str, after: tuple[int, str], limit: int) -> list[tuple]:
    """(node_id, embedded_at, embedding, kind, parent_id, created_at) of live nodes
    whose ``model`` vector was stored after ``after`` = (embedded_at, node_id), in that order."""
    where, params = status_clause("n")
    rows = db.execute(
        f"SELECT v.node_id, v.embedded_at, v.embedding, n.kind, n.parent_id, n.created_at FROM nodes_vec v "
        f"JOIN nodes n ON n.id = v.node_id WHERE v.model = ? AND {where} "
        f"AND (v.embedded_at > ? OR (v.embedded_at = ? AND v.node_id > ?)) "
        f"ORDER BY v.embedded_at, v.node_id LIMIT ?",
        [model, *params, after[0], after[0], after[1], limit],
    )
    return [tuple(r) for r in rows]


def live_vectors(db, model: str, kind: str, chunk: int = 8192):
    """Lists of (node_id, parent_id, created_at, embedding) for live nodes of
    ``kind`` with a ``model`` vector, ``chunk`` rows at a time (memory stays bounded)."""
    import itertools

    where, params = status_clause("n")
    rows = db.execute(
        f"SELECT v.node_id, n.parent_id, n.created_at, v.embedding FROM nodes_vec v JOIN nodes n ON n.id = v.node_id "
        f"WHERE v.model = ? AND n.kind = ? AND {where}",
        [model, kind, *params],
    )
    while True:
        part = list(itertools.islice(rows, chunk))
        if not part:
            return
        yield part
