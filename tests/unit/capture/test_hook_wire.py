"""The hook's fast path: raw Ingest frames, the cheap ok check, cwd without a JSON parser,
and no expensive import while the writer acknowledges."""

from __future__ import annotations

import json
import subprocess

import pytest

from memtree import protocol
from memtree.capture import settings as capture_settings
from memtree.config.defaults import defaults
from memtree.hooks import post_tool_use as hook
from memtree.ops.install import hook_argv
from tests.support import COLD_START_S, deadline, wait_until
from tests.support import test_config as make_config
from tests.support.hook_support import bash_payload, contents, hook_env


def test_a_raw_ingest_frame_decodes_like_an_encoded_ingest_call():
    payload = {"cwd": "/p", "tool_name": "Bash", "tool_input": {"command": 'ls ü "q"'}, "n": [1, 2.5, None]}
    rid, frame = protocol.encode_ingest_raw(json.dumps(payload).encode(), src="hook", received_at=7)
    env = protocol.decode(frame)
    assert (env.kind, env.type, env.src, env.id) == ("call", "Ingest", "hook", rid)
    assert env.body == protocol.Ingest(payload=payload, received_at=7)
    assert protocol.decode(protocol.encode_call(protocol.Ingest(payload=payload, received_at=7))[1]).body == env.body


@pytest.mark.parametrize("bad", [b"not json", b"", b"[1]", b'{"a": 1} trailing'])
def test_a_raw_frame_around_bad_json_is_a_malformed_frame(bad):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(protocol.encode_ingest_raw(bad)[1])


def test_the_cheap_ok_check_only_says_true_for_an_ok_reply_to_this_request():
    assert protocol.reply_is_ok(protocol.encode_ok("r1", {"ids": []}, src="writer"), "r1") is True
    assert protocol.reply_is_ok(protocol.encode_error("r1", "bad_request", "x", src="writer"), "r1") is None
    assert protocol.reply_is_ok(protocol.encode_ok("r2", {"ids": []}, src="writer"), "r1") is None
    assert protocol.reply_is_ok(b"garbage", "r1") is None


@pytest.mark.parametrize(
    "data, cwd",
    [
        (b'{"session_id":"s","cwd":"/a/b","tool_name":"Read"}', "/a/b"),
        (b'{"session_id": "s", "cwd" : "/a b/c", "tool_name": "Read"}', "/a b/c"),
        (b'{"cwd":"/a/\\u00fc"}', None),  # an escape: the caller parses properly
        (b'{"session_id":"s"}', None),
        (b"not json", None),
    ],
)
def test_cwd_is_found_without_a_json_parser_or_left_to_the_parser(data, cwd):
    assert hook._top_level_str(data, b"cwd") == cwd


def test_session_id_is_found_the_same_way():
    assert hook._top_level_str(b'{"session_id":"abc-1","cwd":"/a"}', b"session_id") == "abc-1"
    assert hook._top_level_str(b'{"cwd":"/a"}', b"session_id") is None


def test_config_timeout_is_read_without_a_json_parser(monkeypatch):
    monkeypatch.delenv("MEMTREE_HOOK_TIMEOUT_MS", raising=False)
    assert capture_settings.hook_timeout_ms([]) == defaults()["capture"]["hookTimeoutMs"]
    assert capture_settings.hook_timeout_ms(['{"capture": {"hookTimeoutMs": 250}}']) == 250
    assert (
        capture_settings.hook_timeout_ms(['{"capture": {"hookTimeoutMs": 250}}', '{"capture":{"hookTimeoutMs":40}}'])
        == 40
    )
    monkeypatch.setenv("MEMTREE_HOOK_TIMEOUT_MS", "900")
    assert capture_settings.hook_timeout_ms(['{"capture": {"hookTimeoutMs": 250}}']) == 900


def test_the_hook_gate_refuses_what_the_loader_refuses_and_plans_with_its_defaults(tmp_path):
    class Paths:
        store_dir = str(tmp_path / "store")

    bad = ['{"capture": {"bash": "no"}}']  # a wrong type: `memtree serve` refuses it too
    assert capture_settings.usable(Paths, bad, "sig-bad", lambda msg: None) is False
    assert "capture.bash must be" in (tmp_path / "store" / capture_settings.CONFIG_ERROR).read_text()
    good = ['{"capture": {"bash": false}}', '{"path": {"deny": ["*.pem"]}}']
    assert capture_settings.usable(Paths, good, "sig-good", lambda msg: None) is True  # control
    merged = capture_settings.sections(good)
    assert merged["capture"]["bash"] is False and merged["path"]["deny"] == ["*.pem"]
    assert merged["capture"]["hookTimeoutMs"] == defaults()["capture"]["hookTimeoutMs"]  # defaults filled in
    assert (
        capture_settings.get(merged, "capture", "bash")
        is capture_settings.get(make_config({"capture": {"bash": False}}), "capture", "bash")
        is False
    )


# (orjson is absent: importtime lists the failed attempt under -S, so it is not checked here.)
EXPENSIVE = {
    "json",
    "re",
    "socket",
    "hashlib",
    "dataclasses",
    "enum",
    "typing",
    "subprocess",
    "zmq",
    "tempfile",
    "struct",
    "__future__",
}  # the last two: ~0.5 ms and ~0.3 ms, which int.to_bytes and 3.11 make unneeded


def test_an_acknowledged_capture_imports_nothing_expensive(system):
    argv = hook_argv()
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        input=json.dumps(bash_payload(system, 1)).encode(),
        cwd=system.project,
        env=hook_env(system, MEMTREE_HOOK_TIMEOUT_MS="10000"),
        capture_output=True,
        timeout=deadline(60),
    )
    assert done.returncode == 0 and done.stdout == b""
    imported = {line.split("|")[2].strip() for line in done.stderr.decode().splitlines() if line.count("|") == 2}
    assert "memtree.capture.zmtp" in imported and "memtree.protocol" in imported  # positive control
    assert sorted(imported & EXPENSIVE) == [], done.stderr.decode()[-6000:]
    wait_until(lambda: len(contents(system, "$ echo capture-1%")) == 1, timeout=COLD_START_S, what="the capture")


def test_installed_in_site_packages_the_hook_path_still_imports_no_orjson():
    """Installed, the hook puts site-packages on sys.path (memtree's package root),
    where orjson is: its own imports (uuid, platform, re, dataclasses) cost
    ~60 ms under -I -S, more than the whole hook. The hook path must not load it."""
    import os
    import sys

    import orjson

    import memtree

    site = os.path.dirname(os.path.dirname(orjson.__file__))
    root = os.path.dirname(os.path.dirname(os.path.abspath(memtree.__file__)))
    setup = f"import sys; sys.path[:0] = [{root!r}, {site!r}]; "

    def imports(code: str) -> set[str]:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-X", "importtime", "-c", setup + code],
            capture_output=True,
            timeout=deadline(60),
        )
        assert done.returncode == 0, done.stderr.decode()[-3000:]
        return {line.split("|")[2].strip() for line in done.stderr.decode().splitlines() if line.count("|") == 2}

    assert "orjson" in imports("import orjson")  # positive control: importable from that sys.path
    ok_reply = (
        b'{"v":1,"id":"x","kind":"reply","type":"Reply","src":"writer","body":{"ok":true,"result":{"skipped":null}}}'
    )
    hot = imports(
        "from memtree.hooks import post_tool_use; from memtree import paths, protocol; "
        "from memtree.capture import settings, zmtp, heartbeat; protocol.encode_ingest_raw(b'{}'); "
        f"assert protocol.parse_ingest_reply({ok_reply!r}, 'x').ok"
    )
    assert "memtree.protocol" in hot and "memtree.capture.zmtp" in hot  # positive control
    assert sorted(hot & (EXPENSIVE | {"orjson", "uuid", "platform"})) == []


def test_the_ack_wait_grows_with_the_payload_up_to_a_cap():  # an 83 KB Read missed a flat 100 ms
    small, read_83kb, huge = (hook.ack_wait_ms(100, n) for n in (1024, 83 * 1024, 50 * 1024 * 1024))
    assert small == pytest.approx(100 + hook.ACK_MS_PER_KB)
    assert read_83kb == pytest.approx(100 + 83 * hook.ACK_MS_PER_KB) and read_83kb > 100 + hook.ACK_MS_PER_KB
    assert huge == 100 + hook.ACK_MAX_EXTRA_MS
