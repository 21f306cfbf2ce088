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
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUse",
            "updatedToolOutput": {
                "stdout": 'quotes " and a fake key ,"hook_output": {} inside',
                "stderr": "",
                "interrupted": False,
            },
        }
    }
    frame = protocol.encode_ingest_reply("r1", {"stored": ["01A"], "skipped": None}, out, src="writer")
    reply = protocol.parse_ingest_reply(frame, "r1")
    assert json.loads(reply.hook_output) == out and reply.ok and reply.skipped is None
    # negative cases, each beside the positive one above
    plain = protocol.parse_ingest_reply(protocol.encode_ingest_reply("r1", {"stored": ["01A"]}), "r1")
    assert plain.hook_output is None and plain.ok
    other = protocol.parse_ingest_reply(frame, "another-request")
    assert other.error == protocol.ErrorCode.BAD_REQUEST and other.hook_output is None
    refused = protocol.parse_ingest_reply(protocol.encode_error("r1", "refused", "no"), "r1")
    assert (refused.error, refused.detail, refused.hook_output) == ("refused", "no", None)


def test_the_ingest_reply_layout_is_fixed_whatever_order_the_result_comes_in():
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": {"stdout": "x"}}}
    result = {"deduped": ["01B"], "hook_output": {"stale": 1}, "refused": 2, "stored": [], "skipped": "forgotten"}
    frame = protocol.encode_ingest_reply("r1", result, out, src="writer")
    got = json.loads(frame)["body"]["result"]
    assert got == {"skipped": "forgotten", "stored": [], "deduped": ["01B"], "refused": 2, "hook_output": out}
    assert list(got) == ["skipped", "stored", "deduped", "refused", "hook_output"]
    fast = protocol.parse_ingest_reply(frame, "r1")
    assert (fast.skipped, json.loads(fast.hook_output), fast.error) == ("forgotten", out, None)


def test_a_skip_is_read_by_kind_and_an_odd_reply_falls_back_to_a_real_decode():
    for kind in ("denied", "outside", "unchanged", "unsupported", "off", "forgotten"):
        reply = protocol.parse_ingest_reply(protocol.encode_ingest_reply("r", {"skipped": kind}), "r")
        assert (reply.ok, reply.skipped, reply.hook_output) == (True, kind, None)
    stored = protocol.parse_ingest_reply(protocol.encode_ingest_reply("r", {"stored": ["01A"], "skipped": None}), "r")
    assert (stored.ok, stored.skipped) == (True, None)  # control
    # Not the writer's layout (a plain encode_ok): decoded, same answer.
    odd = protocol.parse_ingest_reply(protocol.encode_ok("r", {"stored": ["01A", "01B"], "skipped": "denied"}), "r")
    assert (odd.ok, odd.skipped, odd.stored) == (True, "denied", ["01A", "01B"])
