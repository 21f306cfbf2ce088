"""The per-capture and per-batch lookups use the index that keeps them
constant-time as the store grows. A store has no ANALYZE statistics, and
without them SQLite preferred nodes_kind_created / nodes_status_created (an
index it then walks: every file root, every live node) over the one of the
uri or hash looked up; at 50k nodes that was a third of the writer's seeding
time and the filter's and embed walker's every batch (eval/bench_scale.py).

Each lookup runs on a real store file and the statements it executed are
explained by SQLite itself (EXPLAIN QUERY PLAN)."""

from __future__ import annotations

from memtree.store import db as store_db
from memtree.store import triage, vectors
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
        if " nodes n" in sql
    ]


def uses_index(conn, call, index: str) -> list[str]:
    """The plans of ``call``'s statements, each asserted to search ``index``."""
    found = plans(conn, call)
    assert found and all(f"USING INDEX {index}" in p for p in found), found
    return found


def test_root_and_dedupe_lookups_use_the_uri_and_hash_indexes(tmp_path):
    conn = store_db.open_write(str(tmp_path / "store.db"))
    try:
        tx = Tx(conn, make_config(), "test")
        uses_index(conn, lambda: mutations._find_root(tx, "file", "file:///p/a.py"), "nodes_source")
        uses_index(conn, lambda: captures.recent_output(tx, "ab" * 32), "nodes_hash")
    finally:
        conn.close()


def test_walker_hash_lookups_use_the_hash_index(tmp_path):
    path = str(tmp_path / "store.db")
    store_db.open_write(path).close()
    conn = store_db.open_read(path)
    try:
        hashes = ["ab" * 32, "cd" * 32]
        uses_index(conn, lambda: triage.live_owners(conn, hashes), "nodes_hash")
        uses_index(conn, lambda: vectors.embedded_hashes(conn, hashes, "m"), "nodes_hash")
    finally:
        conn.close()


def test_pending_batch_reads_its_batch_in_index_order(tmp_path):
    """No sort of every pending row per pass (a filter behind a flood fell further behind)."""
    path = str(tmp_path / "store.db")
    store_db.open_write(path).close()
    conn = store_db.open_read(path)
    try:
        found = uses_index(conn, lambda: triage.pending_batch(conn, 256), "nodes_status_created")
        assert not any("TEMP B-TREE FOR ORDER BY" in p for p in found), found  # the last term's tie-break only
    finally:
        conn.close()


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
