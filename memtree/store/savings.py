"""Read side of the savings meter (memtree/ops/savings.py): what memtree stored behind a
tool call the agent saw a preview of, and behind a node a wrapped tool's answer named."""

from __future__ import annotations

import json


def captured_text(conn, tool_use_id: str) -> str:
    """The stored text of a hook capture, by the call's ``tool_use_id`` (its ``capture_keys``
    row names the nodes; the first is the file chunk or tool output holding the output)."""
    prefix = tool_use_id[:200] + ":"
    row = conn.execute(
        "SELECT result FROM capture_keys WHERE key >= ? AND key < ? LIMIT 1", (prefix, prefix[:-1] + ";")
    ).fetchone()
    try:
        result = json.loads(row[0]) if row else {}
    except ValueError:
        return ""
    ids = (result.get("stored") or result.get("ids") or result.get("deduped") or []) if isinstance(result, dict) else []
    ids = [i for i in ids if isinstance(i, str)]
    if not ids:
        return ""
    # A Read is stored as its file chunks, in line order; a Grep or Bash as one
    # tool output (the Grep's hit children repeat lines of it).
    kind, first = _node(conn, ids[0])
    if kind != "file_chunk":
        return first if kind != "file" else stored_text(conn, ids[0])
    return first + "".join(text for kind, text in (_node(conn, i) for i in ids[1:]) if kind == "file_chunk")


def _node(conn, node_id: str) -> tuple[str | None, str]:
    """(kind, content) of a stored node, whatever its status but forgotten."""
    from memtree.store.live import NOT_FORGOTTEN, status_clause

    where, params = status_clause("n", NOT_FORGOTTEN)
    row = conn.execute(
        f"SELECT n.kind, n.content FROM nodes n WHERE n.id = ? AND {where}", [node_id, *params]
    ).fetchone()
    return (row[0], row[1] or "") if row else (None, "")


def stored_text(conn, node_id: str) -> str:
    """What memtree holds behind an id a wrapped tool's answer named: a tool output's
    content, or a file root's live chunks (the whole file as stored)."""
    from memtree.store.live import status_clause

    kind, text = _node(conn, node_id)
    if kind != "file":
        return text
    live, lparams = status_clause("c")
    return "".join(
        r[0] or ""
        for r in conn.execute(
            f"SELECT c.content FROM nodes c WHERE c.parent_id = ? AND c.kind = 'file_chunk' AND {live}"
            f" ORDER BY json_extract(c.metadata, '$.start')",
            [node_id, *lparams],
        )
    )


def captured_sessions(conn) -> set[str]:
    """Sessions the store holds captures of (memtree was installed there)."""
    from memtree.store.live import ANY_STATUS, status_clause

    where, params = status_clause("n", ANY_STATUS)
    return {
        r[0]
        for r in conn.execute(
            f"SELECT DISTINCT n.session_id FROM nodes n WHERE n.session_id IS NOT NULL AND {where}", params
        )
    }
