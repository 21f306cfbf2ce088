"""Write-side store code on a real SQLite file (pure code: no processes needed)."""

from __future__ import annotations

import pytest

from memtree import protocol
from memtree.capture.ingest import Plan, Skip
from memtree.errors import BadRequest, NotFound, Refused
from memtree.ids import now_ms
from memtree.store.write import captures, mutations
from memtree.store.write.mutations import Tx
from tests.support import test_config as make_config

SECRET = "AKIAIOSFODNN7EXAMPLE"


def tx(db, config=None, actor="test", at=None) -> Tx:
    return Tx(db, config or make_config(), actor, at)


def one(db, sql, params=()):
    return db.execute(sql, params).fetchone()


def add(db, content, **kw):
    kw.setdefault("kind", "note")
    return mutations.add_node(tx(db), protocol.AddNode(content=content, **kw))["id"]


def test_content_is_redacted_before_it_reaches_the_row_and_the_fts_index(db):
    secret_id = add(db, f"aws key {SECRET} in output")
    clean_id = add(db, "nothing secret here at all")
    assert SECRET not in one(db, "SELECT content FROM nodes WHERE id=?", (secret_id,))[0]
    assert "[REDACTED:" in one(db, "SELECT content FROM nodes WHERE id=?", (secret_id,))[0]
    hits = {
        r[0]
        for r in db.execute(
            "SELECT n.id FROM nodes_fts f JOIN nodes n ON n.rowid=f.rowid WHERE nodes_fts MATCH ?",
            ('"' + SECRET + '"',),
        )
    }
    assert hits == set()
    assert {
        r[0]
        for r in db.execute(
            "SELECT n.id FROM nodes_fts f JOIN nodes n ON n.rowid=f.rowid WHERE nodes_fts MATCH 'secret'"
        )
    } == {clean_id}


def test_truncation_is_utf8_safe_and_records_the_original_size(db):
    config = make_config({"capture": {"maxBytes": 10}})
    text = "ab" + "é" * 10  # 2 + 20 bytes; byte 10 falls inside a two-byte character
    nid = mutations.add_node(tx(db, config), protocol.AddNode(kind="note", content=text))["id"]
    short = mutations.add_node(tx(db, config), protocol.AddNode(kind="note", content="abc"))["id"]
    content, truncated, original = one(db, "SELECT content, truncated, original_bytes FROM nodes WHERE id=?", (nid,))
    assert (content, truncated, original) == ("ab" + "é" * 4, 1, 22)
    assert one(db, "SELECT truncated, original_bytes FROM nodes WHERE id=?", (short,)) == (0, 3)
    import hashlib

    assert (
        one(db, "SELECT content_hash FROM nodes WHERE id=?", (nid,))[0] == hashlib.sha256(content.encode()).hexdigest()
    )


def test_every_insert_and_status_change_writes_an_audit_row_with_the_actor(db):
    nid = add(db, "a note long enough")
    t = tx(db, actor="walker.filter")
    assert mutations.set_status(t, [nid], "live", "promoted", expect=["pending"]) == [nid]
    rows = db.execute(
        "SELECT actor, action, node_id, from_status, to_status, reason FROM audit ORDER BY seq"
    ).fetchall()
    assert [tuple(r) for r in rows] == [
        ("test", "insert", nid, None, "pending", ""),
        ("walker.filter", "status", nid, "pending", "live", "promoted"),
    ]


def test_set_status_with_expect_changes_only_rows_in_the_expected_status(db):
    pending, live = add(db, "still pending"), add(db, "already live", status="live")
    changed = mutations.set_status(tx(db), [pending, live, "NOPE"], "dropped", "x", expect=["pending"])
    assert changed == [pending]
    assert one(db, "SELECT status FROM nodes WHERE id=?", (live,))[0] == "live"
    with pytest.raises(BadRequest, match="Forget"):
        mutations.set_status(tx(db), [live], "forgotten")
    with pytest.raises(BadRequest, match="'bogus'"):
        mutations.set_status(tx(db), [live], "bogus")


def test_forget_empties_content_drops_vectors_and_tombstones_the_hash(db):
    nid, other = add(db, "remember this text"), add(db, "keep this other text")
    db.execute(
        "INSERT INTO nodes_vec(node_id, model, dim, embedding, embedded_at) VALUES (?, 'm', 1, x'00', 0)", (nid,)
    )
    out = mutations.forget(tx(db), nid, "user asked")
    assert out["id"] == nid and out["forgotten"] == [nid]
    assert one(db, "SELECT status, content FROM nodes WHERE id=?", (nid,)) == ("forgotten", "")
    assert one(db, "SELECT count(*) FROM nodes_vec")[0] == 0
    assert {
        r[0]
        for r in db.execute("SELECT n.id FROM nodes_fts f JOIN nodes n ON n.rowid=f.rowid WHERE nodes_fts MATCH 'text'")
    } == {other}
    assert one(db, "SELECT reason FROM audit WHERE action='forget' AND node_id=?", (nid,))[0] == "user asked"
    t = tx(db, actor="mcp")
    with pytest.raises(Refused):
        mutations.insert_node(t, "note", "remember this text")
    for sql, params in t.keep:  # what the writer does after rolling the request back
        db.execute(sql, params)
    assert one(db, "SELECT actor, action FROM audit WHERE action='refused'") == ("mcp", "refused")
    add(db, "remember this text, changed")  # positive control: different content is stored


def test_add_edges_validates_kind_and_both_ends(db):
    a, b = add(db, "node a content"), add(db, "node b content")
    assert mutations.add_edges(tx(db), [{"src": a, "dst": b, "kind": "references"}]) == 1
    assert mutations.add_edges(tx(db), [{"src": a, "dst": b, "kind": "references"}]) == 0  # already there
    with pytest.raises(BadRequest, match="'likes'"):
        mutations.add_edges(tx(db), [{"src": a, "dst": b, "kind": "likes"}])
    with pytest.raises(NotFound, match="GHOST"):
        mutations.add_edges(tx(db), [{"src": a, "dst": "GHOST", "kind": "follows"}])


def chunk(start, end, symbol, content):
    return {"start": start, "end": end, "symbol": symbol, "kind": "function", "content": content}


def put_file(db, mtime, chunks, path="/proj/a.py"):
    return captures.put_file(tx(db), protocol.PutFile(path=path, mtime=mtime, chunks=chunks))


def test_put_file_reuses_unchanged_and_supersedes_changed_chunks_with_edges(db):
    first = put_file(
        db,
        100,
        [
            chunk(1, 10, "alpha", "def alpha(): 1"),
            chunk(11, 20, "beta", "def beta(): 2"),
            chunk(21, 30, None, "tail window"),
        ],
    )
    n_rows = one(db, "SELECT count(*) FROM nodes")[0]
    again = put_file(db, 100, [chunk(1, 10, "alpha", "def alpha(): 1")])
    assert again == {"root_id": first["root_id"], "chunk_ids": first["chunk_ids"], "reused": True, "superseded": []}
    assert one(db, "SELECT count(*) FROM nodes")[0] == n_rows
    old_alpha, old_beta, old_tail = first["chunk_ids"]
    second = put_file(db, 200, [chunk(1, 12, "beta", "def beta(): 3"), chunk(13, 40, "alpha", "def alpha(): 4")])
    new_beta, new_alpha = second["chunk_ids"]
    assert second["root_id"] == first["root_id"] and set(second["superseded"]) == set(first["chunk_ids"])
    edges = {tuple(r) for r in db.execute("SELECT src_id, dst_id, kind FROM edges")}
    # by symbol; the tail (no symbol, lines 21-30) overlaps alpha's new 13-40 most
    assert edges == {
        (new_alpha, old_alpha, "supersedes"),
        (new_beta, old_beta, "supersedes"),
        (new_alpha, old_tail, "supersedes"),
    }
    statuses = dict(db.execute("SELECT id, status FROM nodes WHERE kind='file_chunk'").fetchall())
    assert statuses == {
        old_alpha: "superseded",
        old_beta: "superseded",
        old_tail: "superseded",
        new_alpha: "live",
        new_beta: "live",
    }
    trail = [
        tuple(r)
        for r in db.execute(
            "SELECT from_status, to_status FROM audit WHERE node_id=? AND action != 'insert' ORDER BY seq", (old_alpha,)
        )
    ]
    assert trail == [("live", "stale"), ("stale", "superseded")]
    uri, meta = one(db, "SELECT source_uri, metadata FROM nodes WHERE id=?", (new_alpha,))
    assert uri == "file:///proj/a.py#L13-40" and '"symbol":"alpha"' in meta and '"tokens":' in meta
    assert one(db, "SELECT source_uri, kind FROM nodes WHERE id=?", (first["root_id"],)) == (
        "file:///proj/a.py",
        "file",
    )


def test_put_file_rejects_relative_paths_and_bad_chunks(db):
    with pytest.raises(BadRequest, match="absolute"):
        put_file(db, 1, [chunk(1, 2, None, "x")], path="rel/a.py")
    with pytest.raises(BadRequest, match=r"chunks\[0\]"):
        put_file(db, 1, [{"start": 5, "end": 2, "content": "x"}])


def test_put_tool_output_is_deduplicated_only_within_the_window(db):
    config = make_config({"capture": {"dedupeWindowS": 60}})
    rec = protocol.PutToolOutput(tool="Bash", content="build ok", children=[{"content": "line one"}], session_id="s")
    old = captures.put_tool_output(Tx(db, config, "mcp", now_ms() - 120_000), rec)  # stored two minutes ago
    fresh = captures.put_tool_output(Tx(db, config, "mcp"), rec)
    again = captures.put_tool_output(Tx(db, config, "mcp"), rec)
    assert not old["deduped"] and not fresh["deduped"] and fresh["id"] != old["id"]
    assert again == {"id": fresh["id"], "child_ids": fresh["child_ids"], "deduped": True}
    assert one(db, "SELECT count(*) FROM nodes WHERE kind='tool_output'")[0] == 2


def one_node_plan(parent: dict, kind: str, content: str, source_uri: str, metadata: dict, mtime: int = 0) -> Plan:
    """A plan of session s1 storing one node under ``parent``."""
    node = {"ref": "n0", "parent": parent, "kind": kind, "content": content, "source_uri": source_uri}
    return Plan("s1", [{**node, "metadata": metadata, "mtime": mtime}])


def grep_plan(sid="s1", output="a.py:1:def greet(name):\nb.py:2:greet()", hits=("def greet(name):", "greet()")):
    return Plan(
        sid,
        [
            {
                "ref": "n0",
                "parent": {"session": sid},
                "kind": "tool_output",
                "content": output,
                "source_uri": "tool:Grep#x",
                "metadata": {"tool": "Grep"},
                "mtime": 0,
            },
            *(
                {
                    "ref": f"n{i + 1}",
                    "parent": {"ref": "n0"},
                    "kind": "file_chunk",
                    "content": h,
                    "source_uri": f"file:///p/a.py#L{i + 1}-{i + 1}",
                    "metadata": {},
                    "mtime": 0,
                }
                for i, h in enumerate(hits)
            ),
        ],
    )


def test_an_ingest_plan_lands_pending_under_resolved_parents(db):
    out = captures.apply_plan(tx(db, actor="hook"), grep_plan())
    out_id, *hit_ids = out["stored"]
    assert out["skipped"] is None and len(hit_ids) == 2
    session = one(db, "SELECT id, status FROM nodes WHERE kind='session' AND source_uri='session:s1'")
    assert session[1] == "live"
    assert one(db, "SELECT parent_id, status, session_id FROM nodes WHERE id=?", (out_id,)) == (
        session[0],
        "pending",
        "s1",
    )
    assert {r[0] for r in db.execute("SELECT id FROM nodes WHERE parent_id=?", (out_id,))} == set(hit_ids)
    read = one_node_plan({"file": "/p/a.py"}, "file_chunk", "def greet(name): ...", "file:///p/a.py#L1-1", {}, mtime=5)
    (chunk_id,) = captures.apply_plan(tx(db, actor="hook"), read)["stored"]
    root = one(db, "SELECT parent_id FROM nodes WHERE id=?", (chunk_id,))[0]
    assert one(db, "SELECT kind, source_uri, status FROM nodes WHERE id=?", (root,)) == (
        "file",
        "file:///p/a.py",
        "live",
    )
    captures.apply_plan(tx(db, actor="hook"), read)  # a second read of the file reuses its root
    assert one(db, "SELECT count(*) FROM nodes WHERE kind='file'")[0] == 1


def test_an_ingest_plan_dedupes_tool_outputs_with_their_children_and_refuses_forgotten_ones(db):
    first = captures.apply_plan(tx(db), grep_plan())
    again = captures.apply_plan(tx(db), grep_plan())
    assert again == {"stored": [], "skipped": None, "deduped": [first["stored"][0]]}
    other = captures.apply_plan(tx(db), grep_plan(output="c.py:9:other output"))
    assert len(other["stored"]) == 3  # positive control: a different output is stored with its hits
    mutations.forget(tx(db), other["stored"][0], "leaked")
    t = tx(db, actor="hook")
    refused = captures.apply_plan(t, grep_plan(output="c.py:9:other output", hits=("new hit",)))
    assert refused == {"stored": [], "skipped": "forgotten", "refused": 1}
    assert len(t.keep) == 1 and "refused" in t.keep[0][1]


def test_plan_metadata_is_redacted_once_at_insert(db):
    secret = "abcdefghijklmnop0123456789"
    meta = {"tool": "Bash", "command": f"curl -H 'Authorization: Bearer {secret}' https://x"}
    plan = one_node_plan({"session": "s1"}, "tool_output", "$ curl\nexit: 0", "tool:Bash", meta)
    assert secret in plan.nodes[0]["metadata"]["command"]  # the plan keeps it raw: one pass, at insert
    (node_id,) = captures.apply_plan(tx(db, actor="hook"), plan)["stored"]
    meta = one(db, "SELECT metadata FROM nodes WHERE id = ?", (node_id,))[0]
    assert secret not in meta and "[REDACTED:auth_header]" in meta


def test_a_skipped_plan_stores_nothing_and_audits_the_reason_only(db):
    out = captures.apply_plan(tx(db, actor="hook"), Plan("s", [], Skip("denied", "denied command")))
    assert out == {"stored": [], "skipped": "denied"}
    assert one(db, "SELECT count(*) FROM nodes")[0] == 0
    assert [tuple(r) for r in db.execute("SELECT actor, action, node_id, reason FROM audit")] == [
        ("hook", "skipped", None, "denied command")
    ]


def test_huge_content_is_cut_before_redaction_yet_redacted_and_sized_right():
    from memtree.store.write.mutations import prepare_content

    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "MIIEowIBAAKCAQEA" * 200  # never terminated
    text = "token ghp_" + "a" * 36 + "\n" + "y" * 99_000 + key + "z" * 10_000_000
    stored, truncated, original = prepare_content(text, 100_000)
    assert truncated and original == len(text.encode())
    assert len(stored.encode()) <= 100_000
    assert "ghp_" + "a" * 36 not in stored and "[REDACTED:" in stored
    assert "MIIEowIBAAKCAQEA" not in stored  # the key straddling the cut is gone too
    # positive control: a small capture keeps its size and is not cut
    assert prepare_content("plain words", 100_000) == ("plain words", False, 11)
