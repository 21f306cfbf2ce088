"""The disk budget (storage.maxBytes) with a real writer and a real pruner:
a store filled past its budget loses superseded, then stale, then the oldest
captures (never notes or pinned nodes), audited, and the file shrinks."""

from __future__ import annotations

import contextlib
import random
import re

from memtree import protocol
from memtree.runtime.client import Caller
from memtree.store import budget
from tests import support
from tests.support import COLD_START_S, deadline_ms, reap, wait_until
from tests.support.actor_procs import start_actor
from tests.support.tools_harness import Harness

SIZE = 60_000  # bytes per capture


def _text(rng: random.Random, tag: str) -> str:
    words = [f"{tag}w{rng.randrange(50_000)}" for _ in range(SIZE // 10)]
    return " ".join(words)[:SIZE]


def _fill(h) -> dict[str, list[str]]:
    rng = random.Random(7)
    caller = Caller(h.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        session = caller.call(protocol.AddNode(kind="session", content="", source_uri="session:s", status="live"))["id"]

        def add(kind: str, tag: str, **meta) -> str:
            return caller.call(
                protocol.AddNode(
                    kind=kind, content=_text(rng, tag), parent_id=session, metadata=meta, status="live", session_id="s"
                )
            )["id"]

        ids = {"note": [add("note", "note")], "pinned": [add("tool_output", "pin", pinned=True)]}
        ids["live"] = [add("tool_output", f"live{i}") for i in range(6)]
        ids["hit"] = [
            caller.call(
                protocol.AddNode(kind="tool_output", content=_text(rng, "hit"), parent_id=ids["live"][0], status="live")
            )["id"]
        ]
        for status in ("stale", "superseded"):
            ids[status] = []
            for i in range(2):
                nid = add("file_chunk", f"{status}{i}")
                caller.call(protocol.SetStatus(ids=[nid], status=status, reason="test"))
                ids[status].append(nid)
    finally:
        caller.close()
    return ids


@contextlib.contextmanager
def _filled(tmp_path):
    """A harness store filled by _fill: (harness, its ids, ``prune(config)`` starting the pruner walker on it);
    the pruner reaped and the harness closed after."""
    h, procs = Harness(tmp_path), []

    def prune(config) -> None:
        procs.append(start_actor(h.paths, config, "memtree.actors.walkers.pruner", "walker.pruner"))

    try:
        yield h, _fill(h), prune
    finally:
        for p in procs:
            reap(p)
        h.close()


def test_a_store_over_budget_loses_superseded_then_stale_then_oldest_and_shrinks(tmp_path):
    with _filled(tmp_path) as (h, ids, prune):
        db = support_db(h)
        used = budget.store_bytes(db)
        # Room for about half the captures: superseded and stale all go, then some of the oldest.
        limit = used - 8 * SIZE
        before = budget.file_bytes(h.paths.db)
        assert before > limit
        config = support.test_config({"walkers": {"prunerIntervalMs": 300}, "storage": {"maxBytes": limit}})
        prune(config)
        order = ids["superseded"] + ids["stale"] + ids["live"]

        def gone():
            present = {r[0] for r in h.rows("SELECT id FROM nodes")}
            return {i for i in order if i not in present} if ids["stale"][-1] not in present else None

        removed = wait_until(gone, timeout=COLD_START_S, what="the budget pass")
        wait_until(
            lambda: budget.file_bytes(h.paths.db) <= limit,
            timeout=COLD_START_S,
            what=f"the file back under {limit} bytes",
        )
        present = {r[0] for r in h.rows("SELECT id FROM nodes")}
        # Removal follows the order: a prefix of superseded, stale, oldest live.
        k = len([i for i in order if i not in present])
        assert set(order[:k]) == {i for i in order if i not in present} and k >= 5, (k, removed)
        assert set(order[k:]) <= present  # positive control: the newest captures stay
        assert set(ids["note"] + ids["pinned"]) <= present
        # A removed capture takes its children (a grep result's hits) with it.
        assert (ids["hit"][0] in present) == (ids["live"][0] in present)
        audited = {
            r[0] for r in h.rows("SELECT node_id FROM audit WHERE action = 'purge' AND reason LIKE 'disk budget%'")
        }
        assert audited == set(order[:k]) | ({ids["hit"][0]} - present)
        assert budget.file_bytes(h.paths.db) < before
        db.close()


def test_under_budget_nothing_is_removed(tmp_path):
    with _filled(tmp_path) as (h, ids, prune):
        config = support.test_config(
            {"walkers": {"prunerIntervalMs": 200}, "storage": {"maxBytes": 1 << 30}, "retention": {"supersededDays": 0}}
        )
        prune(config)
        # The retention step runs in the same sweep: once it has pruned the superseded, the budget step ran too.
        wait_until(
            lambda: (
                {r[0] for r in h.rows("SELECT status FROM nodes WHERE id IN (?, ?)", tuple(ids["superseded"]))}
                == {"pruned"}
            ),
            timeout=COLD_START_S,
            what="a pruner sweep",
        )
        everything = [i for group in ids.values() for i in group]
        assert len(
            h.rows(f"SELECT id FROM nodes WHERE id IN ({','.join('?' * len(everything))})", tuple(everything))
        ) == len(everything)
        assert not h.rows("SELECT 1 FROM audit WHERE reason LIKE 'disk budget%'")


def test_a_new_store_uses_incremental_auto_vacuum(tmp_path):
    h = Harness(tmp_path)
    try:
        assert h.rows("PRAGMA auto_vacuum")[0][0] == 2
    finally:
        h.close()


def support_db(h):
    from memtree.store.db import open_read

    return open_read(h.paths.db)


def test_an_older_store_without_auto_vacuum_is_converted_once_with_its_rows_kept(tmp_path):
    import apsw

    from tests.support import make_paths
    from tests.support.actor_procs import start_writer

    paths = make_paths(tmp_path)
    old = apsw.Connection(paths.db)
    old.execute("CREATE TABLE keepme(x); INSERT INTO keepme VALUES ('row survives')")
    assert old.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    old.close()
    writer = start_writer(paths, support.test_config())
    try:
        from tests.support.actor_procs import rows

        assert rows(paths, "PRAGMA auto_vacuum")[0][0] == 2
        assert rows(paths, "SELECT x FROM keepme") == [("row survives",)]
    finally:
        reap(writer)


def test_status_gives_the_stored_per_captured_ratio_only_once_a_mebibyte_was_captured(tmp_path):
    from memtree.store import db as store_db

    h = Harness(tmp_path)
    caller = Caller(h.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    rng = random.Random(3)
    try:

        def line() -> str:
            conn = store_db.open_read(h.paths.db)
            try:
                return budget.summary(h.paths.db, 1 << 30, conn)
            finally:
                conn.close()

        caller.call(protocol.AddNode(kind="note", content="x" * 500, status="live"))
        assert "500 bytes captured (bytes stored per byte captured shown from 1 MiB on)" in line()
        caller.call(protocol.AddNode(kind="note", content=_text(rng, "small"), status="live"))
        young = line()  # 60 KB captured: SQLite's fixed pages would make any ratio meaningless
        assert "59 KiB captured" in young and "bytes stored per byte captured shown from 1 MiB on" in young
        assert not re.search(r"\d\.\d\d bytes stored per byte", young), young
        for _ in range(20):  # positive control: 1.2 MB captured
            caller.call(protocol.AddNode(kind="note", content=_text(rng, "big"), status="live"))
        grown = line()
        ratio = float(grown.rsplit(", ", 1)[1].split()[0])
        assert grown.endswith("bytes stored per byte captured") and 1.0 < ratio < 10.0, grown
    finally:
        caller.close()
        h.close()
