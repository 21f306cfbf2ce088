"""Read side of the savings meter: the ``shown`` audit rows the writer records
when it replaces a large native output (memtree/capture/savings.py)."""

from __future__ import annotations

import json


def shown_rows(conn, since_ms: int = 0) -> list[tuple[int, dict]]:
    """(at, detail) of every replaced output recorded since ``since_ms``, oldest first."""
    out = []
    for at, detail in conn.execute("SELECT at, detail FROM audit WHERE action = 'shown' AND at >= ? ORDER BY at",
                                   (since_ms,)):
        try:
            d = json.loads(detail) if detail else {}
        except ValueError:
            continue
        if isinstance(d, dict):
            out.append((at, d))
    return out
