"""The disk budget with its bookkeeping: a flood of captures through the real
hook (acked and spooled) into a running memtree with a small storage.maxBytes.
The audit log, capture keys and applied-spool ids have their own bounded
retention and count against the budget like the rest, so the store ends
under the budget in pages and in files (the WAL truncated after the pass),
the newest captures are kept, and every note is still there."""

from __future__ import annotations

import json
import os

import pytest

from memtree import protocol
from memtree.capture import spool
from memtree.runtime.client import Caller
from memtree.store import budget
from memtree.store.db import open_read
from tests.support import WaitTimeout, deadline, deadline_ms, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import bash_payload, start_hook

BUDGET = 512 * 1024
FLOOD = 800
PARALLEL = 4


def _flood(system, start: int, count: int, **env) -> None:
    """``count`` captures through the real hook, PARALLEL processes at a time."""
    running = []
    for i in range(start, start + count):
        p = start_hook(system, **env)
        p.stdin.write(
            json.dumps(
                bash_payload(
                    system, i, session="sess-flood", extra=f"flood-{i} " + f"row {i} of the nightly export " * 30
                )
            ).encode()
        )
        p.stdin.close()
        running.append(p)
        if len(running) >= PARALLEL:
            _reap_hook(running.pop(0))
    for p in running:
        _reap_hook(p)


def _reap_hook(p) -> None:
    p.stdout.read()  # a large output's replacement, if any: drained so the hook never blocks on it
    err = p.stderr.read()
    assert p.wait(timeout=deadline(120)) == 0, err[-500:]
    p.stdout.close()
    p.stderr.close()


def _sizes(system) -> tuple[int, int, int]:
    """(pages in use in bytes, database + WAL file bytes, WAL file bytes)."""
    db = open_read(system.paths.db)
    try:
        used = budget.store_bytes(db)
    finally:
        db.close()
    wal = os.path.getsize(system.paths.db + "-wal") if os.path.exists(system.paths.db + "-wal") else 0
    return used, budget.file_bytes(system.paths.db), wal


@pytest.mark.timeout(600)  # 800 hook processes on a shared 2-core box
def test_a_flood_through_the_hook_ends_under_budget_with_bookkeeping_bounded_and_every_note_kept(system_factory):
    s = system_factory
    s.write_config({"storage": {"maxBytes": BUDGET}, "walkers": {"prunerIntervalMs": 500}})
    s.serve()
    s.wait_running()
    w = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        notes = {
            w.call(
                protocol.AddNode(kind="note", content=f"decision {i}: keep the export job on tuesdays", status="live")
            )["id"]
            for i in range(3)
        }
    finally:
        w.close()

    # The first half is acked: 2 s to ack, not the default 100 ms, which a batch behind
    # a prune of this tight budget can pass on a loaded 2-core box (CI counted 404 spooled).
    _flood(s, 0, FLOOD // 2, MEMTREE_HOOK_TIMEOUT_MS="2000")
    assert spool.pending_count(s.paths.spool) == 0
    assert s.ctl("stop", "writer").returncode == 0  # the second half waits in the spool, as with a writer down
    _flood(s, FLOOD // 2, FLOOD // 2)
    spooled = spool.pending_count(s.paths.spool)
    assert spooled == FLOOD // 2, spooled
    assert s.ctl("start", "writer").returncode == 0
    newest = {f"flood-{i} " for i in range(FLOOD - 10, FLOOD)}

    def settled():
        spool_left = [n for n in os.listdir(s.paths.store_dir) if n.startswith("spool.jsonl")]
        used, files, wal = _sizes(s)
        applied = rows(s.paths, "SELECT count(*) FROM spool_applied")[0][0]
        return (
            not spool_left and used <= BUDGET and files <= BUDGET and wal == 0 and applied == 0,
            (spool_left, used, files, wal, applied),
        )

    state = {}

    def done():
        ok, state["last"] = settled()
        return ok

    try:
        wait_until(done, timeout=deadline(120), interval=0.5, what=f"the store under {BUDGET} bytes in pages and files")
    except WaitTimeout as e:
        raise WaitTimeout(
            f"{e}; (spool files, pages in use, files, WAL, spool_applied rows): {state['last']}"
        ) from None

    kept_notes = {r[0] for r in rows(s.paths, "SELECT id FROM nodes WHERE kind = 'note'")}
    assert kept_notes == notes
    stored = {r[0] for r in rows(s.paths, "SELECT content FROM nodes WHERE kind = 'tool_output'")}
    kept_newest = {tag for tag in newest if any(tag in c for c in stored)}
    assert kept_newest == newest  # positive control: the budget keeps the newest captures, not evicting each new one
    assert len(stored) < FLOOD // 2  # and it did remove the older ones
    # Each bookkeeping table within its own bound (dbstat counts its pages and its indexes).
    db = open_read(s.paths.db)
    try:
        pages = dict(db.execute("SELECT name, sum(pgsize) FROM dbstat WHERE aggregate = 1 GROUP BY name"))
    finally:
        db.close()
    audit = pages.get("audit", 0) + pages.get("audit_node", 0)
    assert audit <= BUDGET * budget.AUDIT_SHARE + 8 * 4096, pages  # an estimate, kept in whole pages
    assert rows(s.paths, "SELECT count(*) FROM audit_rollup WHERE n > 0")[0][0] > 0  # older rows compacted, counted
    assert pages.get("capture_keys", 0) <= BUDGET // 3, pages
