"""Known-leaky outputs through the real hook into a real store: no secret anywhere on disk.

Scans the database file, its -wal/-shm, the FTS index (phrase queries and its
vocabulary), the spool and every log, with the writer up (ack path) and with
the writer down (spool path, then the drain).
"""

from __future__ import annotations

import os
import re

import apsw

from memtree.store import db as store_db
from tests.hook_support import run_hook
from tests.leaky_cases import load_cases
from tests.support import COLD_START_S, wait_until


def _files(system) -> list[str]:
    out = []
    for top in (system.paths.store_dir, system.paths.run_dir, os.path.join(system.home, "logs")):
        for folder, _dirs, names in os.walk(top):
            out += [os.path.join(folder, n) for n in names]
    return sorted(set(p for p in out if os.path.isfile(p)))


def _fts_terms(system) -> set[str]:
    conn = store_db.open_read(system.paths.db)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, nodes_fts, row)")
        return {r[0] for r in conn.execute("SELECT term FROM temp.vocab")}
    finally:
        conn.close()


def _fts_hits(system, secret: str) -> int:
    conn = store_db.open_read(system.paths.db)
    try:
        phrase = '"' + secret.replace('"', '""') + '"'
        return conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (phrase,)).fetchone()[0]
    except apsw.SQLError:  # a secret that tokenizes to nothing cannot be in the index
        return 0
    finally:
        conn.close()


def _stored_text(system) -> str:
    conn = store_db.open_read(system.paths.db)
    try:
        return "\n".join(f"{r[0]}\n{r[1]}\n{r[2]}" for r in conn.execute(
            "SELECT content, metadata, source_uri FROM nodes"))
    finally:
        conn.close()


def assert_nothing_leaked(system, cases, in_db: bool) -> None:
    secrets = sorted({s for c in cases for s in c["secrets"]})
    files = _files(system)
    assert any(f.endswith("hook.log") or f.endswith("spool.jsonl") or f.endswith("store.db") for f in files)
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        found = [s for s in secrets if s.encode() in data]
        assert found == [], f"{path} holds {found}"
    if in_db:
        assert [s for s in secrets if _fts_hits(system, s)] == []
        terms = _fts_terms(system)
        pieces = {p.lower() for s in secrets for p in re.split(r"[^A-Za-z0-9]+", s) if len(p) >= 10}
        assert sorted(pieces & terms) == []
        assert len(terms) > 50  # positive control: the index is not empty


def assert_benign_kept(system, cases) -> None:
    text = _stored_text(system)
    missing = [(c["name"], k) for c in cases for k in c["keep"] if k not in text]
    assert missing == []


def _landed(system, cases) -> set[str]:
    conn = store_db.open_read(system.paths.db)
    try:
        sids = {r[0] for r in conn.execute("SELECT DISTINCT session_id FROM nodes WHERE session_id LIKE 'leak-%'")}
    finally:
        conn.close()
    return {c["name"] for c in cases if f"leak-{c['name']}" in sids}


def test_leaky_outputs_through_the_hook_with_the_writer_up_store_no_secret(system):
    cases = load_cases(system.project)
    for case in cases:
        run_hook(system, case["payload"], MEMTREE_HOOK_TIMEOUT_MS="10000")
    stored = {c["name"] for c in cases if c["expect"] == "stored"}
    # Every hook got its ack, so everything is committed; skipped cases left nothing.
    assert _landed(system, cases) == stored
    assert_nothing_leaked(system, cases, in_db=True)
    assert_benign_kept(system, cases)


def test_leaky_outputs_spooled_with_the_writer_down_store_no_secret(system):
    cases = load_cases(system.project)
    assert system.ctl("stop", "writer").returncode == 0
    for case in cases:
        run_hook(system, case["payload"])
    with open(system.paths.spool, encoding="utf-8") as f:
        spooled = f.read()
    stored = [c for c in cases if c["expect"] == "stored"]
    assert spooled.count('"session_id":"leak-') == len(stored)  # denied commands/paths spool nothing
    assert "[REDACTED:" in spooled  # positive control: the spool path redacted
    assert_nothing_leaked(system, cases, in_db=False)
    assert system.ctl("start", "writer").returncode == 0
    want = {c["name"] for c in stored}
    wait_until(lambda: _landed(system, cases) == want, timeout=COLD_START_S, what="the spool drained")
    assert_nothing_leaked(system, cases, in_db=True)
    assert_benign_kept(system, cases)
