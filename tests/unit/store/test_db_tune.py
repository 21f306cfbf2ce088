"""The writer's process-wide SQLite setting (store/db.py tune_process): a
statement journal stays in memory up to STMT_JOURNAL_SPILL_BYTES and moves to
a temp file past it, so memory stays bounded.

Each case runs in a fresh interpreter (SQLite takes the setting only before
the process's first connection) and reports whether the process held one of
SQLite's temp files (unlinked at once, or O_TMPFILE: "(deleted)" in /proc) while one statement of
an open transaction changed ``pages`` existing pages (4 KiB each) and a few more."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from memtree.store.db import STMT_JOURNAL_SPILL_BYTES

SCRIPT = r"""
import json, os, sys
import apsw
from memtree.store import db as store_db

tuned = store_db.tune_process() if sys.argv[1] == "tuned" else False
pages = int(sys.argv[2])
conn = apsw.Connection(os.path.join(sys.argv[3], "t.db"))
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)")
ROWS = "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ? - 1) "
PAD = "substr(printf('%09d', {}) || hex(zeroblob(200)), 1, 400)"  # ~9 index entries a 4 KiB leaf
with conn:  # 8000 rows, their index ~900 full leaves
    conn.execute(ROWS + "INSERT INTO t(v) SELECT " + PAD.format("i * 1000") + " FROM c", (8000,))


def temp_files():
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").endswith(" (deleted)")
        except OSError:
            pass
    return n


conn.execute("BEGIN")
conn.execute("INSERT INTO t(v) VALUES ('a write before: the next statement needs a journal')")
# Each new value falls 90 rows (10 leaves) after the last one's: one more existing 4 KiB page changed a row.
conn.execute(ROWS + "INSERT INTO t(v) SELECT " + PAD.format("i * 90000 + 500") + " FROM c", (pages,))
held = temp_files()
conn.execute("COMMIT")
print(json.dumps({"tuned": tuned, "temp_files": held, "rows": conn.execute("SELECT count(*) FROM t").fetchone()[0]}))
"""


def _run(mode: str, kib: int, where) -> dict:
    where.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, str(kib), str(where)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.timeout(120)
def test_a_statement_journal_stays_in_memory_up_to_the_bound_and_spills_past_it(tmp_path):
    page = 4096 + 4  # a journal record: the page and its number
    default, bound = 64 * 1024 // page, STMT_JOURNAL_SPILL_BYTES // page
    mid = (default + bound) // 2  # past SQLite's default, within the bound, with room for a few more pages
    assert default + 4 < mid < bound - 4
    # Positive control: untuned, this statement's journal spills to a temp file.
    assert _run("plain", mid, tmp_path / "a") == {"tuned": False, "temp_files": 1, "rows": 8001 + mid}
    # Tuned: the same statement keeps its journal in memory.
    assert _run("tuned", mid, tmp_path / "b") == {"tuned": True, "temp_files": 0, "rows": 8001 + mid}
    # Past the bound it spills, and the statement completes (a bound over 128 KiB
    # made SQLite 3.54's spill fail with SQLITE_FULL): memory stays bounded.
    for pages in (2 * bound, 16 * bound):
        assert _run("tuned", pages, tmp_path / f"c{pages}") == {"tuned": True, "temp_files": 1, "rows": 8001 + pages}


def test_tune_process_refuses_once_a_connection_is_open(tmp_path):
    script = (
        "import apsw, os, sys\n"
        "from memtree.store import db\n"
        "c = apsw.Connection(os.path.join(sys.argv[1], 'x.db'))\n"
        "print(db.tune_process())\n"
        "c.close()\n"
        "print(db.tune_process())\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
