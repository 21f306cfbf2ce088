"""Reads for the summarize walker: subtrees past the threshold, their
children, and how many API summaries were written today. Live nodes only,
except the daily count, which must see every summary ever written today."""

from __future__ import annotations

from memtree.store.live import ANY_STATUS, status_clause
from memtree.store.reads import COLS, _node

_SELECT = ", ".join(f"c.{c}" for c in COLS)


def oversized(db, threshold: int, limit: int) -> list[tuple[str, int, int]]:
    """(parent id, live children, newest child's created_at) of live parents with
    more than ``threshold`` live children that are not summaries, largest first."""
    cw, cp = status_clause("c")
    pw, pp = status_clause("p")
    rows = db.execute(
        f"SELECT c.parent_id, count(*), max(c.created_at) FROM nodes c JOIN nodes p ON p.id = c.parent_id "
        f"WHERE {cw} AND {pw} AND c.kind != 'summary' GROUP BY c.parent_id HAVING count(*) > ? "
        f"ORDER BY count(*) DESC, c.parent_id LIMIT ?",
        [*cp, *pp, threshold, limit],
    )
    return [tuple(r) for r in rows]


def children(db, parent_id: str, limit: int) -> list[dict]:
    """Live non-summary children in creation order (the subtree's reading order)."""
    where, params = status_clause("c")
    rows = db.execute(
        f"SELECT {_SELECT} FROM nodes c WHERE c.parent_id = ? AND {where} AND c.kind != 'summary' "
        f"ORDER BY c.created_at, c.id LIMIT ?",
        [parent_id, *params, limit],
    )
    return [_node(r) for r in rows]


def api_summaries_since(db, since_ms: int, provider: str) -> int:
    where, params = status_clause("n", ANY_STATUS)  # a forgotten summary still spent the quota
    return db.execute(
        f"SELECT count(*) FROM nodes n WHERE n.kind = 'summary' AND n.created_at >= ? AND {where} "
        f"AND json_extract(n.metadata, '$.provider') = ?",
        [since_ms, *params, provider],
    ).fetchone()[0]
