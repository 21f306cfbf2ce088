"""Write-side SQL of the semantic layer: vectors (embed walker, reembed) and
near-duplicate supersession (dedupe walker). Called by the writer only, in
its transaction, with audit rows like every other mutation (store/mutations.py)."""

from __future__ import annotations

import math

from memtree.errors import BadRequest
from memtree.runtime import optional
from memtree.store.live import ANY_STATUS, INDEXED, status_clause
from memtree.store.vector_index import code_of, codes_of
from memtree.store.vectors import from_wire
from memtree.store.write.mutations import Tx, _require, node_row
from memtree.text.sameness import same_text


def _text(tx: Tx, node_id: str) -> str:
    where, params = status_clause("n", ANY_STATUS)
    row = tx.db.execute(f"SELECT n.content FROM nodes n WHERE n.id = ? AND {where}", [node_id, *params]).fetchone()
    return row[0] if row else ""


# vec_log rows a reader may still need; older ones go (store/vector_index.py
# reloads a reader that fell behind the trim).
VEC_LOG_KEEP = 200_000


def put_vectors(tx: Tx, rec) -> dict:
    """Store vectors with their model and dimension. A node that is no longer
    indexed (dropped, forgotten, ...) or whose content changed since it was
    embedded is skipped, so a vector never outlives or mismatches its content.
    One vector per node: a vector of another model is replaced. Every item is
    checked before any is stored."""
    if not rec.model or rec.dim <= 0:
        raise BadRequest("PutVectors needs a model name and a positive dimension")
    ids, blobs = [], []
    for item in rec.items:
        if not isinstance(item, dict) or not isinstance(item.get("node_id"), str):
            raise BadRequest("each vector item needs a node_id")
        blob = from_wire(item.get("vector"), rec.dim)
        if blob is None:
            raise BadRequest(
                f"vector of {item['node_id']} must be {rec.dim} numbers (a list, or base64 of their float32 bytes)"
            )
        ids.append(item["node_id"])
        blobs.append(blob)
    codes = _codes(ids, blobs, rec.dim)
    stored, skipped = [], []
    for item, blob, (code, fine) in zip(rec.items, blobs, codes):
        row = node_row(tx.db, item["node_id"])
        if row is None or row[1] not in INDEXED or row[2] != item.get("content_hash"):
            skipped.append(item["node_id"])
            continue
        # An upsert keeps the row's rowid (REPLACE would delete it unseen by the vec_log trigger).
        tx.db.execute(
            "INSERT INTO nodes_vec(node_id, model, dim, embedding, embedded_at, code, fine) VALUES (?,?,?,?,?,?,?) "
            "ON CONFLICT(node_id) DO UPDATE SET model = excluded.model, dim = excluded.dim, "
            "embedding = excluded.embedding, embedded_at = excluded.embedded_at, code = excluded.code, "
            "fine = excluded.fine",
            (item["node_id"], rec.model, rec.dim, blob, tx.now, code, fine),
        )
        stored.append(item["node_id"])
    trim_vec_log(tx.db)
    if stored:  # one row per batch: vectors are derived data, the audit says who and which model
        tx.audit(
            "embed", None, reason=rec.model, detail={"dim": rec.dim, "stored": len(stored), "skipped": len(skipped)}
        )
    return {"stored": len(stored), "skipped": skipped}


def _codes(ids: list[str], blobs: list[bytes], dim: int) -> list[tuple[bytes, bytes | None]]:
    """Each vector's sign bits and 4-bit code (store/vector_index.py), all at
    once; BadRequest for a vector that holds a NaN or an infinity."""
    if not blobs:
        return []
    if optional.missing("numpy") is not None:
        for node_id, blob in zip(ids, blobs):
            if not all(map(math.isfinite, memoryview(blob).cast("f"))):
                raise BadRequest(f"vector of {node_id} must be finite numbers")
        return [(code_of(blob), None) for blob in blobs]
    import numpy as np

    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), dim)
    finite = np.isfinite(matrix).all(axis=1)
    if not finite.all():
        raise BadRequest(f"vector of {ids[int(np.argmin(finite))]} must be finite numbers")
    return list(zip(*codes_of(matrix)))


def trim_vec_log(db, keep: int = VEC_LOG_KEEP) -> int:
    """Drop vec_log rows more than ``keep`` behind its head; the counter says
    how far, so a reader behind it reloads instead of missing changes."""
    top = db.execute("SELECT coalesce(max(seq), 0) FROM vec_log").fetchone()[0]
    upto = top - keep
    if upto <= 0 or db.execute("SELECT 1 FROM vec_log WHERE seq <= ? LIMIT 1", (upto,)).fetchone() is None:
        return 0
    db.execute("DELETE FROM vec_log WHERE seq <= ?", (upto,))
    deleted = db.changes()
    db.execute(
        "INSERT INTO counters(name, value) VALUES ('vec_log_trimmed', ?) "
        "ON CONFLICT(name) DO UPDATE SET value = max(value, excluded.value)",
        (upto,),
    )
    return deleted


def supersede(tx: Tx, rec) -> dict:
    """A near-duplicate: ``keep_id`` supersedes ``old_id`` (edge + audit with
    the score). Both must be live and of one kind, and two notes the same
    text after normalising whitespace and case; nothing else is touched."""
    if rec.keep_id == rec.old_id:
        raise BadRequest("a node cannot supersede itself")
    keep, old = _require(tx.db, rec.keep_id, "keep_id"), _require(tx.db, rec.old_id, "old_id")
    if keep[0] != old[0]:
        raise BadRequest(f"near-duplicates must be of one kind, not {keep[0]} and {old[0]}")
    if keep[1] != "live" or old[1] != "live":
        return {"superseded": False}
    if keep[0] == "note" and not same_text(_text(tx, rec.keep_id), _text(tx, rec.old_id)):
        return {"superseded": False}  # a note stands in for another only word for word (text/sameness.py)
    reason = rec.reason or f"near-duplicate of {rec.keep_id} (cosine {rec.score:.4f})"
    tx.db.execute("UPDATE nodes SET status = 'superseded', updated_at = ? WHERE id = ?", (tx.now, rec.old_id))
    tx.audit("supersede", rec.old_id, "live", "superseded", reason, detail={"by": rec.keep_id, "score": rec.score})
    tx.note(rec.old_id, old[0], "superseded")
    tx.db.execute(
        "INSERT OR IGNORE INTO edges(src_id, dst_id, kind, created_at) VALUES (?,?,?,?)",
        (rec.keep_id, rec.old_id, "supersedes", tx.now),
    )
    tx.audit("edge", rec.keep_id, reason="supersedes", detail={"dst": rec.old_id, "kind": "supersedes"})
    return {"superseded": True}
