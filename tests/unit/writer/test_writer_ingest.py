"""Ingest over the hook's socket: real Claude Code payloads, plan applied, reply after commit."""

from __future__ import annotations

import json
import os

import orjson
import pytest

from memtree import protocol
from tests.support import PAYLOAD_DIR, deadline, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import raw_call, rows, start_writer

PAYLOADS = os.path.join(PAYLOAD_DIR, "basic.jsonl")
HARNESS_PROJECT = "/tmp/claude-code-harness/proj"  # the cwd of every recorded payload


def payload(tool: str) -> dict:
    with open(PAYLOADS, encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            if p["tool_name"] == tool:
                return p
    raise LookupError(tool)


@pytest.fixture()
def writer(tmp_path):
    paths = make_paths(tmp_path)
    # The recorded payloads read files of the harness's project, outside this store's:
    # allowed as a user would allow them (hook captures follow path.allowOutside).
    proc = start_writer(paths, make_config({"path": {"allowOutside": [HARNESS_PROJECT]}}))
    yield paths, proc
    reap(proc)


def ingest(paths, body: dict) -> dict:
    frame = protocol.encode_call(protocol.Ingest(payload=body), src="hook")[1]
    return protocol.decode(raw_call(paths.endpoint(protocol.SOCK_INGEST), [frame])[-1]).body


def test_a_read_capture_lands_pending_under_the_file_root(writer):
    paths, _ = writer
    p = payload("Read")
    reply = ingest(paths, p)
    assert reply["ok"] and reply["result"]["skipped"] is None and reply["result"]["stored"]
    ids = reply["result"]["stored"]
    path = p["tool_input"]["file_path"]
    got = rows(
        paths,
        f"SELECT n.id, n.status, r.kind, r.source_uri FROM nodes n JOIN nodes r ON r.id = n.parent_id"
        f" WHERE n.id IN ({','.join('?' * len(ids))})",
        ids,
    )
    assert {g[0] for g in got} == set(ids)
    assert {g[1:] for g in got} == {("pending", "file", f"file://{path}")}
    assert rows(paths, "SELECT DISTINCT actor FROM audit") == [("hook",)]


def test_a_repeated_bash_output_is_stored_once_within_the_window(writer):
    paths, _ = writer
    first = ingest(paths, payload("Bash"))["result"]
    again = ingest(paths, dict(payload("Bash"), tool_use_id="toolu_another_call"))["result"]  # a new call
    assert len(first["stored"]) >= 1 and again["stored"] == [] and again["deduped"] == [first["stored"][0]]
    assert rows(paths, "SELECT count(*) FROM nodes WHERE kind='tool_output'") == [(1,)]


def test_a_denied_command_is_skipped_and_audited_without_content(writer):
    paths, _ = writer
    p = dict(
        payload("Bash"),
        tool_input={"command": "env"},
        tool_response={"stdout": "HOME=/root\nAWS_SECRET_ACCESS_KEY=abc", "stderr": "", "interrupted": False},
    )
    reply = ingest(paths, p)["result"]
    assert reply["stored"] == [] and reply["skipped"]
    assert rows(paths, "SELECT count(*) FROM nodes") == [(0,)]
    audit = rows(paths, "SELECT action, reason, detail FROM audit")
    assert [a[0] for a in audit] == ["skipped"] and "HOME=/root" not in orjson.dumps(audit).decode()


def test_a_malformed_payload_is_a_bad_request_counted_and_logged_without_content(writer):
    paths, proc = writer
    reply = ingest(paths, {"tool_name": "Bash", "tool_input": "MALFORMED-MARKER", "session_id": 7})
    assert reply["ok"] is False and reply["error"]["code"] == "bad_request"
    assert rows(paths, "SELECT value FROM counters WHERE name='ingest_malformed'") == [(1,)]
    assert rows(paths, "SELECT count(*) FROM nodes") == [(0,)]
    assert "MALFORMED-MARKER" not in open(paths.log_file("writer"), encoding="utf-8").read()
    assert ingest(paths, payload("Read"))["ok"] and proc.poll() is None  # still serving


def test_a_tool_output_is_keyed_by_its_redacted_content_never_the_raw_output(writer):
    import hashlib

    paths, _ = writer
    p = payload("Bash")
    secret = "AKIAIOSFODNN7EXAMPLE"
    p["tool_response"]["stdout"] = f"aws_access_key_id = {secret}\nregion = eu-west-1\n"
    [nid] = ingest(paths, p)["result"]["stored"]
    [(uri, content, digest)] = rows(paths, "SELECT source_uri, content, content_hash FROM nodes WHERE id = ?", [nid])
    assert secret not in content and "[REDACTED:" in content
    assert uri == f"tool:Bash#{digest}" and digest == hashlib.sha256(content.encode()).hexdigest()


def test_the_same_capture_sent_twice_is_stored_once_and_gets_the_first_reply(writer):
    paths, _ = writer
    p = payload("Read")
    first = ingest(paths, p)["result"]
    again = ingest(paths, p)["result"]
    assert again == dict(first, duplicate=True)
    stored = {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE kind='file_chunk'")}
    assert stored == set(first["stored"])
    # Positive control: another call (new tool_use_id) of the same read is a new capture.
    other = ingest(paths, dict(p, tool_use_id="toolu_a_later_read"))["result"]
    assert "duplicate" not in other and other["stored"] and not set(other["stored"]) & stored
    assert {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE kind='file_chunk'")} == stored | set(other["stored"])


@pytest.mark.parametrize("sock_name", [protocol.SOCK_INGEST, protocol.SOCK_WRITE])
def test_an_oversized_message_is_cut_off_at_the_socket_and_the_writer_serves_on(writer, sock_name):
    import zmq
    from zmq.utils.monitor import recv_monitor_message

    paths, proc = writer
    ctx = zmq.Context.instance()
    flood = ctx.socket(zmq.DEALER)
    flood.setsockopt(zmq.LINGER, 0)
    flood.setsockopt(zmq.RECONNECT_IVL, 60_000)  # one disconnect is the signal; no retry of the flood
    monitor = flood.get_monitor_socket(zmq.EVENT_DISCONNECTED)
    try:
        flood.connect(paths.endpoint(sock_name))
        flood.send(b"{" + b"x" * protocol.MAX_MESSAGE_BYTES)  # one byte over the cap, not JSON
        assert monitor.poll(30_000), "the writer kept the connection of an oversized message"
        assert recv_monitor_message(monitor)["event"] == zmq.EVENT_DISCONNECTED
    finally:
        flood.disable_monitor()
        monitor.close(linger=0)
        flood.close(linger=0)
    # Positive control: a small malformed frame is read, answered and counted; the big one never was.
    reply = protocol.decode(raw_call(paths.endpoint(sock_name), [b"{not json"])[-1]).body
    assert reply["ok"] is False and reply["error"]["code"] == "bad_request"
    # A bad frame is answered at once and counted in the batch after: wait for the count.
    wait_until(
        lambda: rows(paths, "SELECT value FROM counters WHERE name='frames_malformed'") == [(1,)],
        timeout=deadline(10),
        what="the control frame counted",
    )
    assert rows(paths, "SELECT value FROM counters WHERE name='frames_malformed'") == [(1,)]  # and only it
    assert proc.poll() is None
