"""forget, then the same content captured again by the real hook: refused and audited."""

from __future__ import annotations

import os

from memtree import protocol
from memtree.eval import payloads
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, deadline_ms, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import bash_payload, run_hook


def _ids_with(system, like: str) -> set[str]:
    return {r[0] for r in rows(system.paths, "SELECT id FROM nodes WHERE content LIKE ?", (like,))}


def _read_payload(system, path: str, text: str, call: str) -> dict:
    return payloads.read(path, text, system.project, "sess-forget", f"toolu_read_{call}")


def test_forgotten_content_recaptured_through_the_hook_is_refused(system):
    secretish = bash_payload(system, 1, extra="the internal billing endpoint layout")
    control = bash_payload(system, 2, extra="an unrelated build log that stays")
    path = os.path.join(system.project, "notes.txt")
    text = "Private roadmap notes that the user asked memtree to forget entirely.\n"
    with open(path, "w") as f:
        f.write(text)
    for p in (secretish, control, _read_payload(system, path, text, "first")):
        run_hook(system, p, MEMTREE_HOOK_TIMEOUT_MS="10000")
    [bash_id] = _ids_with(system, "%billing endpoint layout%")
    [chunk_id] = _ids_with(system, "%Private roadmap notes%")
    [control_id] = _ids_with(system, "%unrelated build log%")

    writer = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(5000))
    for nid in (bash_id, chunk_id):
        writer.call(protocol.Forget(node_id=nid, reason="user asked to forget"))
    writer.close()
    audit_before = rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'refused'")[0][0]

    # The same captures again (a re-run command, a re-read file) plus a new positive control.
    # A re-run is a new tool call (its own tool_use_id): a replay of the same
    # call is answered from its capture key instead, and never reaches the gate.
    rerun = dict(secretish, tool_use_id="toolu_1_rerun")
    fresh = bash_payload(system, 3, extra="a brand new capture after the forget")
    for p in (rerun, _read_payload(system, path, text, "again"), fresh):
        run_hook(system, p, MEMTREE_HOOK_TIMEOUT_MS="10000")
    wait_until(lambda: _ids_with(system, "%brand new capture%"), timeout=COLD_START_S, what="the fresh capture")

    assert _ids_with(system, "%billing endpoint layout%") == set()  # forgotten rows hold no content
    assert _ids_with(system, "%Private roadmap notes%") == set()
    assert _ids_with(system, "%unrelated build log%") == {control_id}
    assert rows(system.paths, "SELECT status FROM nodes WHERE id IN (?, ?)", (bash_id, chunk_id)) == [
        ("forgotten",),
        ("forgotten",),
    ]
    refused = rows(system.paths, "SELECT actor, reason FROM audit WHERE action = 'refused'")
    assert len(refused) - audit_before == 2 and {a for a, _ in refused} == {"hook"}
    assert {r for _, r in refused} == {"content was forgotten (tombstoned)"}
    # memtree's own framing lines ("exit: ...", "--- stdout ---") are no forgotten text:
    # the kept control and the fresh capture keep every line.
    assert rows(system.paths, "SELECT count(*) FROM nodes WHERE content LIKE '%[FORGOTTEN]%'") == [(0,)]
    [(fresh_text,)] = rows(system.paths, "SELECT content FROM nodes WHERE content LIKE '%brand new capture%'")
    assert "exit: unknown" in fresh_text and "--- stdout ---" in fresh_text
