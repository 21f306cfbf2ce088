"""Round trip per message type, plus the ways a frame can be wrong."""

from __future__ import annotations

import orjson
import pytest

from memtree import protocol
from memtree.protocol import ErrorCode, ProtocolError

# One populated example per registered message type; a new type without one fails below.
EXAMPLES = {
    "Ping": protocol.Ping(),
    "Tidy": protocol.Tidy(spool_since=1_700_000_000_000),
    "MergeFts": protocol.MergeFts(pages=300),
    "AddNode": protocol.AddNode(
        kind="note",
        content="héllo ✓",
        parent_id="P",
        source_uri="note:1",
        metadata={"a": [1, 2]},
        session_id="s",
        status="live",
        mtime=7,
        refs=[{"dst": "X", "kind": "references"}],
    ),
    "Ingest": protocol.Ingest(payload={"tool_name": "Read", "tool_input": {"file_path": "/a"}}, received_at=5),
    "SetStatus": protocol.SetStatus(ids=["A", "B"], status="live", reason="ok", expect=["pending"]),
    "AddEdges": protocol.AddEdges(edges=[{"src": "A", "dst": "B", "kind": "follows"}]),
    "Forget": protocol.Forget(node_id="A", reason="leaked"),
    "Purge": protocol.Purge(ids=["A", "B"], reason="pruned for more than 30 days"),
    "Reclaim": protocol.Reclaim(pages=64),
    "Redact": protocol.Redact(ids=["A", "B"]),
    "RebuildIndexes": protocol.RebuildIndexes(reason="doctor --fix"),
    "PutFile": protocol.PutFile(
        path="/p/a.py",
        mtime=12,
        size=3,
        session_id="s",
        chunks=[{"start": 1, "end": 2, "symbol": "f", "kind": "function", "content": "x"}],
    ),
    "PutToolOutput": protocol.PutToolOutput(
        tool="Bash",
        content="out",
        metadata={"exit": 0},
        session_id="s",
        children=[{"content": "c", "source_uri": "u", "metadata": {}}],
        source_uri="tool:Bash#1",
    ),
    "PutVectors": protocol.PutVectors(
        model="m", dim=2, items=[{"node_id": "A", "content_hash": "h", "vector": [0.5, -0.25]}]
    ),
    "Supersede": protocol.Supersede(keep_id="B", old_id="A", score=0.981, reason="near-duplicate"),
    "EmbedQuery": protocol.EmbedQuery(text="where are retries handled"),
    "Heartbeat": protocol.Heartbeat(name="writer", pid=1, state="standby", backlog=3, info={"k": 1}),
    "CtlStatus": protocol.CtlStatus(),
    "CtlRestart": protocol.CtlRestart(name="filter"),
    "CtlStop": protocol.CtlStop(name="filter"),
    "CtlStart": protocol.CtlStart(name="filter"),
    "CtlShutdown": protocol.CtlShutdown(),
    "NodesChanged": protocol.NodesChanged(ids=["A"], status="pending", kinds=["note"]),
    "Stop": protocol.Stop(),
}


def test_every_message_type_has_a_round_trip_example():
    missing = set(protocol.MESSAGES) - set(EXAMPLES)
    assert not missing, f"add an example for {sorted(missing)} to EXAMPLES in tests/unit/capture/test_protocol.py"
    assert set(EXAMPLES) <= set(protocol.MESSAGES)


@pytest.mark.parametrize("type_name", sorted(EXAMPLES))
def test_call_cast_and_event_round_trip_keep_every_field(type_name):
    rec = EXAMPLES[type_name]
    rid, frame = protocol.encode_call(rec, src="test")
    env = protocol.decode(frame)
    assert (env.kind, env.type, env.id, env.src) == ("call", type_name, rid, "test")
    assert type(env.body) is type(rec) and env.body == rec
    assert protocol.decode(protocol.encode_cast(rec, src="t")).body == rec
    ev = protocol.decode(protocol.encode_event(rec))
    assert ev.kind == "event" and ev.body == rec


def test_defaults_fill_missing_optional_fields():
    env = protocol.decode(
        orjson.dumps({"v": 1, "id": "1", "kind": "call", "type": "AddNode", "body": {"kind": "note", "content": "c"}})
    )
    assert (env.body.status, env.body.metadata, env.body.refs, env.body.parent_id) == ("pending", {}, [], None)


def test_replies_round_trip_ok_and_error():
    assert protocol.reply_result(protocol.decode(protocol.encode_ok("r1", {"id": "X"}))) == {"id": "X"}
    with pytest.raises(ProtocolError) as e:
        protocol.reply_result(protocol.decode(protocol.encode_error("r2", ErrorCode.REFUSED, "no")))
    assert (e.value.code, e.value.message) == (ErrorCode.REFUSED, "no")


@pytest.mark.parametrize(
    "frame, code, needle",
    [
        (b"\xff not json", ErrorCode.BAD_REQUEST, "not JSON"),
        (b"[1, 2]", ErrorCode.BAD_REQUEST, "not a JSON object"),
        (orjson.dumps({"v": 99, "id": "7", "kind": "call", "type": "Ping", "body": {}}), ErrorCode.VERSION, "99"),
        (
            orjson.dumps({"v": 1, "id": "7", "kind": "shout", "type": "Ping", "body": {}}),
            ErrorCode.BAD_REQUEST,
            "shout",
        ),
        (orjson.dumps({"v": 1, "id": "7", "kind": "call", "type": "Nope", "body": {}}), ErrorCode.UNKNOWN_TYPE, "Nope"),
        (
            orjson.dumps({"v": 1, "id": "7", "kind": "call", "type": "Forget", "body": {"node_id": "A"}}),
            ErrorCode.BAD_REQUEST,
            "reason",
        ),
        (
            orjson.dumps(
                {"v": 1, "id": "7", "kind": "call", "type": "SetStatus", "body": {"ids": "A", "status": "live"}}
            ),
            ErrorCode.BAD_REQUEST,
            "ids",
        ),
        (
            orjson.dumps({"v": 1, "id": "7", "kind": "call", "type": "Ping", "body": {"extra": 1}}),
            ErrorCode.BAD_REQUEST,
            "extra",
        ),
    ],
)
def test_bad_frames_raise_a_protocol_error_naming_the_problem(frame, code, needle):
    with pytest.raises(ProtocolError) as e:
        protocol.decode(frame)
    assert e.value.code == code and needle in e.value.message
