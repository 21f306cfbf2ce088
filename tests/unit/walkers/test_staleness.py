"""The staleness walker as a real process beside a real writer."""

from __future__ import annotations

import os

import pytest

from memtree.actors.walkers.staleness import CHANGED, GONE, mtime_changed
from memtree.tools.read import read
from tests.support import COLD_START_S, reap, wait_until
from tests.support.actor_procs import start_actor
from tests.support.tools_harness import Harness


@pytest.fixture
def h(tmp_path):
    harness = Harness(tmp_path, {"walkers": {"stalenessIntervalMs": 200}})
    yield harness
    harness.close()


def _chunks(h, rel: str) -> set[str]:
    return {
        r[0]
        for r in h.rows(
            "SELECT id FROM nodes WHERE kind='file_chunk' AND source_uri LIKE ?",
            (f"file://{os.path.join(h.root, rel)}#%",),
        )
    }


def _status(h, ids) -> dict[str, str]:
    return {i: s for i, s in h.rows("SELECT id, status FROM nodes") if i in ids}


def test_touched_and_deleted_files_make_exactly_their_chunks_stale(h):
    for name in ("touched.py", "deleted.py", "untouched.py"):
        h.write(name, "".join(f"def f{i}():\n    return {i}\n\n" for i in range(5)))
        h.run(read, name)
    touched, deleted, untouched = _chunks(h, "touched.py"), _chunks(h, "deleted.py"), _chunks(h, "untouched.py")
    assert touched and deleted and untouched
    walker = start_actor(h.paths, h.config, "memtree.actors.walkers.staleness", "walker.staleness")
    try:
        full = os.path.join(h.root, "touched.py")
        st = os.stat(full)
        os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        os.unlink(os.path.join(h.root, "deleted.py"))
        everything = touched | deleted | untouched
        # Allows for a cold walker start plus a few 200 ms ticks.
        wait_until(
            lambda: {i for i, s in _status(h, everything).items() if s == "stale"} == touched | deleted,
            timeout=COLD_START_S,
            what="touched and deleted chunks stale",
        )
        assert {i for i, s in _status(h, everything).items() if s == "live"} == untouched
        reasons = {r[0]: r[1] for r in h.rows("SELECT node_id, reason FROM audit WHERE to_status='stale'")}
        assert {i for i, r in reasons.items() if r == CHANGED} == touched
        assert {i for i, r in reasons.items() if r == GONE} == deleted
        assert walker.poll() is None
    finally:
        reap(walker)


def test_mtime_units_ns_ms_and_unknown():
    class St:
        st_mtime_ns = 1_700_000_000_500_000_000

    assert mtime_changed(St.st_mtime_ns - 1, 0, St) and not mtime_changed(St.st_mtime_ns, 0, St)
    assert mtime_changed(1_700_000_000_000, 0, St) and not mtime_changed(1_700_000_000_500, 0, St)
    assert mtime_changed(0, 1_700_000_000_000, St) and not mtime_changed(0, 1_700_000_001_000, St)
