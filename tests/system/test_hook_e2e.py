"""The real hook (as `memtree install` registers it) into a real running system."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import psutil

from memtree.capture import spool
from memtree.capture.ingest import plan
from tests.support import COLD_START_S, PYTHON, deadline, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import rows
from tests.support.hook_support import bash_payload, contents, counter, real_payloads, run_hook, start_hook


def _stored_uri(n: dict) -> str:
    """A planned tool output's source_uri gets the hash of its stored content from the writer."""
    import hashlib

    if n["kind"] == "tool_output" and "#" not in n["source_uri"]:
        return f"{n['source_uri']}#{hashlib.sha256(n['content'].encode()).hexdigest()}"
    return n["source_uri"]


def _node(system, source_uri: str, kind: str, parent_id: str | None = None, tool: str | None = None, taken=()):
    sql = (
        "SELECT n.id, n.content, n.status, p.kind, p.source_uri, n.parent_id FROM nodes n"
        " LEFT JOIN nodes p ON p.id = n.parent_id WHERE n.source_uri = ? AND n.kind = ?"
    )
    args = [source_uri, kind]
    if parent_id:
        sql += " AND n.parent_id = ?"
        args.append(parent_id)
    if tool:  # a Grep's widened chunk and a Read's chunk of one file version share a URI
        sql += " AND json_extract(n.metadata, '$.tool') = ?"
        args.append(tool)
    # Several searches widen to one chunk: stored in capture order, each planned node takes the next.
    got = [r for r in rows(system.paths, sql + " ORDER BY n.id", args) if r[0] not in taken]
    assert got, (source_uri, kind, tool)
    return got[0]


def _expected(plans, min_size: int) -> dict[int, str]:
    """Each planned node's status by the filter rule (docs/ARCHITECTURE.md), in
    capture order: a child of an output follows it; any other node under
    ``min_size`` bytes is dropped, and so is one whose content an older node
    kept (a Grep's widened chunk that a Read of the same file already stored)."""
    out, kept = {}, set()
    for pl in plans:
        refs = {}
        for n in pl.nodes:
            parent = n["parent"]
            if "ref" in parent:
                st = refs[parent["ref"]]
            elif len(n["content"].encode()) < min_size or n["content"] in kept:
                st = "dropped"
            else:
                st = "live"
                kept.add(n["content"])
            refs[n["ref"]] = out[id(n)] = st
    return out


def test_every_real_payload_becomes_the_right_nodes_live_after_the_filter(system):
    payloads = real_payloads(system.project)
    for p in payloads:
        run_hook(system, p, MEMTREE_HOOK_TIMEOUT_MS="10000")
    cfg = make_config()
    plans = [pl for pl in (plan(p, cfg, system.paths.project_root) for p in payloads) if pl.nodes]
    expected = _expected(plans, cfg.capture.filterMinSize)
    want = {}
    for st in expected.values():
        want[st] = want.get(st, 0) + 1
    assert want["live"] >= 12 and len(plans) >= 10  # positive control: most recorded captures are kept

    def statuses():
        return dict(
            rows(
                system.paths,
                "SELECT status, count(*) FROM nodes WHERE kind IN ('file_chunk', 'tool_output') GROUP BY status",
            )
        )

    # The filter walker runs on the writer's event; allows for a loaded box.
    wait_until(lambda: statuses() == want, timeout=COLD_START_S, what=f"captures filtered to {want}")

    assert any(n["metadata"].get("symbol") for pl in plans for n in pl.nodes if n["metadata"].get("tool") == "Grep")
    taken = set()
    for pl in plans:
        ids = {}
        for n in pl.nodes:
            parent = n["parent"]
            tool = n["metadata"].get("tool") if n["kind"] == "file_chunk" else None
            nid, content, got_status, pkind, puri, parent_id = _node(
                system, _stored_uri(n), n["kind"], ids.get(parent.get("ref")), tool, taken
            )
            taken.add(nid)
            ids[n["ref"]] = nid
            assert (content, got_status) == (n["content"], expected[id(n)])
            if "file" in parent:
                assert (pkind, puri) == ("file", f"file://{parent['file']}")
            elif "session" in parent:
                assert (pkind, puri) == ("session", f"session:{parent['session']}")
            else:
                assert pkind == "tool_output" and parent_id == ids[parent["ref"]]
    # Spot checks against the recorded payloads themselves.
    proj = system.project
    # (numLines counts the empty line after README's final newline; a chunk names the lines it holds)
    assert _node(system, f"file://{proj}/README.md#L1-3", "file_chunk")[1].startswith("# demo project\n")
    assert _node(system, f"file://{proj}/big.txt#L100-104", "file_chunk")[1].startswith("line 00100 ")
    # The token-capped whole-file Read of big.txt: the read tool's 200-line windows, every line read kept.
    for start in range(1, 1604, 200):
        _node(system, f"file://{proj}/big.txt#L{start}-{min(start + 199, 1603)}", "file_chunk")
    big = next(
        p["tool_response"]["file"]["content"]
        for p in payloads
        if p["tool_name"] == "Read"
        and p["tool_input"]["file_path"].endswith("big.txt")
        and "offset" not in p["tool_input"]
    )
    stored = rows(
        system.paths,
        "SELECT content FROM nodes WHERE source_uri LIKE ? AND json_extract(metadata, "
        "'$.read') = json('[1,1603]') ORDER BY json_extract(metadata, '$.start')",
        (f"file://{proj}/big.txt#%",),
    )
    assert len(stored) == 9 and "".join(c for (c,) in stored) == big
    failed = contents(system, "$ echo out; echo err >&2; exit 3%")
    assert list(failed) == ["$ echo out; echo err >&2; exit 3\nexit: 3\n--- output ---\nout\nerr"]
    # The -C 1 grep's two match lines (1 and 6) widen to the one chunk of app.py holding both functions.
    assert rows(
        system.paths,
        "SELECT source_uri, json_extract(metadata, '$.symbols') FROM nodes WHERE kind = 'file_chunk'"
        " AND json_extract(metadata, '$.tool') = 'Grep' AND json_extract(metadata, '$.pattern') = 'greet'",
    ) == [(f"file://{proj}/src/app.py#L1-6", '["greet","main"]')]
    assert rows(system.paths, "SELECT count(*) FROM nodes WHERE content LIKE '%echo: ping from fake model%'") == [(0,)]


def test_with_the_writer_stopped_fifty_hooks_spool_and_land_once_after_start(system):
    done = system.ctl("stop", "writer")
    assert done.returncode == 0, done.stderr
    hooks_from = int(time.time() * 1000)
    for i in range(50):
        run_hook(system, bash_payload(system, i))
    hooks_until = int(time.time() * 1000)
    assert spool.pending_count(system.paths.spool) == 50
    with open(os.path.join(system.paths.log_dir, "hook.log")) as f:
        log = f.read()
    assert log.count("spooled") == 50 and "capture number" not in log  # no content in the log
    done = system.ctl("start", "writer")
    assert done.returncode == 0, done.stderr
    want = {
        f"$ echo capture-{i}\nexit: unknown\n--- stdout ---\ncapture number {i} -- padding so the filter keeps it"
        for i in range(50)
    }
    wait_until(
        lambda: set(contents(system, "$ echo capture-%")) == want,
        timeout=COLD_START_S,
        what="50 spooled captures in the store",
    )
    assert set(contents(system, "$ echo capture-%").values()) == {1}
    assert spool.pending_count(system.paths.spool) == 0
    # Dated when the hook ran, not when the restarted writer drained them.
    dates = [r[0] for r in rows(system.paths, "SELECT created_at FROM nodes WHERE content LIKE '$ echo capture-%'")]
    assert len(dates) == 50 and all(hooks_from <= d <= hooks_until for d in dates), (hooks_from, hooks_until, dates)


def test_a_writer_killed_mid_drain_loses_and_repeats_nothing(system):
    assert system.ctl("stop", "writer").returncode == 0
    for i in range(20):
        run_hook(system, bash_payload(system, i))
    # Plus many entries written the way the hook writes them, so the drain takes several transactions.
    for i in range(20, 1200):
        spool.append(system.paths.spool, bash_payload(system, i))
    # `ctl start` returns once the writer is READY, and it drains before READY:
    # start it in the background and watch the drain from here.
    ctl = subprocess.Popen(
        [PYTHON, "-m", "memtree.cli", "ctl", "start", "writer"],
        cwd=system.project,
        env={**os.environ, **system.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        count = lambda: len(contents(system, "$ echo capture-%"))  # noqa: E731
        seen = wait_until(count, timeout=COLD_START_S, interval=0.005, what="the drain to begin")
        writer = next(
            p
            for p in psutil.Process(system.procs[0].pid).children(recursive=True)
            if "memtree.actors.writer" in " ".join(p.cmdline())
        )
        writer.kill()
    finally:
        ctl.wait(deadline(60))
    assert seen < 1200, "the drain finished before the kill; nothing was tested"
    wait_until(lambda: count() == 1200, timeout=3 * COLD_START_S, what="every spooled capture after the restart")
    assert set(contents(system, "$ echo capture-%").values()) == {1}


def test_twenty_hooks_started_at_once_all_land(system):
    procs = [start_hook(system) for _ in range(20)]
    try:
        for i, proc in enumerate(procs):
            proc.stdin.write(json.dumps(bash_payload(system, i, extra="parallel")).encode())
            proc.stdin.close()
        for proc in procs:
            assert proc.wait(deadline(120)) == 0 and proc.stdout.read() == b""
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(deadline(5))
            for f in (proc.stdout, proc.stderr):
                f.close()
    # Acked ones are in already; any that timed out spooled and land at the next drain.
    want = {f"capture number {i} parallel" for i in range(20)}
    got = lambda: {
        c.split("\n")[3][: -len(" -- padding so the filter keeps it")]  # noqa: E731
        for c in contents(system, "$ echo capture-%")
    }
    wait_until(lambda: got() == want, timeout=COLD_START_S, what="20 parallel captures")
    assert set(contents(system, "$ echo capture-%").values()) == {1}


def test_malformed_input_never_crashes_the_writer_and_is_counted(system):
    pid = system.pid("writer")
    slow = {"MEMTREE_HOOK_TIMEOUT_MS": "20000"}  # the writer's answer decides, not the clock
    frames_before, ingest_before = counter(system, "frames_malformed"), counter(system, "ingest_malformed")
    run_hook(system, b"this is not json", **slow)
    run_hook(system, b"", **slow)
    run_hook(system, b'{"cwd": "%s", "tool_name": "Bash"} trailing' % system.project.encode(), **slow)
    run_hook(system, b"[1, 2, 3]", **slow)
    run_hook(
        system, {"cwd": system.project, "tool_name": "Bash", "session_id": 7, "tool_input": "MALFORMED-MARKER"}, **slow
    )
    run_hook(
        system,
        {
            "cwd": system.project,
            "tool_name": "Read",
            "session_id": "s",
            "tool_input": {},
            "tool_response": {"type": "text"},
        },
        **slow,
    )
    wait_until(
        lambda: (
            counter(system, "frames_malformed") - frames_before >= 4
            and counter(system, "ingest_malformed") - ingest_before >= 2
        ),
        timeout=COLD_START_S,
        what="malformed inputs counted",
    )
    # Non-UTF-8 bytes: the readable rest is stored, the bad byte becomes U+FFFD.
    raw = json.dumps(bash_payload(system, 900, extra="BADBYTE")).encode().replace(b"BADBYTE", b"bad\xff\xfebyte")
    run_hook(system, raw, **slow)
    # A 10 MB field: stored cut to capture.maxBytes with its original size kept.
    big = bash_payload(system, 901)
    big["tool_response"]["stdout"] = "0123456789abcdef\n" * (10 * 1024 * 1024 // 17)
    run_hook(system, big, **slow)
    assert system.pid("writer") == pid  # the same writer process served all of it
    wait_until(
        lambda: len(contents(system, "$ echo capture-90%")) == 2,
        timeout=COLD_START_S,
        what="the non-UTF-8 and 10 MB captures",
    )
    [bad] = [c for c in contents(system, "$ echo capture-900%")]
    assert "bad\ufffd\ufffdbyte" in bad
    [(truncated, original)] = rows(
        system.paths, "SELECT truncated, original_bytes FROM nodes WHERE content LIKE '$ echo capture-901%'"
    )
    assert truncated == 1 and original > 10_000_000
    assert "MALFORMED-MARKER" not in open(system.paths.log_file("writer"), errors="replace").read()
    assert "Traceback" not in open(system.paths.log_file("writer"), errors="replace").read()


def test_a_hook_from_a_subdirectory_lands_in_the_store_serve_uses(system):
    """Outside git the store is keyed by the directory: Claude Code's
    CLAUDE_PROJECT_DIR keeps the hook on the server's store when the agent cd's."""
    sub = os.path.join(system.project, "sub", "deeper")
    os.makedirs(sub)
    p = bash_payload(system, 7, extra="captured after cd into a subdirectory")
    p["cwd"] = sub
    run_hook(system, p, CLAUDE_PROJECT_DIR=system.project, MEMTREE_HOOK_TIMEOUT_MS="10000")
    assert list(contents(system, "%after cd into a subdirectory%").values()) == [1]
    # control: without the variable the payload's cwd is another (non-git) project, another store
    q = bash_payload(system, 8, extra="captured without CLAUDE_PROJECT_DIR")
    q["cwd"] = sub
    run_hook(system, q, MEMTREE_HOOK_TIMEOUT_MS="300")
    assert contents(system, "%without CLAUDE_PROJECT_DIR%") == {}


def _read_payload(system, name: str, tool_use_id: str, marker: str) -> dict:
    path = os.path.join(system.project, name)
    content = f"# {marker}\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n" + "x = 1\n" * 40
    with open(path, "w") as f:
        f.write(content)
    return {
        "session_id": "sess-once",
        "transcript_path": "/dev/null",
        "cwd": system.project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": path},
        "tool_use_id": tool_use_id,
        "tool_response": {
            "type": "text",
            "file": {"filePath": path, "content": content, "numLines": 42, "startLine": 1, "totalLines": 42},
        },
    }


def _chunks_of(system, name: str) -> set[str]:
    return {
        r[0]
        for r in rows(
            system.paths,
            "SELECT id FROM nodes WHERE kind='file_chunk' AND source_uri LIKE ?",
            (f"file://{os.path.join(system.project, name)}#%",),
        )
    }


def test_an_ack_delayed_past_the_hooks_wait_still_stores_the_capture_once(system_factory):
    import apsw

    system = system_factory
    system.write_config({"writer": {"spoolDrainMs": 200}})
    system.serve()
    system.wait_running()
    delayed = _read_payload(system, "delayed.py", "toolu_delayed", "delayed-ack-marker")
    # A long commit ahead of it: the writer gets the capture but cannot commit (and ack) in time.
    blocker = apsw.Connection(system.paths.db)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        run_hook(system, delayed)
        assert spool.pending_count(system.paths.spool) == 1  # the hook gave up waiting and spooled its copy
        with open(system.paths.spool, encoding="ascii") as f:
            (spooled_id,) = [json.loads(line)["id"] for line in f]
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    # Positive control: another capture spooled (redacted) now is applied from the spool.
    control = _read_payload(system, "control.py", "toolu_control", "spool-control-marker")
    spool.append(system.paths.spool, control)
    # Drained: the spool files are gone (and with them the applied ids that guarded them).
    drained = lambda: (
        spool.pending_count(system.paths.spool) == 0  # noqa: E731
        and len(_chunks_of(system, "control.py")) == 1
        and not [n for n in os.listdir(system.paths.store_dir) if n.startswith("spool.jsonl")]
    )
    wait_until(drained, timeout=COLD_START_S, what=f"both spooled entries drained ({spooled_id})")
    once = _chunks_of(system, "delayed.py")
    assert len(once) == 1, once  # the direct commit; its spooled copy was recognised, not stored again
    assert len(_chunks_of(system, "control.py")) == 1
    inserts = rows(system.paths, "SELECT actor FROM audit WHERE action='insert' AND node_id IN (?)", tuple(once))
    assert inserts == [("hook",)]  # the late ack was for a real commit, and the spooled copy added nothing
    assert rows(system.paths, "SELECT count(*) FROM capture_keys WHERE key LIKE 'toolu_delayed:%'") == [(1,)]
