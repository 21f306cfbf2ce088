"""Re-apply the current redaction gate to stored rows (``memtree redact --rescan``).

A rule added later cleans what is already there; rows record the gate
version that cleaned them (``metadata.redaction``). Called by the writer only.
"""

from __future__ import annotations

import orjson

from memtree.errors import BadRequest
from memtree.gate import REDACTION_VERSION
from memtree.store.live import NOT_FORGOTTEN, status_clause
from memtree.store.sweeps import regate
from memtree.store.write.mutations import Tx, _json, content_hash


def reredact(tx: Tx, ids: list) -> list[str]:
    """Apply the current gate to stored rows (``memtree redact --rescan``): a
    rule added later cleans what is already there. Returns the ids changed."""
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise BadRequest("ids must be a list of node id strings")
    where, params = status_clause("n", NOT_FORGOTTEN)
    changed = []
    for node_id in dict.fromkeys(ids):
        row = tx.db.execute(
            f"SELECT n.content, n.metadata, n.source_uri, n.status, n.kind FROM nodes n WHERE n.id = ? AND {where}",
            [node_id, *params],
        ).fetchone()
        if row is None:
            continue
        content, uri, meta = regate(row[0], row[2], orjson.loads(row[1] or "{}"))
        meta_text = _json(dict(meta, redaction=REDACTION_VERSION))
        text_changed = content != row[0] or uri != row[2]
        if not text_changed and meta_text == row[1]:
            continue  # nothing to change, nothing to audit
        # updated_at stays: it dates the last status change, which the pruner ages by.
        tx.db.execute(
            "UPDATE nodes SET content = ?, content_hash = ?, metadata = ?, source_uri = ? WHERE id = ?",
            (content, content_hash(content), meta_text, uri, node_id),
        )
        if text_changed:
            tx.db.execute("DELETE FROM nodes_vec WHERE node_id = ?", (node_id,))  # made from the old text
            # Announced (NodesChanged after COMMIT) as if it went live again: the embed
            # walker's walk may be past it, and its vector is gone.
            tx.note(node_id, row[4], row[3])
            tx.audit("redact", node_id, reason=f"gate v{REDACTION_VERSION} re-applied: content changed")
            changed.append(node_id)
        else:  # every mutation is audited, a metadata-only one too
            tx.audit(
                "redact", node_id, reason=f"gate v{REDACTION_VERSION} re-applied: metadata only (redaction version)"
            )
    return changed


def mark_current(tx: Tx, pairs: list, version: int) -> int:
    """Bring the redaction mark of rows up to date without rewriting them:
    ``pairs`` are [id, content_hash] of rows a walker found the current gate
    keeps as they are (memtree.store.sweeps.gate_keeps). A row whose content
    changed since it was read, or checked by another gate than this writer's
    (``version``: a walker of another install), is left for the next pass.
    One audit row for the lot. Returns how many rows were marked."""
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in pairs
    ):
        raise BadRequest("current must be a list of [node id, content hash] pairs")
    if version != REDACTION_VERSION or not pairs:
        return 0
    marked = []
    for node_id, digest in pairs:
        tx.db.execute(
            "UPDATE nodes SET metadata = json_set(metadata, '$.redaction', ?) WHERE id = ? AND content_hash = ?"
            " AND json_valid(metadata) AND coalesce(json_extract(metadata, '$.redaction'), 0) < ?",
            (REDACTION_VERSION, node_id, digest, REDACTION_VERSION),
        )
        if tx.db.changes():
            marked.append(node_id)
    if marked:
        tx.audit(
            "redact",
            None,
            reason=f"gate v{REDACTION_VERSION} re-applied: {len(marked)} rows kept as they were (redaction mark only)",
            detail={"ids": marked},
        )
    return len(marked)
