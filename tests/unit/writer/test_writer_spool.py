"""The writer drains the hook spool: on start, periodically, exactly once per entry."""

from __future__ import annotations

import json
import os
import time

import apsw

from memtree import protocol
from memtree.capture import spool
from memtree.eval import payloads
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, deadline, deadline_ms, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import rows, start_writer


def read_payload(i: int, root: str) -> dict:
    """A Claude Code PostToolUse payload for Read, shaped like tests/payloads (basic.jsonl)."""
    content = f"# spool-marker-{i}\n" + "def f():\n    return 1\n" * 5
    return payloads.read(os.path.join(root, f"mod{i}.py"), content, root, "sess-spool", f"toolu_{i}")


def marker_counts(paths, n: int) -> dict[int, int]:
    return {
        i: rows(paths, "SELECT count(*) FROM nodes WHERE content LIKE ?", (f"%spool-marker-{i}\n%",))[0][0]
        for i in range(n)
    }


def test_spooled_captures_are_applied_once_each_on_start(tmp_path):
    paths = make_paths(tmp_path)
    ids = [spool.append(paths.spool, read_payload(i, paths.project_root)) for i in range(5)]
    proc = start_writer(paths, make_config())
    try:
        assert marker_counts(paths, 5) == {i: 1 for i in range(5)}
        # The drained file is gone, so are the ids that guarded it (bounded bookkeeping).
        assert rows(paths, "SELECT count(*) FROM spool_applied") == [(0,)]
        assert len(ids) == 5
        assert rows(paths, "SELECT DISTINCT actor FROM audit WHERE action='insert'") == [("spool",)]
        assert spool.pending_count(paths.spool) == 0
        assert not [n for n in os.listdir(paths.store_dir) if n.endswith(spool.DRAINING_SUFFIX)]
    finally:
        reap(proc)


def test_a_drain_interrupted_after_commit_neither_duplicates_nor_loses(tmp_path):
    paths = make_paths(tmp_path)
    config = make_config()
    first = [spool.append(paths.spool, read_payload(i, paths.project_root)) for i in range(3)]
    proc = start_writer(paths, config)
    reap(proc)
    assert marker_counts(paths, 3) == {0: 1, 1: 1, 2: 1}
    # A crash between the commit and the release leaves the draining file behind:
    # rebuild it with the three committed entries, two new ones and a damaged line.
    leftover = f"{paths.spool}.{1:020d}{spool.DRAINING_SUFFIX}"
    with open(leftover, "w", encoding="ascii") as f:
        for i, entry_id in enumerate(first):
            f.write(json.dumps({"id": entry_id, "ts": 1, "payload": read_payload(i, paths.project_root)}) + "\n")
        f.write('{"id": "broken", "payl\n')
        for i in (3, 4):
            f.write(json.dumps({"id": f"new-{i}", "ts": 1, "payload": read_payload(i, paths.project_root)}) + "\n")
    # ... and the ids the crashed writer committed for it, as it left them.
    conn = apsw.Connection(paths.db)
    with conn:
        conn.executemany(
            "INSERT INTO spool_applied(entry_id, at, file) VALUES (?, 1, ?)",
            [(e, os.path.basename(leftover)) for e in first],
        )
        conn.execute(
            "INSERT INTO spool_applied(entry_id, at, file) VALUES ('of-a-file-gone', 1, 'spool.jsonl.9.draining')"
        )
    conn.close()
    proc = start_writer(paths, config)
    try:
        assert marker_counts(paths, 5) == {i: 1 for i in range(5)}
        assert rows(paths, "SELECT value FROM counters WHERE name='spool_damaged'") == [(1,)]
        assert not os.path.exists(leftover)
        assert rows(paths, "SELECT count(*) FROM spool_applied") == [(0,)]  # its ids, and a gone file's, went too
    finally:
        reap(proc)


def test_captures_spooled_while_the_writer_runs_are_drained_periodically(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config({"writer": {"spoolDrainMs": 200}}))
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(5000))
    try:
        assert marker_counts(paths, 2) == {0: 0, 1: 0}
        for i in range(2):
            spool.append(paths.spool, read_payload(i, paths.project_root))
        wait_until(lambda: marker_counts(paths, 2) == {0: 1, 1: 1}, timeout=COLD_START_S, what="periodic drain")
        assert caller.call(protocol.Ping())["pid"] == proc.pid
    finally:
        caller.close()
        reap(proc)


def test_a_spooled_capture_is_dated_when_it_happened_not_when_drained(tmp_path):
    paths = make_paths(tmp_path)
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    spool.append(paths.spool, read_payload(0, paths.project_root), ts=an_hour_ago)
    spool.append(paths.spool, read_payload(1, paths.project_root))  # control: dated now
    before = int(time.time() * 1000)
    proc = start_writer(paths, make_config())
    try:
        got = dict(rows(paths, "SELECT substr(content, 3, 15), created_at FROM nodes WHERE kind='file_chunk'"))
        assert got["spool-marker-0\n"] == an_hour_ago
        assert before - 60_000 < got["spool-marker-1\n"] <= int(time.time() * 1000)
    finally:
        reap(proc)


def _peak_rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))


def test_a_100_mb_spool_is_drained_streaming_in_bounded_memory(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config({"writer": {"spoolDrainMs": 200}}))
    try:
        before = _peak_rss(proc.pid)
        filler = "# " + "z" * 1000 + "\n"
        entries = []
        for i in range(100):  # ~1 MB each, as big as the hook lets a spooled string be
            p = read_payload(i, paths.project_root)
            p["tool_response"]["file"]["content"] += filler * 1000
            entries.append(json.dumps({"id": f"big-{i}", "ts": 1, "payload": p}) + "\n")
        # Appear at once, whole, as a spool a drain has claimed: nothing is read before it is complete.
        staging = os.path.join(paths.store_dir, "staging")
        with open(staging, "w", encoding="ascii") as f:
            f.writelines(entries)
        assert os.path.getsize(staging) > 100_000_000
        os.rename(staging, f"{paths.spool}.{2:020d}{spool.DRAINING_SUFFIX}")
        wait_until(
            lambda: marker_counts(paths, 100) == {i: 1 for i in range(100)},
            timeout=deadline(120),
            what="100 big spooled captures stored",
        )
        grown = _peak_rss(proc.pid) - before
        # Streaming holds one chunk (SPOOL_CHUNK_BYTES, 16 MB) at a time; the whole file is 100 MB.
        assert grown < 64 * 1024 * 1024, f"peak RSS grew by {grown / 1e6:.0f} MB"
    finally:
        reap(proc)
