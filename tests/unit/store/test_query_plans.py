"""The per-capture and per-batch lookups use the index that keeps them
constant-time as the store grows. A store has no ANALYZE statistics, and
without them SQLite preferred nodes_kind_created / nodes_status_created (an
index it then walks: every file root, every live node) over the one of the
uri or hash looked up; at 50k nodes that was a third of the writer's seeding
time and the filter's and embed walker's every batch (eval/bench_scale.py).

Each lookup runs on a real store file and the statements it executed are
explained by SQLite itself (EXPLAIN QUERY PLAN)."""

from __future__ import annotations

import re

import pytest

from memtree.store import db as store_db
from memtree.store import reads, subtrees, triage, vectors
from memtree.store.write import captures, mutations
from memtree.store.write.mutations import Tx
from tests.support import test_config as make_config


def plans(conn, call) -> list[str]:
    """The query plan of each statement on nodes that ``call`` executed."""
    seen: list[tuple[str, object]] = []

    def trace(_cursor, sql, bindings):
        seen.append((sql, bindings))
        return True

    conn.exec_trace = trace
    try:
        call()
    finally:
        conn.exec_trace = None
    return [
        " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings or ()))
        for sql, bindings in seen
        if re.search(r"\bFROM nodes [a-z]\b", sql)
    ]


def uses_index(conn, call, index: str) -> list[str]:
    """The plans of ``call``'s statements, each asserted to search ``index``."""
    found = plans(conn, call)
    assert found and all(f"USING INDEX {index}" in p for p in found), found
    return found


@pytest.fixture()
def write_conn(tmp_path):
    conn = store_db.open_write(str(tmp_path / "store.db"))
    yield conn
    conn.close()


@pytest.fixture()
def read_conn(tmp_path):
    """A walker's read connection on a new store."""
    path = str(tmp_path / "store.db")
    store_db.open_write(path).close()
    conn = store_db.open_read(path)
    yield conn
    conn.close()


def test_writer_lookups_use_the_uri_hash_and_parent_indexes(write_conn):
    tx = Tx(write_conn, make_config(), "test")
    uses_index(write_conn, lambda: mutations._find_root(tx, "file", "file:///p/a.py"), "nodes_source")
    uses_index(write_conn, lambda: captures.recent_output(tx, "ab" * 32), "nodes_hash")
    # A capture's check against the chunks read stored for that file version: one file's children.
    uses_index(write_conn, lambda: captures._read_chunks(tx, "01ROOT", 123), "nodes_parent")


def test_child_lookups_use_the_parent_index(read_conn):
    """A node's few children, not every live node of the store (the planner's statistics:
    memtree/store/planner_stats.py; before them SQLite walked nodes_status_created or
    nodes_kind_created for these)."""
    for call in (
        lambda: reads.children(read_conn, "01PARENT"),
        lambda: reads.child_ids(read_conn, "01PARENT"),
        lambda: reads.file_chunks(read_conn, "01ROOT"),
        lambda: reads.chunk_ids_by_start(read_conn, "01ROOT"),
        lambda: subtrees.children(read_conn, "01PARENT", 10),
    ):
        uses_index(read_conn, call, "nodes_parent")


def test_walker_hash_lookups_use_the_hash_index(read_conn):
    hashes = ["ab" * 32, "cd" * 32]
    uses_index(read_conn, lambda: triage.live_owners(read_conn, hashes), "nodes_hash")
    uses_index(read_conn, lambda: vectors.embedded_hashes(read_conn, hashes, "m"), "nodes_hash")


def test_pending_batch_reads_its_batch_in_index_order(read_conn):
    """No sort of every pending row per pass (a filter behind a flood fell further behind)."""
    found = uses_index(read_conn, lambda: triage.pending_batch(read_conn, 256), "nodes_status_created")
    assert not any("TEMP B-TREE FOR ORDER BY" in p for p in found), found  # the last term's tie-break only


def test_shown_id_finds_the_live_copy_by_hash(tmp_path):
    """Every hook capture with a replacement asks it (805 ms at 1M nodes walking the live ones)."""
    conn = store_db.open_write(str(tmp_path / "store.db"))
    try:
        tx = Tx(conn, make_config(), "test")
        node = mutations.insert_node(tx, "tool_output", "some output worth keeping", status="pending")
        found = plans(conn, lambda: captures.shown_id(tx, node))
        assert any("USING INDEX nodes_hash" in p for p in found), found
        assert not any("nodes_status_created" in p for p in found), found
    finally:
        conn.close()
