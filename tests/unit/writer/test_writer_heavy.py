"""Whole-file Reads queued at the writer do not hold up an ordinary capture:
each runs in a transaction of its own, and what arrives meanwhile is answered
between two (actors/writer.py HEAVY_FRAME_BYTES). Real writer process, real
ZeroMQ sockets, real payload shapes."""

from __future__ import annotations

import time

import pytest
import zmq

from memtree import protocol
from memtree.eval import payloads
from memtree.store import integrity
from tests.support import deadline, make_paths, reap
from tests.support import test_config as make_config
from tests.support.actor_procs import rows, start_writer

READS = 8


@pytest.fixture()
def writer(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config())
    yield paths
    reap(proc)


def big_read(project: str, i: int, functions: int = 1200) -> dict:
    """A Read of a module of ``functions`` functions (1,200: ~90 KB, far above HEAVY_FRAME_BYTES; tens of ms
    to chunk and store)."""
    body = "".join(
        f"\ndef handler_{i}_{k}(request, retries=3):\n    value = request.get('k{k}')\n    return value * {k}\n"
        for k in range(functions)
    )
    return payloads.read(f"{project}/module_{i}.py", body, project, "sess-heavy", f"toolu_heavy_{i}")


def bash(project: str) -> dict:
    return {
        "session_id": "sess-heavy",
        "transcript_path": "/dev/null",
        "cwd": project,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git status --short", "description": "status"},
        "tool_response": {"stdout": " M app.py\n", "stderr": "", "interrupted": False, "isImage": False},
        "tool_use_id": "toolu_heavy_bash",
    }


def test_an_ordinary_capture_sent_behind_queued_reads_is_answered_before_the_last_of_them(writer):
    paths = writer
    endpoint = paths.endpoint(protocol.SOCK_INGEST)
    ctx = zmq.Context.instance()
    socks: dict[str, zmq.Socket] = {}

    def send(name: str, body: dict) -> None:
        sock = socks[name] = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(endpoint)
        sock.send(protocol.encode_call(protocol.Ingest(payload=body), src="hook")[1])

    order: list[str] = []
    poller = zmq.Poller()

    def collect(until) -> None:
        end = time.monotonic() + deadline(30)
        while not until() and time.monotonic() < end:
            for sock, _ in poller.poll(100):
                name = next(n for n, s in socks.items() if s is sock)
                reply = protocol.decode(sock.recv_multipart()[-1])
                assert reply.kind == "reply" and reply.body["ok"], (name, reply.body)
                order.append(name)
                poller.unregister(sock)

    try:
        # The first read is four times the others: the rest are all queued while it runs.
        for i in range(READS):
            send(f"read{i}", big_read(paths.project_root, i, 4800 if i == 0 else 1200))
        for sock in socks.values():
            poller.register(sock, zmq.POLLIN)
        collect(lambda: order)  # the writer is on the queue of reads now
        send("bash", bash(paths.project_root))
        poller.register(socks["bash"], zmq.POLLIN)
        collect(lambda: len(order) == READS + 1)
    finally:
        for sock in socks.values():
            sock.close(linger=0)
    assert sorted(order) == sorted([f"read{i}" for i in range(READS)] + ["bash"])
    # The capture was sent once the first read was answered, with seven queued behind it (all of them
    # answered after it when the queue ran as one batch); it waits for at most the one running and the next.
    assert order.index("bash") <= 3, order
    files = rows(paths, "SELECT count(DISTINCT parent_id) FROM nodes WHERE kind = 'file_chunk'")[0][0]
    assert files == READS  # every read stored its chunks, under its own file
    # Their FTS rows went in at each commit (store/write/fts.py): exactly the chunks, and the index whole.
    chunks = set(rows(paths, "SELECT rowid FROM nodes WHERE kind = 'file_chunk'"))
    assert set(rows(paths, "SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH 'handler'")) == chunks
    assert integrity.check(paths.db)[0] == []
