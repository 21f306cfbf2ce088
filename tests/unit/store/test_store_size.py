"""One size for one store: the pruner, `memtree doctor` and `memtree ctl
status` measure it with memtree.store.budget.store_bytes, and a budget pass
ends with the WAL checkpointed and truncated, so the files on disk come
back to that size too. Real hook captures into a running memtree."""

from __future__ import annotations

import os

from memtree.store import budget
from memtree.store.db import open_read
from tests.support import COLD_START_S, wait_until
from tests.support.hook_support import bash_payload, run_hook
from tests.unit.ops.test_doctor import doctor

MIB = 1048576


def _wal(system) -> int:
    try:
        return os.path.getsize(system.paths.db + "-wal")
    except FileNotFoundError:
        return 0


def test_doctor_status_and_pruner_agree_on_the_size_and_the_wal_is_truncated_after_a_pass(system_factory):
    s = system_factory
    s.write_config({"walkers": {"prunerIntervalMs": 500}})
    s.serve()
    s.wait_running()
    for i in range(40):
        words = " ".join(f"tok{i}q{j}" for j in range(150))  # distinct captures: nothing for dedupe to do
        run_hook(s, bash_payload(s, i, session="sess-size", extra=f"size-{i} {words}"))
    assert _wal(s) > 0  # the captures went through the WAL

    # After the pruner's next pass the WAL is empty and the files hold the store's pages, nothing more.
    def truncated():
        db = open_read(s.paths.db)
        try:
            used = budget.store_bytes(db)
            # quiet: every capture filtered and embedded, so nothing writes after this
            busy = db.execute(
                "SELECT count(*) FROM nodes n WHERE n.kind = 'tool_output' AND (n.status = 'pending'"
                " OR (n.status = 'live' AND n.id NOT IN (SELECT node_id FROM nodes_vec)))"
            ).fetchone()[0]
        finally:
            db.close()
        return used if not busy and _wal(s) == 0 and os.path.getsize(s.paths.db) == used else None

    used = wait_until(truncated, timeout=2 * COLD_START_S, interval=0.2, what="a pruner pass truncating the WAL")

    _, checks = doctor(s)
    assert checks["disk"]["status"] == "ok", checks["disk"]
    assert (
        f"store {used / MIB:.1f} MiB of a 1024 MiB budget (files {used / MIB:.1f} MiB with the WAL)"
        in checks["disk"]["message"]
    ), (used, checks["disk"])
    status = s.ctl("status")
    assert status.returncode == 0, status.stderr
    assert (
        f"store: {used / MIB:.1f} MiB (budget storage.maxBytes 1024 MiB; files {used / MIB:.1f} MiB" in status.stdout
    ), status.stdout
    pruner = s.actor("walker.pruner", {"RUNNING"})
    assert pruner["info"]["store_mib"] == round(used / MIB, 1), pruner
