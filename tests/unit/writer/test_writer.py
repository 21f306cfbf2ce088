"""The writer as a real process on real sockets and a real SQLite file."""

from __future__ import annotations

import os
import signal
import stat
import time

import orjson
import pytest
import zmq

from memtree import protocol
from memtree.actors import writer as writer_mod
from memtree.errors import NotFound, Refused
from memtree.paths import socket_path
from memtree.runtime.client import Caller
from tests.support import deadline, deadline_ms, make_paths, reap, sigstop, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import node_events, raw_call, rows, start_writer


@pytest.fixture()
def writer(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config())
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="mcp", timeout_ms=deadline_ms(10000))
    yield paths, proc, caller
    caller.close()
    reap(proc)


def error_of(frames: list[bytes]) -> dict:
    env = protocol.decode(frames[-1])
    assert env.body["ok"] is False, env.body
    return env.body["error"]


def test_concurrent_calls_are_all_acked_after_commit_and_all_stored(writer):
    paths, proc, _ = writer
    ctx = zmq.Context.instance()
    socks = []
    for _ in range(16):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(paths.endpoint(protocol.SOCK_WRITE))
        socks.append(s)
    sent = {}
    try:
        for i in range(25):  # 400 calls in flight at once, queued behind each other
            for j, s in enumerate(socks):
                rid, frame = protocol.encode_call(protocol.AddNode(kind="note", content=f"note {j}-{i} body"), src="t")
                s.send(frame)
                sent[rid] = f"note {j}-{i} body"
        acked = {}
        poller = zmq.Poller()
        for s in socks:
            poller.register(s, zmq.POLLIN)

        def collect():
            for s, _ in poller.poll(200):
                while True:
                    try:
                        env = protocol.decode(s.recv(zmq.NOBLOCK))
                    except zmq.Again:
                        break
                    node_id = protocol.reply_result(env)["id"]
                    if len(acked) % 50 == 0:  # acked means committed: a reader already sees it
                        assert rows(paths, "SELECT content FROM nodes WHERE id=?", (node_id,)) == [(sent[env.id],)]
                    acked[env.id] = node_id
            return len(acked) == len(sent)

        wait_until(collect, timeout=deadline(60), what="all 400 replies")
    finally:
        for s in socks:
            s.close(linger=0)
    assert set(acked) == set(sent)
    stored = dict(rows(paths, "SELECT id, content FROM nodes WHERE kind='note'"))
    assert stored == {acked[rid]: content for rid, content in sent.items()}
    assert rows(paths, "SELECT count(*) FROM audit WHERE action='insert'") == [(400,)]
    assert proc.poll() is None


def test_bad_frames_get_error_replies_and_the_writer_keeps_serving(writer):
    paths, proc, caller = writer
    ep = paths.endpoint(protocol.SOCK_WRITE)
    assert error_of(raw_call(ep, [b"{not json"]))["code"] == "bad_request"
    unknown = orjson.dumps({"v": 1, "id": "u1", "kind": "call", "type": "Frobnicate", "src": "t", "body": {}})
    err = error_of(raw_call(ep, [unknown]))
    assert err["code"] == "unknown_type" and "Frobnicate" in err["message"]
    bad_field = orjson.dumps(
        {"v": 1, "id": "b1", "kind": "call", "type": "AddNode", "src": "t", "body": {"kind": "note", "content": 42}}
    )
    err = error_of(raw_call(ep, [bad_field]))
    assert err["code"] == "bad_request" and "content" in err["message"]
    _, hb = protocol.encode_call(protocol.Heartbeat(name="x", pid=1))
    assert error_of(raw_call(ep, [hb]))["code"] == "unknown_type"  # a real type, but not a writer call
    _, add = protocol.encode_call(protocol.AddNode(kind="note", content="via the hook socket"))
    assert error_of(raw_call(paths.endpoint(protocol.SOCK_INGEST), [add]))["code"] == "unknown_type"
    err = error_of(raw_call(ep, [protocol.encode_call(protocol.AddNode(kind="planet", content="x"))[1]]))
    assert err["code"] == "bad_request" and "planet" in err["message"]
    # still serving, and none of the bad requests stored anything
    good = caller.call(protocol.AddNode(kind="note", content="after the bad ones"))
    assert rows(paths, "SELECT id FROM nodes") == [(good["id"],)]
    assert rows(paths, "SELECT value FROM counters WHERE name='frames_malformed'") == [(5,)]
    assert proc.poll() is None
    for name in (protocol.SOCK_WRITE, protocol.SOCK_INGEST, protocol.SOCK_EVENTS):
        assert stat.S_IMODE(os.stat(socket_path(paths.endpoint(name))).st_mode) == 0o600


def test_a_request_that_hits_a_bug_gets_internal_and_rolls_back_alone(writer):
    paths, proc, caller = writer
    ep = paths.endpoint(protocol.SOCK_WRITE)
    marker = "POISON-CONTENT-MARKER"
    # An mtime past SQLite's 64-bit range makes the INSERT raise inside the handler.
    poison = orjson.dumps(
        {
            "v": 1,
            "id": "p1",
            "kind": "call",
            "type": "AddNode",
            "src": "t",
            "body": {"kind": "note", "content": marker, "mtime": 2**64 - 1, "session_id": "s9"},
        }
    )
    err = error_of(raw_call(ep, [poison]))
    assert err == {"code": "internal", "message": "internal error; see writer log"}
    good = caller.call(protocol.AddNode(kind="note", content="written after the poison"))
    assert proc.poll() is None
    # the poison's session root was rolled back with it; the good note is there
    assert rows(paths, "SELECT id, kind FROM nodes") == [(good["id"], "note")]
    log = open(paths.log_file("writer"), encoding="utf-8").read()
    assert "Traceback" in log and marker not in log


def test_forgotten_content_is_refused_over_the_wire_and_audited(writer):
    paths, _, caller = writer
    nid = caller.call(protocol.AddNode(kind="note", content="a secret plan", session_id="s1"))["id"]
    caller.call(protocol.Forget(node_id=nid, reason="user asked"))
    with pytest.raises(Refused):
        caller.call(protocol.AddNode(kind="note", content="a secret plan", session_id="s2"))
    other = caller.call(protocol.AddNode(kind="note", content="a public plan", session_id="s2"))["id"]
    audit = rows(
        paths, "SELECT actor, action, node_id, to_status, reason FROM audit WHERE action IN ('forget','refused')"
    )
    assert audit == [
        ("mcp", "forget", nid, "forgotten", "user asked"),
        ("mcp", "refused", None, None, "content was forgotten (tombstoned)"),
    ]
    # the refused request's session root s2 rolled back, the control's s2 root exists once
    assert rows(paths, "SELECT count(*) FROM nodes WHERE source_uri='session:s2'") == [(1,)]
    assert rows(paths, "SELECT status FROM nodes WHERE id=?", (other,)) == [("pending",)]
    with pytest.raises(NotFound):
        caller.call(protocol.Forget(node_id="NO-SUCH-ID", reason="x"))


def test_events_are_published_after_commit(writer):
    paths, _, caller = writer
    with node_events(paths) as sub:

        def added_and_seen():  # PUB drops until the subscription arrives: retry with fresh nodes
            nid = caller.call(protocol.AddNode(kind="note", content="watch me"))["id"]
            if not sub.poll(300):
                return None
            topic, frame = sub.recv_multipart()
            return topic, protocol.decode(frame).body, nid

        topic, event, nid = wait_until(added_and_seen, timeout=deadline(20), what="a NodesChanged event")
        assert topic == b"NodesChanged" and event.status == "pending" and event.kinds == ["note"]
        assert set(event.ids) <= {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE kind='note'")}
        assert rows(paths, "SELECT status FROM nodes WHERE id=?", (event.ids[0],)) == [("pending",)]


def _burst(proc, endpoint: str, frames: list[bytes]) -> dict:
    """Send ``frames`` while the writer is stopped (so they queue and share
    batches), then wait for every reply: {request id: reply body}."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint)
    replies = {}
    try:
        sigstop(proc.pid)
        try:
            for frame in frames:
                sock.send(frame)
        finally:
            os.kill(proc.pid, signal.SIGCONT)

        def all_replies():
            while sock.poll(100, zmq.POLLIN):
                env = protocol.decode(sock.recv())
                replies[env.id] = env.body
            return len(replies) == len(frames)

        wait_until(all_replies, timeout=deadline(30), what="a reply to every request")
    finally:
        sock.close(linger=0)
    return replies


def _notes_while_stopped(proc, caller, socks: list, tag: str, each: int) -> tuple[int, float]:
    """Each DEALER of ``socks`` (a peer) asks a Ping and waits for it, then
    sends ``each`` notes while the writer is stopped; returns (the batches the
    notes took, seconds from the first Ping to SIGCONT)."""
    t0 = time.monotonic()
    for sock in socks:
        sock.send(protocol.encode_call(protocol.Ping(), src="t")[1])
        assert sock.poll(deadline_ms(10000)) and protocol.decode(sock.recv()).body["ok"]
    before = caller.call(protocol.Ping())
    sigstop(proc.pid)
    try:
        for i, sock in enumerate(socks):
            for j in range(each):
                add = protocol.AddNode(kind="note", content=f"{tag} {i}.{j}")
                sock.send(protocol.encode_call(add, src="t")[1])
    finally:
        took = time.monotonic() - t0
        os.kill(proc.pid, signal.SIGCONT)
    for sock in socks:
        for _ in range(each):
            assert sock.poll(deadline_ms(10000)) and protocol.decode(sock.recv()).body["ok"]
    after = caller.call(protocol.Ping())
    return after["batches"] - before["batches"] - 1, took  # less the first Ping's own batch


def test_a_batch_takes_half_as_many_requests_as_peers_are_asking(writer):
    """Pipelined group commit (actors/writer.py SPLIT_PEERS): with 8 peers and
    the test's caller asking, a batch takes at most 5 requests, so 16 notes
    queued at once take at least 4 transactions (one, as a rule, without the
    split). Frames that reach the writer in waves after SIGCONT can only add
    transactions, so the bound holds whatever the timing. Its positive
    control, a burst from one peer sharing batches, is
    test_bad_requests_sharing_a_batch_fail_alone_and_the_others_are_stored."""
    paths, proc, caller = writer
    ctx = zmq.Context.instance()
    socks = [ctx.socket(zmq.DEALER) for _ in range(8)]
    try:
        for sock in socks:
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(paths.endpoint(protocol.SOCK_WRITE))
        # Each round takes well under PEER_WINDOW_S; one that did not (a stalled machine) is run again.
        for attempt in range(5):
            batches, took = _notes_while_stopped(proc, caller, socks, f"round {attempt}", 2)
            if took < writer_mod.PEER_WINDOW_S * 0.8:
                break
        else:
            pytest.fail(f"no round took less than {writer_mod.PEER_WINDOW_S * 0.8:.2f}s")
        assert batches >= 4
        notes = rows(paths, "SELECT count(*) FROM nodes WHERE kind='note' AND content LIKE 'round %'")
        assert notes == [(16 * (attempt + 1),)]
    finally:
        for sock in socks:
            sock.close(linger=0)


BAD_NOTES = {  # fails before it writes, after it wrote (a ref, a session root), on a bug after a write
    "kind": ({"kind": "planet", "content": "BAD-KIND"}, "bad_request"),
    "dangling": ({"kind": "note", "content": "BAD-REF", "refs": [{"dst": "GHOST", "kind": "references"}]}, "not_found"),
    "tombstoned": ({"kind": "note", "content": "a forgotten plan", "session_id": "s-refused"}, "refused"),
    "poison": ({"kind": "note", "content": "BAD-POISON", "mtime": 2**64 - 1, "session_id": "s-poison"}, "internal"),
}


@pytest.mark.parametrize("name", list(BAD_NOTES))
def test_bad_requests_sharing_a_batch_fail_alone_and_the_others_are_stored(writer, name):
    # The frequent calls run without a SAVEPOINT each (actors/writer.py UNGUARDED):
    # bad requests between good ones, queued while the writer is stopped so that
    # they share batches, cost only themselves.
    paths, proc, caller = writer
    target = caller.call(protocol.AddNode(kind="note", content="a target"))["id"]
    gone = caller.call(protocol.AddNode(kind="note", content="a forgotten plan"))["id"]
    caller.call(protocol.Forget(node_id=gone, reason="asked"))
    before = caller.call(protocol.Ping())
    body, code = BAD_NOTES[name]
    frames, good, expect = [], {}, {}
    for i in range(12):
        env = {"v": 1, "id": f"bad-{i}", "kind": "call", "type": "AddNode", "src": "t", "body": body}
        frames.append(orjson.dumps(env))
        expect[f"bad-{i}"] = code
        ref = [{"dst": target, "kind": "references"}]
        add = protocol.AddNode(kind="note", content=f"good {i}", session_id="s-good", refs=ref)
        rid, frame = protocol.encode_call(add, src="t")
        frames.append(frame)
        good[rid] = f"good {i}"
    replies = _burst(proc, paths.endpoint(protocol.SOCK_WRITE), frames)
    after = caller.call(protocol.Ping())
    assert after["batches"] - before["batches"] < len(frames)  # they did share batches
    assert {rid: replies[rid]["error"]["code"] for rid in expect} == expect
    ids = {rid: replies[rid]["result"]["id"] for rid in good}
    stored = dict(rows(paths, "SELECT id, content FROM nodes WHERE kind='note' AND content LIKE 'good %'"))
    assert stored == {ids[rid]: content for rid, content in good.items()}
    edges = rows(paths, "SELECT src_id FROM edges WHERE dst_id=? AND kind='references'", (target,))
    assert sorted(e[0] for e in edges) == sorted(ids.values())
    # nothing of the failed ones: no node, no session root, no insert audit
    assert rows(paths, "SELECT count(*) FROM nodes WHERE content LIKE 'BAD-%'") == [(0,)]
    assert rows(paths, "SELECT source_uri FROM nodes WHERE kind='session'") == [("session:s-good",)]
    inserts = rows(paths, "SELECT count(*) FROM audit WHERE action='insert' AND actor='t'")
    assert inserts == [(len(good) + 1,)]  # each good note and the one s-good root
    refused = rows(paths, "SELECT count(*) FROM audit WHERE action='refused' AND actor='t'")
    assert refused == [(12 if name == "tombstoned" else 0,)]  # a refusal's audit row is kept, once
    assert proc.poll() is None


def test_audit_rows_commit_and_roll_back_with_their_request(writer):
    paths, _, caller = writer
    # The node is inserted (with its audit row) before the bad ref is found: both roll back.
    with pytest.raises(NotFound, match="GHOST"):
        caller.call(
            protocol.AddNode(kind="note", content="with a dangling ref", refs=[{"dst": "GHOST", "kind": "references"}])
        )
    assert rows(paths, "SELECT count(*) FROM nodes") == [(0,)]
    assert rows(paths, "SELECT count(*) FROM audit") == [(0,)]
    a = caller.call(protocol.AddNode(kind="note", content="target"))["id"]
    b = caller.call(protocol.AddNode(kind="note", content="source", refs=[{"dst": a, "kind": "references"}]))["id"]
    assert rows(paths, "SELECT actor, action, node_id FROM audit ORDER BY seq") == [
        ("mcp", "insert", a),
        ("mcp", "insert", b),
        ("mcp", "edge", b),
    ]
    assert rows(paths, "SELECT src_id, dst_id, kind FROM edges") == [(b, a, "references")]


def test_a_database_file_made_read_only_is_noticed_at_once_and_writes_resume_when_it_is_writable(writer):
    from memtree.errors import Unavailable

    paths, proc, caller = writer
    before = caller.call(protocol.AddNode(kind="note", content="stored before the file turned read-only"))["id"]
    os.chmod(paths.db, 0o400)
    try:
        with pytest.raises(Unavailable) as refused:
            caller.call(protocol.AddNode(kind="note", content="refused while the file is read-only"))
        assert "read-only" in refused.value.message and paths.db in refused.value.message
        assert caller.call(protocol.Ping())["pid"] == proc.pid  # alive and answering
    finally:
        os.chmod(paths.db, 0o600)
    after = caller.call(protocol.AddNode(kind="note", content="stored once the file is writable again"))["id"]
    assert {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE kind='note'")} == {before, after}
    assert proc.poll() is None


def test_a_writer_that_cannot_grow_its_files_refuses_then_recovers_by_itself(writer):
    """The portable stand-in for a full disk (no root needed): RLIMIT_FSIZE on the writer."""
    import psutil

    from memtree.errors import Unavailable

    paths, proc, caller = writer
    kept = caller.call(protocol.AddNode(kind="note", content="acknowledged before the limit"))["id"]
    writer_ps = psutil.Process(proc.pid)
    soft, hard = writer_ps.rlimit(psutil.RLIMIT_FSIZE)
    writer_ps.rlimit(psutil.RLIMIT_FSIZE, (1, hard))  # no file of it may grow past one byte
    try:
        with pytest.raises(Unavailable) as refused:
            caller.call(protocol.AddNode(kind="note", content="refused: " + "x" * 200_000))
        assert "disk write failed" in refused.value.message
        assert caller.call(protocol.Ping())["pid"] == proc.pid
    finally:
        writer_ps.rlimit(psutil.RLIMIT_FSIZE, (soft, hard))

    def stored_again():
        try:
            return caller.call(protocol.AddNode(kind="note", content="stored once the files may grow"))["id"]
        except Unavailable:
            return None

    after = wait_until(stored_again, timeout=deadline(10), what="the writer storing again by itself")
    assert {r[0] for r in rows(paths, "SELECT id FROM nodes WHERE kind='note'")} == {kept, after}
    assert proc.poll() is None


def test_the_wal_stays_bounded_while_the_writer_checkpoints_it_after_answering(writer):
    """SQLite's autocheckpoint is off on the writer's connection (it ran inside the
    COMMIT a caller waits on); the writer checkpoints after replying instead. The
    WAL must not grow with what is written: 36 MB goes in back to back (each
    thread pass leaves the frames committed meanwhile), the WAL stays within
    WAL_INLINE_PAGES and one more commit's worth (an FTS merge adds ~500 pages)."""
    from memtree.actors.writer import WAL_CHECKPOINT_PAGES, WAL_INLINE_PAGES

    paths, proc, caller = writer
    ids = []
    for i in range(400):
        body = "".join(f"line {k} of note {i}: alpha beta gamma delta {k * i}\n" for k in range(1600))[:90_000]
        ids.append(caller.call(protocol.AddNode(kind="note", content=body))["id"])
    assert len(set(ids)) == 400
    assert rows(paths, "SELECT count(*) FROM nodes WHERE kind = 'note'") == [(400,)]
    assert rows(paths, "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH 'gamma'") == [(400,)]
    written = 400 * 90_000
    wal = os.path.getsize(paths.db + "-wal")
    page = rows(paths, "PRAGMA page_size")[0][0]
    assert 0 < wal < (WAL_INLINE_PAGES + WAL_CHECKPOINT_PAGES) * page < written / 3, (wal, written)
    assert proc.poll() is None


def _written_by_thread(pid: int) -> dict[int, int]:
    """Bytes each thread of ``pid`` handed to write calls (the kernel's wchar)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/io") as f:
                out[int(tid)] = next(int(line.split()[1]) for line in f if line.startswith("wchar:"))
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return out


def test_the_wal_is_copied_into_the_database_by_a_thread_beside_the_one_that_answers(writer):
    """A checkpoint copies a thousand WAL frames into the database file (15 ms
    here); on the thread that answers, whoever asked next waited for it. The
    bulk of that copy is written by another thread of the writer (read from the
    kernel), and the rows reach the database file itself, not only the WAL."""
    from memtree.actors.writer import WAL_CHECKPOINT_PAGES

    paths, proc, caller = writer
    page = rows(paths, "PRAGMA page_size")[0][0]
    body = "".join(f"line {k}: epsilon zeta eta theta {k}\n" for k in range(2500))[:80_000]
    ids = [caller.call(protocol.AddNode(kind="note", content=f"note {i}\n{body}"))["id"] for i in range(80)]
    assert len(set(ids)) == 80  # ~20 frames each: the WAL passed WAL_CHECKPOINT_PAGES

    def copied_beside():  # at least one whole pass, copied by one thread that is not the main one
        others = {tid: n for tid, n in _written_by_thread(proc.pid).items() if tid != proc.pid}
        return [tid for tid, n in others.items() if n >= WAL_CHECKPOINT_PAGES * page]

    copier = wait_until(copied_beside, timeout=deadline(10), what="a thread beside the main one copying the WAL")
    assert len(copier) == 1  # the other threads (zmq's, the heartbeat's) write a few KB
    import shutil
    import sqlite3

    shutil.copyfile(paths.db, f"{paths.db}.main-only")  # the database file without its WAL
    main_only = sqlite3.connect(f"{paths.db}.main-only")
    try:
        in_main = main_only.execute("SELECT count(*) FROM nodes WHERE kind = 'note'").fetchone()[0]
    finally:
        main_only.close()
    assert 0 < in_main <= 80
    assert proc.poll() is None


def test_at_a_drains_pace_the_wal_starts_over_with_no_frame_copied_by_the_answering_thread(writer):
    """Commits with pauses between them, as an embedding drain's: the thread's
    pass takes in every frame, and the next write starts the WAL over. The
    thread that answers copies none itself (two fsyncs a capture would wait
    for), and the WAL file never grows to WAL_INLINE_PAGES.

    Each pause lasts until the thread's pass is done (Ping's checkpoint_busy):
    the thread runs at background priority, and on a loaded machine a fixed
    pause was sometimes shorter than its pass, whose commits then outpaced it.
    With no pause at all the writer copies frames itself (checkpoints 4)."""
    from memtree.actors.writer import WAL_CHECKPOINT_PAGES, WAL_INLINE_PAGES

    paths, proc, caller = writer
    page = rows(paths, "PRAGMA page_size")[0][0]
    body = "".join(f"line {k}: iota kappa lambda mu {k}\n" for k in range(2500))[:80_000]
    for i in range(160):  # ~20 frames each: 3 x WAL_CHECKPOINT_PAGES in all
        caller.call(protocol.AddNode(kind="note", content=f"note {i}\n{body}"))
        wait_until(lambda: not caller.call(protocol.Ping())["checkpoint_busy"], what="the checkpoint pass done")
    got = caller.call(protocol.Ping())
    wal = os.path.getsize(paths.db + "-wal")
    assert got["checkpoint_passes"] >= 2 and got["checkpoints"] == 0, got
    assert WAL_CHECKPOINT_PAGES * page <= wal < WAL_INLINE_PAGES * page, wal  # it grew to a pass, and restarted
    assert rows(paths, "SELECT count(*) FROM nodes WHERE kind = 'note'") == [(160,)]


def test_ping_counts_the_heavy_batches_and_the_time_they_held_the_writer(writer):
    """A PutVectors runs in a batch of its own (HEAVY_TYPES): Ping counts those
    batches and their milliseconds (eval/bench_scale's writer share of a drain);
    an ordinary note is no heavy batch."""
    paths, proc, caller = writer
    before = caller.call(protocol.Ping())
    node_id = caller.call(protocol.AddNode(kind="note", content="a note with a vector"))["id"]
    digest = rows(paths, "SELECT content_hash FROM nodes WHERE id = ?", (node_id,))[0][0]
    mid = caller.call(protocol.Ping())
    assert (mid["heavy_batches"], mid["heavy_ms"]) == (before["heavy_batches"], before["heavy_ms"]) == (0, 0)
    item = {"node_id": node_id, "content_hash": digest, "vector": [0.6, 0.8, 0.0]}
    for _ in range(3):
        assert caller.call(protocol.PutVectors(model="m", dim=3, items=[item]))["stored"] == 1
    after = caller.call(protocol.Ping())
    assert after["heavy_batches"] == 3 and after["heavy_ms"] >= 0


def test_acked_writes_survive_a_kill_before_the_writer_checkpoints(tmp_path):
    """An ack means committed to the WAL; the checkpoint comes later (or never,
    when the writer is killed first). SIGKILL right after the acks, start a
    new writer on the same files: every acked row is there, none twice."""
    import signal

    paths = make_paths(tmp_path)
    config = make_config()
    proc = start_writer(paths, config)
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="mcp", timeout_ms=deadline_ms(10000))
    try:
        acked = [
            caller.call(protocol.AddNode(kind="note", content=f"acked note {i} " + "x" * 1000))["id"] for i in range(40)
        ]  # ~16 WAL pages each: under WAL_CHECKPOINT_PAGES, so none checkpointed
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(deadline(10))
        # The database file without its WAL holds none of them: recovery is what finds them.
        import shutil
        import sqlite3

        shutil.copyfile(paths.db, tmp_path / "main-only.db")
        main_only = sqlite3.connect(tmp_path / "main-only.db")
        try:
            in_main = main_only.execute("SELECT count(*) FROM nodes WHERE kind = 'note'").fetchone()[0]
        except sqlite3.OperationalError:  # not even the schema was checkpointed yet
            in_main = 0
        finally:
            main_only.close()
        assert in_main == 0
    finally:
        caller.close()
        reap(proc)
    again = start_writer(paths, config)
    try:
        stored = rows(paths, "SELECT id FROM nodes WHERE kind = 'note'")
        assert sorted(r[0] for r in stored) == sorted(acked)
    finally:
        reap(again)


def test_a_reader_holding_a_snapshot_never_stalls_the_requests_behind_a_forget(writer):
    """After a Forget the writer truncates the WAL; a reader mid-transaction
    keeps that from going through. The truncate must not wait for the reader
    (the 5 s busy timeout would hold every request behind it): the next call
    is answered while the reader still holds its snapshot, and the WAL is
    truncated on a later tick once the reader lets go."""
    from memtree.store.db import BUSY_TIMEOUT_MS, open_read

    paths, proc, caller = writer
    gone = caller.call(protocol.AddNode(kind="note", status="live", content="a note forgotten while a reader reads"))
    reader = open_read(paths.db)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM nodes WHERE id = ?", (gone["id"],)).fetchall() == [(1,)]
        caller.call(protocol.Forget(node_id=gone["id"], reason="user asked"))
        # Well inside the busy timeout: a truncate that waited for the reader would still be waiting.
        after = caller.call(
            protocol.AddNode(kind="note", status="live", content="written behind the forget"),
            timeout_ms=BUSY_TIMEOUT_MS * 3 // 5,
        )
        assert after["status"] == "live"
        assert os.path.getsize(paths.db + "-wal") > 0  # the reader's snapshot still needs it
    finally:
        reader.execute("COMMIT")
        reader.close()
    wait_until(lambda: os.path.getsize(paths.db + "-wal") == 0, what="WAL truncated once the reader let go")
    assert rows(paths, "SELECT status FROM nodes WHERE id = ?", (after["id"],)) == [("live",)]
    assert proc.poll() is None
