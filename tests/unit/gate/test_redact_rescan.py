"""Defence in depth: rows stored under an older gate are re-redacted when read,
and `memtree redact --rescan` re-applies the current gate to the store."""

from __future__ import annotations

import subprocess

import apsw

from memtree.ids import now_ms, ulid
from memtree.store import db as store_db
from memtree.store import reads
from tests.support import PYTHON, deadline
from tests.support.actor_procs import rows

SECRET = "hunter2Secret9xq"
OLD = f"deploy notes\nDB_PASSWORD={SECRET}\nregion eu-west-1, nothing secret on this line\n"
BENIGN = "a benign row stored by an older memtree, kept as it is\n"


def _old_row(conn, content: str) -> str:
    """A row as an older memtree wrote it: no gate version in its metadata."""
    nid = ulid()
    conn.execute(
        "INSERT INTO nodes(id, kind, source_uri, content, content_hash, status, created_at, updated_at,"
        " metadata) VALUES (?, 'note', ?, ?, 'h', 'live', ?, ?, '{\"source\":\"old\"}')",
        (nid, f"note:{nid}", content, now_ms(), now_ms()),
    )
    return nid


def _stored_while_stopped(system, *contents: str) -> list[str]:
    """Stop the writer and write ``contents`` as an older memtree's rows; their ids.
    The filter walker, which cleans such rows too (tests/unit/walkers/test_filter_regate.py),
    stays stopped: these tests are about the read path and the CLI."""
    assert system.ctl("stop", "walker.filter").returncode == 0
    assert system.ctl("stop", "writer").returncode == 0
    conn = apsw.Connection(system.paths.db)  # an older memtree's rows, written while no writer runs
    try:
        return [_old_row(conn, c) for c in contents]
    finally:
        conn.close()


def _rescan(system, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "memtree.cli", "redact", "--rescan"],
        cwd=system.project,
        env={**system.env, **env},
        capture_output=True,
        text=True,
        timeout=deadline(120),
    )


def test_old_rows_are_redacted_on_the_way_out_and_rescan_fixes_them(system):
    secret_id, benign_id = _stored_while_stopped(system, OLD, BENIGN)
    assert system.ctl("start", "writer").returncode == 0

    ro = store_db.open_read(system.paths.db)
    try:
        got = reads.get_node(ro, secret_id)
        assert SECRET not in got["content"] and "[REDACTED:" in got["content"]
        assert "region eu-west-1" in got["content"]
        assert reads.get_node(ro, benign_id)["content"] == BENIGN
    finally:
        ro.close()
    assert rows(system.paths, "SELECT content FROM nodes WHERE id = ?", (secret_id,)) == [(OLD,)]  # still on disk

    done = _rescan(system, PATH="/usr/bin:/bin")
    assert done.returncode == 0, done.stderr
    assert "[" in done.stderr and "rows" in done.stderr  # the progress bar
    assert "1 changed" in done.stdout
    [(content, meta)] = rows(system.paths, "SELECT content, metadata FROM nodes WHERE id = ?", (secret_id,))
    assert SECRET not in content and "region eu-west-1" in content and '"redaction":' in meta
    assert rows(system.paths, "SELECT content FROM nodes WHERE id = ?", (benign_id,)) == [(BENIGN,)]
    assert rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'redact' AND node_id = ?", (secret_id,)) == [
        (1,)
    ]
    # Every mutation is audited: the benign row's content stayed, but its metadata took the gate version.
    [(benign_meta,)] = rows(system.paths, "SELECT metadata FROM nodes WHERE id = ?", (benign_id,))
    assert '"redaction":' in benign_meta
    audited = {r[0] for r in rows(system.paths, "SELECT node_id FROM audit WHERE action = 'redact'")}
    assert audited == {secret_id, benign_id}


def test_a_second_rescan_changes_nothing_and_audits_nothing(system):
    [benign_id] = _stored_while_stopped(system, BENIGN)
    assert system.ctl("start", "writer").returncode == 0
    for expect in ("rescanned 1 rows", "rescanned 0 rows"):  # the second finds nothing older than the gate
        done = _rescan(system, PATH="/usr/bin:/bin")
        assert done.returncode == 0 and expect in done.stdout, (done.stdout, done.stderr)
    assert rows(system.paths, "SELECT node_id, reason LIKE '%metadata%' FROM audit WHERE action = 'redact'") == [
        (benign_id, 1)
    ]


def test_rescan_without_a_writer_says_so_in_one_line(system):
    _stored_while_stopped(system, OLD)
    done = _rescan(system, MEMTREE_CALL_TIMEOUT_MS="500")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "writer did not answer" in done.stderr
