"""The MCP front as a real process over real stdio, with a real writer."""

from __future__ import annotations

import os
import re
import struct
import subprocess

import pytest
import zmq

from memtree import protocol
from memtree.actors.base import ActorContext
from tests.support import COLD_START_S, PYTHON, close_bound, deadline, make_paths, reap, spawn, wait_until
from tests.support import test_config as make_config
from tests.support.front_harness import Front, ids_in

RETRIEVAL = {"recall"}


@pytest.fixture(scope="module")
def front(tmp_path_factory):
    f = Front(tmp_path_factory.mktemp("front"))
    yield f
    f.close()


def test_four_tools_are_listed_with_one_line_descriptions_text_output_and_honest_hints(front):
    tools = {t.name: t for t in front.tools()}
    # note and forget are folded into recall: served by name, never listed.
    assert set(tools) == {"read", "grep", "bash", "recall"}
    for name, t in tools.items():
        assert re.fullmatch(r"[A-Za-z0-9_]+", name)
        assert 40 < len(t.description.encode()) <= 200 and "\n" not in t.description
        assert t.output_schema is None, f"{name} would send structured content Claude Code shows instead of text"
    hints = {n: (t.annotations.read_only_hint, t.annotations.destructive_hint) for n, t in tools.items()}
    # recall writes notes and erases (op=forget): it must not claim read-only or non-destructive.
    assert hints == {"read": (True, False), "grep": (True, False), "bash": (False, True), "recall": (False, True)}


def test_only_tools_are_declared_and_the_surface_costs_under_300_tokens_per_request(front):
    """Everything memtree adds to each request Claude Code sends: the tool
    definitions as the CLI forwards them, and no instructions or resource
    capability (that one makes the CLI add three tools of its own)."""
    import json

    from memtree import tokens

    caps = front.client.server_capabilities
    assert caps.tools is not None and caps.resources is None and caps.prompts is None
    assert not front.client.instructions
    sent = "".join(
        json.dumps(
            {"name": f"mcp__memtree__{t.name}", "description": t.description, "input_schema": t.input_schema},
            separators=(",", ":"),
        )
        for t in front.tools()
    )
    assert 0 < tokens.count(sent) <= 280, tokens.count(sent)
    # Folded arguments: the description says opts exists, and a wrong key
    # lists every key the tool takes (reachable from one call).
    from memtree.front.opts import OPTS

    for t in front.tools():
        has = bool(OPTS[t.name])
        assert ("opts" in t.input_schema["properties"]) == has == ("opts:" in t.description), t.name
        if has:
            err = front.error(t.name, {"opts": "nosuchkey=1"})
            assert "nosuchkey" in err and all(k in err for k in OPTS[t.name]) and "\n" not in err, err


def test_a_note_written_through_recall_is_found_by_keyword_search_once_live(front):
    text = front.ok("recall", {"note": "The flamingo cache evicts entries after ninety seconds of idleness."})
    first = text.split()
    assert first[1:3] == ["note", "pending"]
    nid = first[0]
    assert ids_in(front.ok("recall", {"query": "flamingo"})) == set()  # pending is not live
    front.set_status([nid], "live")
    assert ids_in(front.ok("recall", {"query": "flamingo cache"})) == {nid}
    assert ids_in(front.ok("recall", {"query": "flamingo", "filters": {"kind": "note"}})) == {nid}
    assert ids_in(front.ok("recall", {"query": "flamingo", "filters": {"kind": "tool_output"}})) == set()
    # The same filters through opts, the form the schema shows.
    assert ids_in(front.ok("recall", {"query": "flamingo", "opts": "kind=note"})) == {nid}
    assert ids_in(front.ok("recall", {"query": "flamingo", "opts": "kind=tool_output,summary"})) == set()


def test_a_note_under_a_parent_hangs_there_and_unknown_parents_are_refused(front):
    parent = front.add("Parent observation about the pelican scheduler and its retry queue.", kind="observation")
    child = front.ok(
        "recall", {"note": "Pelican retries back off exponentially to sixty seconds.", "ids": parent}
    ).split()[0]
    assert front.rows("SELECT parent_id FROM nodes WHERE id = ?", (child,)) == [(parent,)]
    before = front.snapshot()
    err = front.error("recall", {"note": "orphan text that should not be stored", "ids": "01HZZZZZZZZZZZZZZZZZZZZZZZ"})
    assert "ids" in err and "no node" in err and "\n" not in err
    err = front.error("recall", {"note": "a note under two parents is refused", "ids": f"{parent} {child}"})
    assert "one id" in err
    err = front.error("recall", {"note": "a note is not a search", "query": "pelican"})
    assert "query does not apply to op=note" in err
    assert front.snapshot() == before


def test_the_hidden_note_and_forget_tools_still_answer_by_name(front):
    """Old scripts and SDK clients call note and forget by name; tools/list does not show them."""
    parent = front.add("Parent observation about the osprey cache and its eviction.", kind="observation")
    child = front.ok("note", {"text": "Osprey evicts the oldest entry first.", "parent_id": parent}).split()[0]
    via_opts = front.ok("note", {"text": "Osprey keeps at most ten entries.", "opts": f"parent_id={parent}"}).split()[0]
    assert dict(front.rows("SELECT id, parent_id FROM nodes WHERE id IN (?, ?)", (child, via_opts))) == {
        child: parent,
        via_opts: parent,
    }
    front.set_status([child], "live")
    assert "forgotten" in front.ok("forget", {"node_id": child, "reason": "user asked"})
    assert dict(front.rows("SELECT id, status FROM nodes WHERE id IN (?, ?)", (child, via_opts))) == {
        child: "forgotten",
        via_opts: "pending",
    }
    err = front.error("nosuchtool", {})
    assert "unknown tool 'nosuchtool'" in err and "read, grep, bash, recall" in err


def test_forget_through_recall_hides_the_node_and_tombstones_its_content(front):
    keep = front.add("The heron index rebuild runs nightly at two in the morning, keep this one.")
    gone = front.add("The heron password rotation secret procedure, forget this one please.")
    assert ids_in(front.ok("recall", {"query": "heron"})) == {keep, gone}
    before = front.snapshot()
    err = front.error("recall", {"ids": gone, "opts": "op=forget"})  # no reason: refused, nothing changes
    assert "op=forget needs note=" in err and "\n" not in err
    assert front.snapshot() == before
    out = front.ok("recall", {"ids": gone, "note": "user asked", "opts": "op=forget"})
    assert front.rows("SELECT reason FROM audit WHERE action = 'forget' AND node_id = ?", (gone,)) == [("user asked",)]
    assert gone in out and "forgotten" in out
    assert ids_in(front.ok("recall", {"query": "heron"})) == {keep}
    assert front.rows("SELECT status, content FROM nodes WHERE id = ?", (gone,)) == [("forgotten", "")]
    # The content hash, and since forget erases every copy, one per distinctive line too.
    [(n,)] = front.rows("SELECT count(*) FROM tombstones WHERE node_id = ?", (gone,))
    assert n >= 1
    assert front.rows("SELECT count(*) FROM tombstones WHERE node_id = ?", (keep,)) == [(0,)]
    again = front.error("recall", {"ids": gone, "note": "twice", "opts": "op=forget"})
    assert again == f"recall: ids: node {gone} is forgotten already"


def test_get_shows_a_hidden_node_only_when_its_status_is_named(front):
    nid = front.add("The ibis deploy flag was retired in the spring release.", status="stale")
    err = front.error("recall", {"ids": [nid]})
    assert "stale" in err and "status" in err
    assert "ibis deploy flag" in front.ok("recall", {"ids": [nid], "filters": {"status": ["stale"]}})
    assert 'opts="status=stale"' in err
    assert "ibis deploy flag" in front.ok("recall", {"ids": nid, "opts": "status=stale"})  # the call the error names


def test_a_tool_call_holds_the_fronts_foreground_mark_up_until_it_is_answered(front):
    """The embed walker's drain steps aside while a front answers a tool call
    (memtree/runtime/foreground.py): a bash call of a second is marked while
    it runs, and down once it is answered."""
    import threading

    from memtree.runtime import foreground

    store = front.paths.store_dir
    watch = foreground.Watch(store, linger_s=0)
    try:
        front.ok("recall", {"op": "recent"})  # the front's services (and its mark) exist from its first call
        assert not watch.marked()  # control: no call running
        answered = []
        call = threading.Thread(target=lambda: answered.append(front.ok("bash", {"command": "sleep 1; echo slept"})))
        call.start()
        try:
            wait_until(watch.marked, timeout=deadline(10), what="the front's mark up during the call")
        finally:
            call.join(deadline(30))
        assert answered and "slept" in answered[0]
        assert not watch.marked()
        with open(foreground.path_for(store), "rb") as f:
            words = struct.unpack(f"<{foreground.SLOTS}q", f.read(foreground.FILE_BYTES))
        assert any(w < 0 for w in words[1:])  # a front's word, put down at the call's end
    finally:
        watch.close()


def test_with_the_writer_down_writes_say_read_only_and_reads_keep_working(tmp_path):
    f = Front(tmp_path)
    try:
        nid = f.add("The kestrel queue drains every five minutes in production.")
        reap(f.writer)
        err = f.error("recall", {"note": "written while the writer is down, must not be lost silently"})
        assert "read-only" in err and "writer is not running" in err and "\n" not in err
        assert ids_in(f.ok("recall", {"query": "kestrel"})) == {nid}
        assert "kestrel" in f.ok("recall", {"ids": [nid]})
    finally:
        f.close()


def test_front_heartbeats_to_the_supervisor_and_exits_0_when_stdin_closes(tmp_path):
    paths = make_paths(tmp_path)
    hb = paths.endpoint("sup-test.hb")
    pull = zmq.Context.instance().socket(zmq.PULL)
    pull.setsockopt(zmq.LINGER, 0)
    pull.bind(hb)
    env = ActorContext("mcp", paths, make_config(), hb).child_env()
    env["PYTHONPATH"] = os.getcwd()
    with open(paths.log_file("mcp"), "ab") as log:
        proc = spawn(
            [PYTHON, "-m", "memtree.actors.mcp_front"],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )
    try:
        # Allows for a cold interpreter importing the mcp SDK.
        assert pull.poll(int(COLD_START_S * 1000)), "no heartbeat from the front"
        beat = protocol.decode(pull.recv()).body
        assert (beat.name, beat.pid, beat.state) == ("mcp", proc.pid, "running")
        proc.stdin.close()
        wait_until(lambda: proc.poll() is not None, timeout=COLD_START_S, what="the front to exit")
        assert proc.returncode == 0
        assert proc.stdout.read() == b""  # nothing but MCP ever goes to stdout
    finally:
        reap(proc)
        close_bound(pull, hb)
