"""Bookkeeping's bounded retention (``Tidy``), on a running memtree: a capture
key lives as long as a second copy of its capture can arrive (its retry
window, or while an older spool entry waits), and once it is gone a
forgotten capture sent again through the real hook is still refused by its
tombstones, while a retry inside the window is still recognised."""

from __future__ import annotations

import os

from memtree import protocol
from memtree.eval import payloads
from memtree.ids import now_ms
from memtree.runtime.client import Caller
from memtree.store.write.bookkeeping import RETRY_WINDOW_MS
from tests.support import deadline_ms
from tests.support.actor_procs import rows
from tests.support.hook_support import run_hook

HOUR_MS = 3_600_000


def _read(system, name: str, marker: str) -> dict:
    path = os.path.join(system.project, name)
    content = f"# {marker}\n" + "".join(f"line {k} of {name}, something worth keeping\n" for k in range(12))
    with open(path, "w") as f:
        f.write(content)
    return payloads.read(path, content, system.project, "sess-keys", f"toolu_{marker}")


def _keys(system) -> set[str]:
    return {r[0].split(":")[0] for r in rows(system.paths, "SELECT key FROM capture_keys")}


def _marked(system, marker: str) -> list[tuple[str, str]]:
    return rows(
        system.paths, "SELECT id, status FROM nodes WHERE kind = 'file_chunk' AND content LIKE ?", (f"# {marker}\n%",)
    )


def test_capture_keys_expire_after_their_retry_window_and_a_forgotten_capture_stays_refused(system):
    assert system.ctl("stop", "walker.pruner").returncode == 0  # this test sends Tidy itself
    w = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        old, waiting, fresh = (_read(system, f"{m}.py", m) for m in ("oldcap", "waitcap", "freshcap"))
        long_ago = now_ms() - HOUR_MS
        for payload in (old, waiting):  # captured an hour ago (a spool drained late dates them so)
            assert w.call(protocol.Ingest(payload=payload, received_at=long_ago))["stored"]
        run_hook(system, fresh)
        assert _keys(system) == {"toolu_oldcap", "toolu_waitcap", "toolu_freshcap"}

        # A spool entry from an hour ago still waits: every key from then on may still meet its copy.
        kept = w.call(protocol.Tidy(spool_since=long_ago))
        assert kept["capture_keys_dropped"] == 0 and len(_keys(system)) == 3
        [(old_id, _)] = _marked(system, "oldcap")
        w.call(protocol.Forget(node_id=old_id, reason="the user asked"))
        done = w.call(protocol.Tidy(spool_since=0))  # the spool is empty now
        assert done["capture_keys_dropped"] == 2
        assert _keys(system) == {"toolu_freshcap"}  # inside its window: kept
        assert now_ms() - long_ago > RETRY_WINDOW_MS

        # A retry of the fresh capture (its spooled copy) is still recognised: nothing new stored.
        again = w.call(protocol.Ingest(payload=fresh, received_at=now_ms()))
        assert again.get("duplicate") is True and len(_marked(system, "freshcap")) == 1
    finally:
        w.close()
    # The forgotten capture, sent again through the real hook with its key gone: refused by its tombstones.
    refused_before = rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'refused'")[0][0]
    run_hook(system, old)
    assert _marked(system, "oldcap") == []  # nothing holds its text again
    assert rows(system.paths, "SELECT status FROM nodes WHERE id = ?", (old_id,)) == [("forgotten",)]
    assert rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'refused'")[0][0] > refused_before
    assert rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'tidy'")[0][0] == 1  # the pass is audited
