"""The capture contract's records: what one hook payload becomes (a Plan of
nodes) or why it becomes nothing (a Skip), and the payload field reader that
names a bad field, never its content. Standard library only (the hook
imports it under ``-I -S``)."""

from __future__ import annotations

import os

from memtree.errors import BadRequest


def field(obj: dict, key: str, types, where: str, required: bool = True, default=None):
    if key not in obj or obj[key] is None:
        if required:
            raise BadRequest(f"Ingest payload: missing field {where}{key!r}")
        return default
    value = obj[key]
    if not isinstance(value, types) or (types is int and isinstance(value, bool)):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise BadRequest(f"Ingest payload: field {where}{key!r} must be {names}, not {type(value).__name__}")
    return value


SKIP_KINDS = ("unchanged", "denied", "outside", "unsupported", "off", "malformed")


class Skip:
    """Why a payload stores nothing. Code branches on ``kind`` (one of
    SKIP_KINDS); ``detail`` is for people (the audit row, the hook log)."""

    __slots__ = ("kind", "detail")

    def __init__(self, kind: str, detail: str):
        if kind not in SKIP_KINDS:
            raise ValueError(f"unknown skip kind {kind!r}")
        self.kind, self.detail = kind, detail

    def __eq__(self, other):
        return isinstance(other, Skip) and (self.kind, self.detail) == (other.kind, other.detail)

    def __repr__(self):
        return f"Skip({self.kind!r}, {self.detail!r})"


class Plan:
    """The nodes one payload becomes, or the Skip that says why none.

    ``nodes`` are dicts the writer stores in order (memtree.store.write.captures):
    ``ref``, ``parent`` ({"file"|"session"|"ref": ...}), ``kind``, ``content``,
    ``source_uri``, ``mtime``, ``metadata``, and ``with`` (a ref: stored only
    if that node is). Metadata is raw here: it is redacted once, at insert."""

    __slots__ = ("session_id", "nodes", "skip")

    def __init__(self, session_id: str, nodes: list, skip: Skip | None = None):
        self.session_id, self.nodes, self.skip = session_id, nodes, skip

    def __repr__(self):
        return f"Plan({self.session_id!r}, {len(self.nodes)} nodes, skip={self.skip!r})"


def mtime_ns(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return 0
