"""forget erases every copy: no token of the forgotten text in the raw bytes of
store.db / WAL / FTS after the forget's checkpoint, whatever copies existed
(a dropped duplicate, per-line grep hits, a whole-file read around it, a
summary, a vector); a re-capture in any slicing is left out and audited."""

from __future__ import annotations

import os

from memtree import protocol
from memtree.recall.retrieval import forget_text
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, deadline_ms, leak_scan, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import run_hook

# Distinctive tokens (one per line) so "no token left" is checkable in raw bytes.
NOTE = (
    "Quarterly plan: migrate billing to quokkaflux7731 by March\n"
    "Vendor contact is zentharionby9 at the usual address\n"
    "Budget line pelmiradoxq58 stays confidential until launch\n"
)
TOKENS = ["quokkaflux7731", "zentharionby9", "pelmiradoxq58"]
CONTROL = "an unrelated keeper line mentions wobbleganzite42 and must stay\n"


def _payload(system, tool: str, tool_input: dict, response: dict, n: int) -> dict:
    return {
        "session_id": "sess-forget-all",
        "cwd": system.project,
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "tool_use_id": f"toolu_f{n}",
    }


def _read(system, rel: str, text: str, n: int) -> dict:
    full = os.path.join(system.project, rel)
    with open(full, "w") as f:
        f.write(text)
    return _payload(
        system,
        "Read",
        {"file_path": full},
        {
            "type": "text",
            "file": {
                "filePath": full,
                "content": text,
                "numLines": text.count("\n"),
                "startLine": 1,
                "totalLines": text.count("\n"),
            },
        },
        n,
    )


def _grep(system, rel: str, line_no: int, line: str, n: int) -> dict:
    return _payload(
        system,
        "Grep",
        {"pattern": line.split()[-3], "output_mode": "content", "-n": True},
        {"mode": "content", "numFiles": 1, "filenames": [], "content": f"{rel}:{line_no}:{line}", "numLines": 1},
        n,
    )


def _status(system, nid: str) -> str:
    return rows(system.paths, "SELECT status FROM nodes WHERE id = ?", (nid,))[0][0]


def _raw_hits(system, tokens) -> set[str]:
    files = [system.paths.db + s for s in ("", "-wal", "-shm") if os.path.exists(system.paths.db + s)]
    found = set(leak_scan.leaks_in_files(files, tokens))
    terms = leak_scan.fts_terms(system.paths.db)
    return found | {t for t in tokens if t.lower() in terms}


def test_forget_leaves_no_token_of_any_copy_and_refuses_recaptures(system):
    writer = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    try:
        first = writer.call(protocol.AddNode(kind="note", content=NOTE, session_id="sess-forget-all"))["id"]
        wait_until(lambda: _status(system, first) == "live", timeout=COLD_START_S, what="the note live")
        dup = writer.call(protocol.AddNode(kind="note", content=NOTE, session_id="sess-forget-all"))["id"]
        wait_until(lambda: _status(system, dup) == "dropped", timeout=COLD_START_S, what="the duplicate dropped")
        lines = NOTE.splitlines()
        run_hook(system, _read(system, "plan.md", "# Notes\n" + NOTE + CONTROL, 1), MEMTREE_HOOK_TIMEOUT_MS="10000")
        run_hook(system, _grep(system, "plan.md", 3, lines[1], 2), MEMTREE_HOOK_TIMEOUT_MS="10000")
        run_hook(system, _read(system, "keep.md", CONTROL * 2, 3), MEMTREE_HOOK_TIMEOUT_MS="10000")
        summary = writer.call(
            protocol.AddNode(
                kind="summary",
                content="Summary: " + lines[2],
                status="live",
                refs=[{"dst": first, "kind": "summarizes"}],
            )
        )["id"]
        assert _raw_hits(system, TOKENS + ["wobbleganzite42"]) == set(TOKENS + ["wobbleganzite42"])  # all there

        res = writer.call(protocol.Forget(node_id=first, reason="user asked"))
    finally:
        writer.close()
    assert {dup, summary} <= set(res["forgotten"]) and len(res["scrubbed"]) >= 1
    text = forget_text(res)
    assert "erased" in text and "cut out of" in text and "left out and audited" in text
    # The writer truncates the WAL right after a Forget's commit (retried while a
    # reader is mid-transaction); later writes refill it, without the forgotten text.
    wait_until(lambda: _raw_hits(system, TOKENS) == set(), timeout=COLD_START_S, what="no forgotten token on disk")
    assert _raw_hits(system, ["wobbleganzite42"]) == {"wobbleganzite42"}  # positive control: the rest stayed
    assert rows(system.paths, "SELECT content FROM nodes WHERE id IN (?, ?, ?)", (first, dup, summary)) == [("",)] * 3

    # The same text again, sliced differently: a read of another file around it, one grep hit line.
    refused_before = rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'refused'")[0][0]
    run_hook(
        system, _read(system, "copy.md", "header of the copy is fine\n" + NOTE, 4), MEMTREE_HOOK_TIMEOUT_MS="10000"
    )
    run_hook(system, _grep(system, "copy.md", 3, lines[1], 5), MEMTREE_HOOK_TIMEOUT_MS="10000")
    wait_until(
        lambda: rows(system.paths, "SELECT count(*) FROM audit WHERE action = 'refused'")[0][0] >= refused_before + 2,
        timeout=COLD_START_S,
        what="both re-captures audited",
    )
    stored = "".join(r[0] for r in rows(system.paths, "SELECT content FROM nodes"))
    assert [t for t in TOKENS if t in stored] == []
    assert "header of the copy is fine" in stored  # the rest of the new read was kept
