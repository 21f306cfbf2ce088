"""The front's read connections: one per live worker thread, closed once the
thread has ended (the worker pool retires idle threads and starts new ones;
each connection holds its own page cache)."""

from __future__ import annotations

import threading

import apsw
import pytest

from memtree.front.services import Services
from tests.support import deadline
from tests.support.tools_harness import Harness


def test_a_read_connection_is_closed_once_its_thread_has_ended(tmp_path):
    h = Harness(tmp_path)
    svc = Services(h.config, h.paths, session_id="test-session", src="test")
    got: dict[str, apsw.Connection] = {}
    held, release = threading.Event(), threading.Event()

    def use(name: str) -> None:
        got[name] = svc.db()
        assert got[name].execute("SELECT 1").fetchall() == [(1,)]

    def hold() -> None:
        use("held")
        held.set()
        release.wait(deadline(10))

    try:
        keeper = threading.Thread(target=hold)
        keeper.start()
        assert held.wait(deadline(10))
        # Started while the keeper runs, so it cannot reuse the keeper's thread id (ids of ended threads are reused).
        ended = threading.Thread(target=use, args=("ended",))
        ended.start()
        ended.join()
        assert got["ended"] is not got["held"]
        use("main")  # a new connection: the ended thread's is closed, the live one's kept
        with pytest.raises(apsw.ConnectionClosedError):
            got["ended"].execute("SELECT 1")
        # Positive control: the thread still running keeps its connection, open.
        assert got["held"].execute("SELECT 1").fetchall() == [(1,)]
        assert set(svc._dbs) == {threading.get_ident(), keeper.ident}
        assert svc.db() is got["main"]  # the same thread gets the same connection
    finally:
        release.set()
        svc.close()
        svc.zctx.destroy(linger=0)
        h.close()
