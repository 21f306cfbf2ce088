"""The FTS5 index's own records, read without touching a doclist: its segment
structure (row 10 of ``nodes_fts_data``): how many segments a query must look
in, and FTS5's write counter (it grows with every segment a write flushes, not
with merges), which tells the pruner whether anything was written since the
index last settled (memtree.store.write.fts); and its averages record (row 1):
how many rows it indexes, which a pruned store's highest rowid overstates."""

from __future__ import annotations

import json

AVERAGES_ROWID = 1
STRUCTURE_ROWID = 10
_V2 = b"\xff\x00\x00\x01"  # FTS5 structure records written with per-segment origin fields


class Structure:
    __slots__ = ("record", "segments", "writes", "levels")

    def __init__(self, record: bytes, segments: int, writes: int, levels: list[int]):
        self.record, self.segments, self.writes, self.levels = record, segments, writes, levels


def _varint(b: bytes, i: int) -> tuple[int, int]:
    """SQLite's varint (FTS5 uses the same): 7 bits a byte, the ninth byte whole."""
    v = 0
    for _ in range(8):
        c = b[i]
        i += 1
        v = (v << 7) | (c & 0x7F)
        if not c & 0x80:
            return v, i
    return (v << 8) | b[i], i + 1


def parse(record: bytes) -> Structure:
    """A structure record (fts5_index.c, fts5StructureDecode): 4-byte cookie,
    [v2 marker], levels, segments, write counter, then per level its merge
    state and segments."""
    v2 = record[4:8] == _V2
    i = 8 if v2 else 4
    n_levels, i = _varint(record, i)
    n_segments, i = _varint(record, i)
    writes, i = _varint(record, i)
    per_segment = 8 if v2 else 3  # id, first and last page (+ origin and tombstone fields)
    levels = []
    for _ in range(n_levels):
        _merge, i = _varint(record, i)
        n, i = _varint(record, i)
        for _ in range(n * per_segment):
            _, i = _varint(record, i)
        levels.append(n)
    return Structure(bytes(record), n_segments, writes, levels)


def structure(db) -> Structure | None:
    """The index's structure now (None: an empty index that never had a write)."""
    row = db.execute("SELECT block FROM nodes_fts_data WHERE id = ?", (STRUCTURE_ROWID,)).fetchone()
    return parse(row[0]) if row and row[0] else None


def _varints(b: bytes) -> list[int]:
    out, i = [], 0
    while i < len(b):
        v, i = _varint(b, i)
        out.append(v)
    return out


def averages(db) -> tuple[int, int]:
    """How many rows the index holds and their tokens in all (every column):
    its averages record (fts5_index.c, FTS5_AVERAGES_ROWID: the row count,
    then each column's token total; absent before any write), what FTS5's own
    bm25() reads, in one lookup, not counted."""
    row = db.execute("SELECT block FROM nodes_fts_data WHERE id = ?", (AVERAGES_ROWID,)).fetchone()
    values = _varints(row[0]) if row and row[0] else [0]
    return values[0], sum(values[1:])


def row_count(db) -> int:
    """How many rows the index holds (``averages``)."""
    return averages(db)[0]


def doc_sizes(db, rowids: list[int]) -> dict[int, int]:
    """Each indexed row's size in tokens, every column (its docsize record)."""
    rows = db.execute(
        "SELECT d.id, d.sz FROM json_each(?) AS j CROSS JOIN nodes_fts_docsize d ON d.id = j.value",
        (json.dumps(rowids),),
    )
    return {r: sum(_varints(sz)) for r, sz in rows}
