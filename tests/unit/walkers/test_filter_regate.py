"""After an upgrade that added redaction rules, the filter walker cleans the
rows an older gate cleaned: a real writer, a real filter walker, rows written
as an older memtree left them."""

from __future__ import annotations

import apsw
import orjson

from memtree import protocol
from memtree.gate import REDACTION_VERSION
from memtree.ids import now_ms, ulid
from memtree.store import sweeps
from memtree.store.write.mutations import content_hash
from tests.support import COLD_START_S, deadline, wait_until
from tests.support.actor_procs import node_events, read_db, rows

SECRET = "Zq81bX0pLmN4vR7t"
# Caught since gate v4 only (a subscript assigned a literal): on disk as v3 left it.
LEAKY = f'import os\nos.environ["PAYMENTS_API_KEY"] = "{SECRET}"\nprint("configured")\n'
BENIGN = "a benign note an older memtree stored, kept as it is by every gate\n"


def _old_rows(paths, spec: list[tuple[int, str, str, int | None]]) -> list[str]:
    """Rows as an older memtree wrote them, at the given rowids: (rowid, content,
    status, gate version or None for a row from before gates were recorded)."""
    conn = apsw.Connection(paths.db)
    try:
        ids = []
        for rowid, content, status, version in spec:
            nid = ulid()
            meta = {"source": "old"} if version is None else {"source": "old", "redaction": version}
            conn.execute(
                "INSERT INTO nodes(rowid, id, kind, source_uri, content, content_hash, status, created_at,"
                " updated_at, metadata) VALUES (?, ?, 'note', ?, ?, ?, ?, ?, ?, ?)",
                (
                    rowid,
                    nid,
                    f"note:{nid}",
                    content,
                    content_hash(content),
                    status,
                    now_ms(),
                    now_ms(),
                    orjson.dumps(meta).decode(),
                ),
            )
            ids.append(nid)
        return ids
    finally:
        conn.close()


def _older(paths) -> int:
    conn = read_db(paths)
    try:
        return sweeps.older_gate_count(conn, REDACTION_VERSION)
    finally:
        conn.close()


def _meta(paths, node_id: str) -> dict:
    return orjson.loads(rows(paths, "SELECT metadata FROM nodes WHERE id = ?", (node_id,))[0][0])


def test_rows_an_older_gate_cleaned_are_cleaned_again_and_marked(filter_system):
    paths, caller, start_filter = filter_system
    current = caller.call(protocol.AddNode(kind="note", content="stored by this gate " + "x" * 60, status="live"))["id"]
    # Spread over the table: the walk takes several steps (REGATE_SPAN rowids each) to reach them.
    leaky, benign, unmarked, forgotten = _old_rows(
        paths,
        [
            (12_345, LEAKY, "live", REDACTION_VERSION - 1),
            (3, BENIGN, "live", REDACTION_VERSION - 1),
            (7_777, BENIGN + "unmarked\n", "stale", None),
            (20_001, LEAKY, "forgotten", REDACTION_VERSION - 1),
        ],
    )
    assert rows(paths, "SELECT count(*) FROM nodes WHERE content LIKE ?", (f"%{SECRET}%",)) == [(2,)]  # on disk
    assert _older(paths) == 3  # the forgotten row is none of them

    start_filter()

    def marked() -> set[str]:
        got = rows(paths, "SELECT id FROM nodes WHERE json_extract(metadata, '$.redaction') = ?", (REDACTION_VERSION,))
        return {r[0] for r in got}

    wait_until(lambda: {leaky, benign, unmarked} <= marked(), timeout=COLD_START_S, what="old rows marked")
    assert marked() == {current, leaky, benign, unmarked}  # the forgotten row is left as forget left it
    assert _older(paths) == 0
    # The leaky row is rewritten: gone from the row and from the FTS index; the rest of it stays.
    [(content,)] = rows(paths, "SELECT content FROM nodes WHERE id = ?", (leaky,))
    assert SECRET not in content and 'print("configured")' in content and "[REDACTED:secret_value]" in content
    assert rows(paths, "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (f'"{SECRET}"',)) == [(0,)]
    # The benign rows keep their text and hash; only their mark moved.
    for node_id, text in ((benign, BENIGN), (unmarked, BENIGN + "unmarked\n")):
        assert rows(paths, "SELECT content, content_hash FROM nodes WHERE id = ?", (node_id,)) == [
            (text, content_hash(text))
        ]
        assert _meta(paths, node_id) == {"source": "old", "redaction": REDACTION_VERSION}
    # Audited: the rewrite by its id, the marks in one row naming them.
    audits = rows(paths, "SELECT node_id, detail FROM audit WHERE action = 'redact'")
    assert {a[0] for a in audits if a[0]} == {leaky}
    assert sorted(i for a in audits if a[0] is None for i in orjson.loads(a[1])["ids"]) == sorted([benign, unmarked])


def test_a_mark_needs_the_hash_read_and_the_writers_gate(filter_system):
    """``Redact.current`` marks a row only while its content is the one the walker
    checked, and only when the walker ran the writer's gate."""
    paths, caller, _ = filter_system
    [benign] = _old_rows(paths, [(5, BENIGN, "live", REDACTION_VERSION - 1)])
    digest = content_hash(BENIGN)
    for current, version in (([[benign, "0" * 64]], REDACTION_VERSION), ([[benign, digest]], REDACTION_VERSION - 1)):
        got = caller.call(protocol.Redact(ids=[], current=current, version=version))
        assert got == {"changed": [], "marked": 0}
        assert _meta(paths, benign)["redaction"] == REDACTION_VERSION - 1
    got = caller.call(protocol.Redact(ids=[], current=[[benign, digest]], version=REDACTION_VERSION))
    assert got == {"changed": [], "marked": 1}  # positive control
    assert _meta(paths, benign)["redaction"] == REDACTION_VERSION
    assert caller.call(protocol.Redact(ids=[], current=[[benign, digest]], version=REDACTION_VERSION))["marked"] == 0


def test_a_rewritten_row_is_announced_so_its_vector_is_made_again(filter_system):
    """A rewrite deletes the row's vector (made from the old text); the embed
    walker's walk may be past the row, so the writer announces it as it
    announces a row gone live (NodesChanged), and only the rows it rewrote."""
    paths, caller, _ = filter_system
    with node_events(paths) as sub:

        def subscribed():  # PUB drops until the subscription arrives: a fresh node each try
            caller.call(protocol.AddNode(kind="note", content="watch me " + ulid()))
            return sub.poll(300) and sub.recv_multipart()

        wait_until(subscribed, timeout=deadline(20), what="a NodesChanged event")
        while sub.poll(200):  # the probes' own events
            sub.recv_multipart()
        leaky, benign = _old_rows(paths, [(40, LEAKY, "live", REDACTION_VERSION - 1), (41, BENIGN, "live", None)])
        assert caller.call(protocol.Redact(ids=[leaky, benign]))["changed"] == [leaky]
        announced: dict[str, set[str]] = {}
        while sub.poll(500):
            event = protocol.decode(sub.recv_multipart()[1]).body
            announced.setdefault(event.status, set()).update(event.ids)
        assert announced == {"live": {leaky}}
