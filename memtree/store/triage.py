"""Read queries for the filter walker (read-only connection, live predicate from live.py)."""

from __future__ import annotations

from memtree.store.live import PENDING, status_clause
from memtree.store.reads import batches


class Pending:
    __slots__ = ("id", "parent_id", "kind", "content_hash", "size", "parent_kind", "parent_status")

    def __init__(self, row):
        (self.id, self.parent_id, self.kind, self.content_hash, self.size, self.parent_kind, self.parent_status) = row


def pending_batch(db, limit: int) -> list[Pending]:
    """The oldest pending nodes with their parent's kind and status; parents sort
    before their children (one capture's nodes share created_at, and ULIDs from
    one writer are monotonic). In nodes_status_created's order, so a pass reads
    its batch, not every pending row: ORDER BY id sorted the whole backlog each
    pass, and a filter behind a flood fell further behind (eval/bench_scale.py:
    87k pending at 260k nodes, 115 ms a pass; 0.8 ms in this order)."""
    where, params = status_clause("n", PENDING)
    rows = db.execute(
        f"SELECT n.id, n.parent_id, n.kind, n.content_hash, length(CAST(n.content AS BLOB)), p.kind, p.status"
        f" FROM nodes n INDEXED BY nodes_status_created LEFT JOIN nodes p ON p.id = n.parent_id"  # parent's status is read as data
        f" WHERE {where} ORDER BY n.created_at, n.id LIMIT ?",
        [*params, limit],
    )
    return [Pending(r) for r in rows]


def live_owners(db, hashes) -> dict[str, str]:
    """content hash -> id of the oldest live node holding it."""
    hashes = list(dict.fromkeys(hashes))
    out: dict[str, str] = {}
    where, params = status_clause("n")
    for part in batches(hashes):
        rows = db.execute(
            f"SELECT n.content_hash, n.id FROM nodes n INDEXED BY nodes_hash WHERE {where}"
            f" AND n.content_hash IN ({','.join('?' * len(part))}) ORDER BY n.id DESC",
            [*params, *part],
        )
        for digest, node_id in rows:
            out[digest] = node_id  # descending order: the oldest wins
    return out


def pending_count(db) -> int:
    where, params = status_clause("n", PENDING)
    return db.execute(f"SELECT count(*) FROM nodes n WHERE {where}", params).fetchone()[0]
