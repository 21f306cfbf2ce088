"""The embed walker as a real process beside the real writer: vectors for live
nodes only, copies for known content, query embeddings on its own socket,
Ollama over real HTTP, and an idle walker that says why."""

from __future__ import annotations

import socket
import time

import numpy as np
import pytest

from memtree import protocol
from memtree.errors import Unavailable
from memtree.recall.embeddings import LOCAL_MODEL, StaticProvider
from memtree.runtime.client import Caller
from memtree.store.vectors import from_blob
from tests.support import COLD_START_S, deadline_ms, held_up, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import HeartbeatSink, rows, start_actor, start_writer
from tests.support.ollama_standin import OllamaStandIn, letter_vector

WALKER = "memtree.actors.walkers.embed"


@pytest.fixture()
def system(tmp_path):
    procs = []

    def start(overrides=None, sink=None):
        paths = make_paths(tmp_path)
        config = make_config({"walkers": {"embeddingIdleMs": 100}, **(overrides or {})})
        procs.append(start_writer(paths, config))
        procs.append(start_actor(paths, config, WALKER, "walker.embed", sink.endpoint if sink else None))
        return paths, Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))

    yield start
    for p in procs:
        reap(p)


def add(caller, content, status="live", kind="note"):
    return caller.call(protocol.AddNode(kind=kind, content=content, status=status))["id"]


def vectors(paths):
    return {
        r[0]: (r[1], r[2], from_blob(r[3])) for r in rows(paths, "SELECT node_id, model, dim, embedding FROM nodes_vec")
    }


def test_live_nodes_get_vectors_with_model_and_dim_and_pending_ones_do_not(system):
    paths, w = system()
    live = {add(w, f"def parse_config_{i}(path): read the settings file and return a dict {i}") for i in range(40)}
    twin = add(w, "def parse_config_0(path): read the settings file and return a dict 0")  # same content as one above
    pending = add(w, "a capture the filter has not judged yet, so it is not searchable", status="pending")
    wait_until(lambda: live | {twin} <= set(vectors(paths)), timeout=COLD_START_S, what="vectors for every live node")
    got = vectors(paths)
    assert set(got) == live | {twin} and pending not in got
    assert {(m, d) for m, d, _ in got.values()} == {(LOCAL_MODEL, 256)}
    assert all(len(v) == 256 for _, _, v in got.values())
    first = next(i for i in live if rows(paths, "SELECT content FROM nodes WHERE id=?", (i,))[0][0].endswith(" 0"))
    assert got[twin][2] == got[first][2]  # known content: the stored vector, not a new one
    audits = rows(paths, "SELECT actor, reason FROM audit WHERE action = 'embed'")
    assert audits and {a for a, _ in audits} == {"walker.embed"} and {r for _, r in audits} == {LOCAL_MODEL}
    # One audit row a PutVectors: the 41 vectors went in slices (a capture waits for one slice at most).
    from memtree.actors.walkers.embed import PUT_SLICE

    stored = [r[0] for r in rows(paths, "SELECT json_extract(detail, '$.stored') FROM audit WHERE action = 'embed'")]
    assert sum(stored) == len(live) + 1 and max(stored) <= PUT_SLICE < len(live), stored


def _last_beat(sink, name: str, wait_s: float = 1.0):
    """The newest heartbeat of ``name`` that arrives within ``wait_s`` (beats come every 200 ms)."""
    last, end = None, time.monotonic() + wait_s
    while time.monotonic() < end:
        while sink.sock.poll(50):
            body = protocol.decode(sink.sock.recv()).body
            if body.name == name:
                last = body
    return last


def test_a_chunk_gone_live_behind_the_walk_comes_by_its_event_with_no_walk_from_the_start(system, tmp_path):
    """The walk keeps its place at the newest chunk: a walk from the start reads every live
    chunk (~0.9 s at 1M nodes) and is not repeated for each capture. A chunk the filter
    judges late, created before the walk's place, is embedded from its NodesChanged event."""
    sink = HeartbeatSink(make_paths(tmp_path))
    try:
        paths, w = system(sink=sink)
        sink.wait_state("walker.embed")
        late = add(w, "def judged_late(): the filter took its time over this capture", status="pending")
        early = {add(w, f"def walked_{i}(): a capture the walk passes {i}") for i in range(40)}
        wait_until(lambda: early <= set(vectors(paths)), timeout=COLD_START_S, what="the walk's vectors")
        assert late not in vectors(paths)  # control: pending, so not embedded yet
        w.call(protocol.SetStatus(ids=[late], status="live", reason="test"))
        wait_until(lambda: late in vectors(paths), timeout=COLD_START_S, what="the late chunk's vector")
        more = set()
        for i in range(5):  # one capture at a time, each a sweep of its own
            more.add(add(w, f"def one_more_{i}(): a capture after the walk {i}"))
            wait_until(lambda: more <= set(vectors(paths)), timeout=COLD_START_S, what="a new capture's vector")
        beat = _last_beat(sink, "walker.embed")
        assert set(vectors(paths)) == early | {late} | more
        assert beat.info["walks"] == 1, beat.info  # the start-up walk only
        assert beat.backlog == 0  # drained: known without a count
    finally:
        sink.close()


def test_query_embedding_is_served_on_the_embed_socket(system):
    paths, w = system()
    q = Caller(paths.endpoint(protocol.SOCK_EMBED), src="test", timeout_ms=deadline_ms(5000))
    try:
        res = wait_until(
            lambda: q.call(protocol.EmbedQuery(text="strip common leading whitespace")),
            timeout=COLD_START_S,
            what="an EmbedQuery answer",
        )
    finally:
        q.close()
    assert (res["model"], res["dim"], len(res["vector"])) == (LOCAL_MODEL, 256, 256)
    local = StaticProvider().embed(["strip common leading whitespace"])[0]
    assert float(np.dot(local, np.asarray(res["vector"], np.float32))) == pytest.approx(1.0, abs=1e-5)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_missing_ollama_leaves_the_walker_idle_with_the_reason_and_queries_refused(system, tmp_path):
    sink = HeartbeatSink(make_paths(tmp_path))
    try:
        url = f"http://127.0.0.1:{_closed_port()}"
        paths, w = system({"embeddingModel": "ollama:nomic-embed-text", "ollama": {"url": url}}, sink)
        node = add(w, "some live content that would be embedded if a model were there")
        hb = wait_until(
            lambda: (lambda b: b if b.info.get("idle") else None)(sink.wait_state("walker.embed")),
            timeout=COLD_START_S,
            what="an idle heartbeat",
        )
        assert "ollama" in hb.info["idle"] and url in hb.info["idle"]
        q = Caller(paths.endpoint(protocol.SOCK_EMBED), src="test", timeout_ms=deadline_ms(5000))
        try:
            with pytest.raises(Unavailable, match="embeddings unavailable: ollama"):
                q.call(protocol.EmbedQuery(text="anything"))
        finally:
            q.close()
        assert node not in vectors(paths)
        # Still the same process, heartbeating: idle, not crashed.
        assert sink.wait_state("walker.embed").info.get("idle")
    finally:
        sink.close()


def test_ollama_provider_embeds_over_real_http(system):
    with OllamaStandIn() as ollama:
        paths, w = system({"embeddingModel": "ollama:test-embed", "ollama": {"url": ollama.url}})
        a = add(w, "alpha alpha alpha content for the ollama provider")
        b = add(w, "zebra buzz quiz jazz fizz content here")
        wait_until(lambda: {a, b} <= set(vectors(paths)), timeout=COLD_START_S, what="ollama vectors")
        got = vectors(paths)
        assert {(m, d) for m, d, _ in got.values()} == {("ollama:test-embed", 26)}
        want = np.asarray(letter_vector("alpha alpha alpha content for the ollama provider"), np.float32)
        assert np.allclose(got[a][2], want / np.linalg.norm(want), atol=1e-6)
        embeds = [r for r in ollama.requests if r["path"] == "/api/embed"]
        assert embeds and all(
            r["body"]["model"] == "test-embed" and isinstance(r["body"]["input"], list) for r in embeds
        )


def test_ctl_status_shows_why_the_embed_walker_is_idle(system_factory):
    s = system_factory
    url = f"http://127.0.0.1:{_closed_port()}"
    s.write_config({"embeddingModel": "ollama:nomic-embed-text", "ollama": {"url": url}})
    s.serve()
    s.wait_running()
    row = wait_until(
        lambda: (s.actor("walker.embed") or {}).get("info", {}).get("idle"),
        timeout=COLD_START_S,
        what="the idle reason in status",
    )
    assert url in row
    done = s.ctl("status")
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith("walker.embed"))
    assert done.returncode == 0 and "RUNNING" in line and "idle=ollama at" in line


def test_a_slow_ollama_batch_does_not_get_the_walker_killed_as_hung(system_factory):
    s = system_factory
    # Longer than the kill window (15 beats x 200 ms = 3 s), shorter than the walker's 5 s probe
    # timeout (memtree/recall/embeddings.py): the window is fixed here, not stretched by slowness.
    with OllamaStandIn(delay_s=4.0) as ollama:
        s.write_config(
            {
                "supervisor": {"missedHeartbeats": 15},
                "embeddingModel": "ollama:test-embed",
                "ollama": {"url": ollama.url},
                "walkers": {"embeddingIdleMs": 100},
            }
        )
        s.serve()
        s.wait_running()
        pid = s.pid("walker.embed")
        w = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
        try:
            node = add(w, "a note embedded by a slow ollama server, one batch of one")
        finally:
            w.close()
        wait_until(lambda: node in vectors(s.paths), timeout=COLD_START_S, what="the slow batch stored")
        row = s.actor("walker.embed")
        assert (row["pid"], row["restarts"], row["state"]) == (pid, 0, "RUNNING")


def test_a_fronts_first_query_waits_for_a_walker_still_loading_its_model(system):
    """The first recall of a session comes while the embed walker may still be loading
    (here: Ollama's first answer, its dimension probe, takes 2 s; the walker binds its
    socket once loaded). A front the supervisor started beside the walker waits for it
    once (EMBED_COLD_MS, the socket included). Control: a front with the ordinary bound
    gives up meanwhile, which is what left a session's first recall keyword-only."""
    import anyio

    from memtree.front.services import Services

    with OllamaStandIn(first_delay_s=2.0) as ollama:
        paths, _w = system({"embeddingModel": "ollama:test-embed", "ollama": {"url": ollama.url}})
        config = make_config({"embeddingModel": "ollama:test-embed", "ollama": {"url": ollama.url}})
        plain = Services(config, paths, session_id="t1", src="test")
        cold = Services(config, paths, session_id="t2", src="test", expect_embedder=True)

        async def first_queries():
            missed = await plain.embed_query("alpha beta")  # inside the walker's load: 300 ms is not enough
            got = await cold.embed_query("alpha beta")
            return missed, got

        try:
            missed, got = anyio.run(first_queries)
        finally:
            plain.close()
            cold.close()
        assert missed is None
        assert got is not None and got["model"] == "ollama:test-embed"
        assert np.allclose(
            np.asarray(got["vector"]), letter_vector("alpha beta") / np.linalg.norm(letter_vector("alpha beta"))
        )
        probes = [r for r in ollama.requests if r["path"] == "/api/embed"]
        assert len(probes) == 2  # the dimension probe, then the query: nothing retried or lost


def test_a_first_query_embedding_leaves_no_thread_to_drain_backlogs_at_normal_priority(system):
    """The query thread keeps the normal priority (a search must not wait behind
    a drain) and the drain runs niced. A tokenizer that spreads a batch over a
    thread pool made that pool's threads inherit the priority of whichever
    thread tokenized first: after a query came first (the usual order when a
    store has no backlog at start), every later drain tokenized at normal
    priority on every core. Read from the kernel: the walker's threads at the
    normal priority are the same before and after a query and a drain."""
    import psutil

    paths, w = system()
    walker = wait_until(
        lambda: next(
            (p for p in psutil.Process().children(recursive=True) if "memtree.actors.walkers.embed" in p.cmdline()),
            None,
        ),
        timeout=COLD_START_S,
        what="the embed walker's process",
    )

    def nices() -> dict[int, int]:
        return {t.id: psutil.Process(t.id).nice() for t in walker.threads()}

    # Started: its main thread lowered itself, after the query thread started (nothing embedded yet).
    wait_until(lambda: max(nices().values()) >= 10, timeout=COLD_START_S, what="the walker lowering its priority")
    before = {t for t, n in nices().items() if n < 10}
    q = Caller(paths.endpoint(protocol.SOCK_EMBED), src="test", timeout_ms=deadline_ms(5000))
    try:
        assert before and len(before) < len(nices())  # control: the query thread is normal, the main is not
        # A query batch long enough to be split across a pool, then a backlog to drain.
        q.call(protocol.EmbedQuery(text=" ".join(f"token{i} parse_config read_settings" for i in range(400))))
        live = {add(w, f"def handler_{i}(request): route the request to view {i} " * 20) for i in range(64)}
        wait_until(lambda: live <= set(vectors(paths)), timeout=COLD_START_S, what="vectors for the backlog")
        assert {t for t, n in nices().items() if n < 10} == before, (before, nices())
    finally:
        q.close()


def _walker_process():
    import psutil

    return wait_until(
        lambda: next(
            (p for p in psutil.Process().children(recursive=True) if "memtree.actors.walkers.embed" in p.cmdline()),
            None,
        ),
        timeout=COLD_START_S,
        what="the embed walker's process",
    )


def test_backlogs_are_embedded_by_a_child_of_the_idle_class_and_no_thread_of_the_walker_is_of_it(system):
    """A hook capture that came during a drain computed on a niced thread of the
    walker waited a scheduler tick for the writer (p95 2x idle); any thread
    preempts one of the idle class at once. But an idle-class thread holding the
    GIL starves its whole process when the cores are busy (the heartbeat pulse,
    the query thread), so the drain is computed by a child of that class and no
    thread of the walker is (read from the kernel). The child ends with the walker."""
    import os
    import signal

    import psutil

    paths, w = system()
    walker = _walker_process()
    child = wait_until(lambda: next(iter(walker.children()), None), timeout=COLD_START_S, what="the walker's child")
    # The child lowers itself once forked (embed_compute._serve): it may be seen just before.
    wait_until(lambda: os.sched_getscheduler(child.pid) == os.SCHED_IDLE, what="the child in the idle class")
    cpu_before = sum(child.cpu_times()[:2])
    live = {add(w, f"def handler_{i}(request): route the request to view {i} " * 20) for i in range(48)}
    wait_until(lambda: live <= set(vectors(paths)), timeout=COLD_START_S, what="vectors for the backlog")
    assert set(vectors(paths)) == live
    assert sum(child.cpu_times()[:2]) > cpu_before  # the child computed them
    classes = {t.id: os.sched_getscheduler(t.id) for t in walker.threads()}
    assert len(classes) >= 3 and os.SCHED_IDLE not in classes.values(), classes
    # A query is answered by the walker itself, beside the child.
    q = Caller(paths.endpoint(protocol.SOCK_EMBED), src="test", timeout_ms=deadline_ms(5000))
    try:
        assert q.call(protocol.EmbedQuery(text="route the request"))["model"] == LOCAL_MODEL
    finally:
        q.close()
    os.kill(walker.pid, signal.SIGTERM)  # the walker alone, not its group: it must end its child itself
    walker.wait(deadline_ms(10000) / 1000)
    assert not psutil.pid_exists(child.pid) or child.status() == psutil.STATUS_ZOMBIE


def test_a_walker_whose_embedding_child_was_killed_is_restarted_and_drains_the_backlog(system_factory):
    """The child can die on its own (the OOM killer picks the biggest process).
    The walker does not compute without it: its next batch ends the walker, the
    supervisor starts it afresh with a new child, and the backlog is drained."""
    import os
    import signal

    import psutil

    s = system_factory
    s.write_config({"walkers": {"embeddingIdleMs": 100}})
    s.serve()
    s.wait_running()
    pid = s.pid("walker.embed")
    child = wait_until(
        lambda: next(iter(psutil.Process(pid).children()), None), timeout=COLD_START_S, what="the walker's child"
    )
    os.kill(child.pid, signal.SIGKILL)
    w = Caller(s.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    try:
        live = {add(w, f"class Model{i}: a model stored after the child died {i}") for i in range(12)}
    finally:
        w.close()
    wait_until(lambda: live <= set(vectors(s.paths)), timeout=3 * COLD_START_S, what="the backlog drained")
    row = wait_until(lambda: s.actor("walker.embed", {"RUNNING"}), timeout=COLD_START_S, what="the walker running")
    assert row["pid"] != pid and row["restarts"] == 1
    assert len(psutil.Process(row["pid"]).children()) == 1


def test_a_drain_steps_aside_while_the_writer_has_a_batch_marked_and_still_drains(system, tmp_path):
    """While the writer's foreground mark is up (memtree/runtime/foreground.py), the
    walker's thread waits before it reads a batch and before each PutVectors, and its
    child before each slice; each wait gives up after WAIT_MAX_S, so a mark held up
    without pause (here by the test) slows the drain and does not stop it. The waits
    are counted.

    The writer puts the mark down after each of its own batches, and a wait that
    sees it down goes on LINGER_S later; so the texts go live in one batch (one
    SetStatus), the test puts the mark up again right after it, and the walker's
    tick comes embeddingIdleMs later, with no batch of the writer's in between to
    cut a wait short (the holder only keeps the mark from going stale)."""
    from memtree.runtime import foreground

    sink = HeartbeatSink(make_paths(tmp_path))
    try:
        paths, w = system({"walkers": {"embeddingIdleMs": 500}}, sink=sink)
        sink.wait_state("walker.embed")
        pending = [
            add(w, f"def held_{i}(): embedded while the writer looks busy {i}", status="pending") for i in range(8)
        ]
        mark = foreground.Mark(paths.store_dir)  # a second writer of the file
        try:
            with held_up(mark):
                w.call(protocol.SetStatus(ids=pending, status="live"))
                mark.up()  # the SetStatus batch put it down: up again before the walker's tick
                wait_until(
                    lambda: set(pending) <= set(vectors(paths)), timeout=COLD_START_S, what="vectors under the mark"
                )
        finally:
            mark.close()
        # Eight texts: four slices in the child, a read and a PutVectors in the walker.
        beat = wait_until(
            lambda: (b := _last_beat(sink, "walker.embed")) and b.info.get("stepped_aside_ms", 0) >= 300 and b,
            timeout=COLD_START_S,
            what="the waits counted",
        )
        assert set(vectors(paths)) == set(pending), beat.info
    finally:
        sink.close()
