"""The leaky fixture through the real hook into a real store: no secret anywhere on disk.

Scans the database file, its -wal/-shm, the FTS index (phrase queries and its
vocabulary), the spool and every log, raw, base64 and hex-escaped, with the
writer up (ack path) and with the writer down (spool path, then the drain).
Benign look-alikes must be stored verbatim, and each case must be stored or
skipped as it expects (set equality over case names).
"""

from __future__ import annotations

import os

from memtree.store import db as store_db
from tests.support import COLD_START_S, leak_scan, wait_until
from tests.support.hook_support import run_hook
from tests.support.leaky_cases import load_cases, write_files


def _disk_files(system) -> list[str]:
    return leak_scan.files_under(system.paths.store_dir, system.paths.run_dir, os.path.join(system.home, "logs"))


def _landed(system) -> set[str]:
    conn = store_db.open_read(system.paths.db)
    try:
        return {
            r[0][len("leak-") :]
            for r in conn.execute(
                "SELECT DISTINCT session_id FROM nodes WHERE session_id LIKE 'leak-%' AND kind != 'session'"
            )
        }
    finally:
        conn.close()


def check_store(system, cases, in_db: bool) -> dict:
    secrets = {s for c in cases for s in c["secrets"]}
    files = _disk_files(system)
    assert any(f.endswith("hook.log") or f.endswith("spool.jsonl") or f.endswith("store.db") for f in files)
    leaked = set(leak_scan.leaks_in_files(files, secrets))
    if not in_db:
        return leak_scan.case_report(cases, leaked, "", None)
    leaked |= leak_scan.leaks_in_fts(system.paths.db, secrets)
    assert len(leak_scan.fts_terms(system.paths.db)) > 200  # positive control: the index is not empty
    return leak_scan.case_report(cases, leaked, leak_scan.stored_text(system.paths.db), _landed(system))


def test_leaky_outputs_through_the_hook_with_the_writer_up_store_no_secret(system):
    cases = load_cases(system.project)
    write_files(system.project, cases)
    for case in cases:
        run_hook(system, case["payload"], MEMTREE_HOOK_TIMEOUT_MS="10000")
    # Every hook got its ack, so everything is committed.
    bad = check_store(system, cases, in_db=True)
    print("writer up:", leak_scan.summary(cases, bad))
    assert bad == {}


def test_leaky_outputs_spooled_with_the_writer_down_store_no_secret(system):
    cases = load_cases(system.project)
    write_files(system.project, cases)
    assert system.ctl("stop", "writer").returncode == 0
    for case in cases:
        run_hook(system, case["payload"])
    with open(system.paths.spool, encoding="utf-8") as f:
        spooled = f.read()
    stored = {c["name"] for c in cases if c["expect"] == "stored"}
    assert {n for n in stored if f'"session_id":"leak-{n}"' in spooled} == stored
    assert "[REDACTED:" in spooled  # positive control: the spool path redacted
    bad = check_store(system, cases, in_db=False)
    print("spool:", leak_scan.summary(cases, bad))
    assert bad == {}
    assert system.ctl("start", "writer").returncode == 0
    wait_until(lambda: _landed(system) >= stored, timeout=COLD_START_S, what="the spool drained")
    bad = check_store(system, cases, in_db=True)
    print("spool drained:", leak_scan.summary(cases, bad))
    assert bad == {}
