"""The rewrite on the wire: the hook's Ingest asks for it, the ack carries it last, the hook copies it out unparsed."""

from __future__ import annotations

import json

from memtree import protocol


def test_a_raw_ingest_with_rewrite_decodes_like_the_record():
    payload = {"session_id": "s", "cwd": "/p", "tool_name": "Read", "tool_input": {"file_path": "/p/a.py"}}
    rid, frame = protocol.encode_ingest_raw(json.dumps(payload).encode(), received_at=9, rewrite=True)
    env = protocol.decode(frame)
    assert env.id == rid and env.body == protocol.Ingest(payload=payload, received_at=9, rewrite=True)
    _rid, plain = protocol.encode_ingest_raw(json.dumps(payload).encode(), received_at=9)
    assert protocol.decode(plain).body.rewrite is False  # control: the default asks for nothing


def test_the_hook_output_is_copied_out_of_an_ok_reply_byte_for_byte():
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": {
        "stdout": 'quotes " and a fake key ,"hook_output": {} inside', "stderr": "", "interrupted": False}}}
    frame = protocol.encode_ok("r1", {"ids": ["01A"], "skipped": None, "hook_output": out}, src="writer")
    raw = protocol.reply_hook_output(frame, "r1")
    assert json.loads(raw) == out
    # negative cases, each beside the positive one above
    assert protocol.reply_hook_output(protocol.encode_ok("r1", {"ids": ["01A"], "skipped": None}), "r1") is None
    assert protocol.reply_hook_output(frame, "another-request") is None
    assert protocol.reply_hook_output(protocol.encode_error("r1", "refused", "no"), "r1") is None
