"""A SIGSTOPped embed walker: hybrid search still answers (degraded to
keyword, and says so), captures keep landing, and after SIGCONT the walker
drains the backlog they left. Real writer, real MCP front over stdio, real
embed walker with the bundled model."""

from __future__ import annotations

import os
import signal

import pytest

from memtree.front.services import EMBED_PROBE_MS
from memtree.recall.embeddings import LOCAL_MODEL
from tests.support import COLD_START_S, reap, sigstop, wait_until
from tests.support.actor_procs import start_actor
from tests.support.front_harness import Front, ids_in

QUERY = "retry a failing network call"


def unembedded(f) -> set[str]:
    return {
        r[0]
        for r in f.rows(
            "SELECT n.id FROM nodes n WHERE n.status = 'live' AND n.kind = 'note' "
            "AND n.id NOT IN (SELECT node_id FROM nodes_vec)"
        )
    }


@pytest.fixture()
def front(tmp_path):
    f = Front(tmp_path, overrides={"walkers": {"embeddingIdleMs": 100, "embedQueryTimeoutMs": 300}})
    f.walker = None
    try:
        f.walker = start_actor(f.paths, f.config, "memtree.actors.walkers.embed", "walker.embed")
        yield f
    finally:
        if f.walker is not None:
            os.kill(f.walker.pid, signal.SIGCONT)  # a stopped process ignores SIGTERM until continued
            reap(f.walker)
        f.close()


def test_stopped_embed_walker_degrades_hybrid_keeps_ingest_and_drains_after_sigcont(front):
    f = front
    first = f.add("with_retries: call the function again when the network call is failing", kind="note")
    wait_until(lambda: not unembedded(f), timeout=COLD_START_S, what="the first note embedded")
    # Positive control: with the walker running, hybrid is not degraded.
    running = f.ok("recall", {"query": QUERY})
    assert "(hybrid)" in running and "degraded" not in running and first in ids_in(running)

    sigstop(f.walker.pid)
    try:
        stopped = f.ok("recall", {"query": QUERY})
        assert "(keyword)" in stopped and "hybrid degraded to keyword" in stopped and first in ids_in(stopped)
        # The note names the bound this search waited: the configured one, then the probe's after a miss.
        assert "within 300 ms" in stopped and "within 300 ms" not in f.ok("recall", {"query": QUERY + " again"})
        assert f"within {EMBED_PROBE_MS} ms" in f.ok("recall", {"query": QUERY + " once more"})
        # Ingest keeps working while the walker is stopped: through the MCP note tool and the writer.
        noted = ids_in(f.ok("note", {"text": "network calls that fail are retried with exponential backoff"}))
        assert len(noted) == 1 and f.rows("SELECT count(*) FROM nodes WHERE id = ?", (noted.pop(),)) == [(1,)]
        later = {
            f.add(f"captured while the embed walker was stopped, number {i}, about retry loops", kind="note")
            for i in range(20)
        }
        assert unembedded(f) == later
    finally:
        os.kill(f.walker.pid, signal.SIGCONT)
    wait_until(lambda: not unembedded(f), timeout=COLD_START_S, what="the backlog drained after SIGCONT")
    assert {r[0] for r in f.rows("SELECT model FROM nodes_vec")} == {LOCAL_MODEL}
    again = f.ok("recall", {"query": QUERY})
    assert "(hybrid)" in again and "degraded" not in again
