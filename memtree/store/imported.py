"""Read side of ``memtree import``: which tool calls the store already holds.

A capture's key is ``<tool_use_id>:<hash of what was stored>``
(store/write/captures._capture_key). The import asks by ``tool_use_id`` alone,
so a call the hook captured live (with a transcript that kept the rewritten
preview, or a cut output the import would complete from tool-results/) is
never stored a second time in another form.
"""

from __future__ import annotations


def captured(conn, tool_use_id: str) -> bool:
    """Whether a capture of this tool call is in the store (any outcome the writer recorded)."""
    prefix = tool_use_id[:200] + ":"
    # ';' follows ':' in ASCII: the range is every key with this prefix, on the primary key.
    row = conn.execute(
        "SELECT 1 FROM capture_keys WHERE key >= ? AND key < ? LIMIT 1", (prefix, prefix[:-1] + ";")
    ).fetchone()
    return row is not None
