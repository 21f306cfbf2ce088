"""The summarize walker as a real process beside the real writer: extractive
summaries of subtrees past the threshold (exact sets), forgotten with what
they quote, used by compose over real stdio when a subtree does not fit;
the Anthropic API through a stand-in speaking its real format, redacted and
capped per day."""

from __future__ import annotations

import os

import pytest

from memtree import protocol
from memtree.recall import summaries
from memtree.store import reads, subtrees
from tests.support import COLD_START_S, wait_until
from tests.support.actor_procs import read_db, start_actor
from tests.support.anthropic_standin import AnthropicStandIn
from tests.support.front_harness import Front

THRESHOLD = 5
CFG = {
    "walkers": {"summarizerIntervalMs": 200, "summarizerSubtreeThreshold": THRESHOLD, "summaryTokens": 120},
    "summarizerModel": "extractive",
}


def put_file(front, name: str, n: int) -> tuple[str, list[str]]:
    path = os.path.join(front.root, name)
    chunks = [
        {
            "start": 10 * i + 1,
            "end": 10 * i + 9,
            "symbol": f"handler_{name[:-3]}_{i}",
            "kind": "function",
            "content": f"def handler_{name[:-3]}_{i}(request):\n    # route {i} validates the invoice payload\n"
            f"    return process_invoice_{i}(request.body, retries={i})\n"
            + f"    # the payload carries line items, taxes and the customer account {i}\n"
            * 4,
        }
        for i in range(n)
    ]
    res = front.caller.call(protocol.PutFile(path=path, mtime=1, size=100, chunks=chunks))
    return res["root_id"], res["chunk_ids"]


def summaries_of(front) -> dict[str, str]:
    return dict(front.rows("SELECT id, parent_id FROM nodes WHERE kind = 'summary' AND status = 'live'"))


@pytest.fixture()
def walker_front(tmp_path):
    procs = []

    def start(overrides=None, env=None):
        cfg = {**CFG, **(overrides or {})}
        f = Front(tmp_path, cfg)
        procs.append(f)
        procs.append(
            start_actor(f.paths, f.config, "memtree.actors.walkers.summarize", "walker.summarize", extra_env=env)
        )
        return f

    yield start
    from tests.support import reap

    for p in reversed(procs):
        p.close() if isinstance(p, Front) else reap(p)


def test_extractive_summary_for_a_big_subtree_only_used_by_compose_and_forgotten_with_it(walker_front):
    front = walker_front()
    big_root, big_chunks = put_file(front, "billing.py", THRESHOLD + 3)
    small_root, _ = put_file(front, "small.py", THRESHOLD)  # not larger than the threshold
    summ = wait_until(lambda: summaries_of(front), timeout=COLD_START_S, what="a summary")
    assert set(summ.values()) == {big_root}
    sid = next(iter(summ))
    assert front.rows("SELECT src_id, dst_id FROM edges WHERE kind = 'summarizes'") == [(sid, big_root)]
    conn = read_db(front.paths)
    try:  # deterministic: the same text the extractive summariser gives for this subtree
        want = summaries.extractive(reads.get_node(conn, big_root), subtrees.children(conn, big_root, 500), 120)
    finally:
        conn.close()
    content = front.rows("SELECT content FROM nodes WHERE id = ?", (sid,))[0][0]
    assert content == want and "handler_billing_0" in content and "Outline:" in content

    # compose: the subtree does not fit in 600 tokens, so the summary goes right after the root.
    from tests.unit.recall.test_compose import manifest

    text = front.ok("recall", {"op": "compose", "ids": [big_root], "budget_tokens": 600})
    m = manifest(text)
    assert sid in {n for n, _, _ in m["included"]}, text
    assert (
        text.index(f"id={big_root}")
        < text.index(f"id={sid}")
        < min((text.index(f"id={c}") for c in big_chunks if f"id={c}" in text), default=len(text))
    )

    # Forgetting one summarised chunk forgets the summary that quotes it.
    front.caller.call(protocol.Forget(node_id=big_chunks[0], reason="test"))
    assert front.rows("SELECT status, content FROM nodes WHERE id = ?", (sid,)) == [("forgotten", "")]
    assert small_root not in set(summaries_of(front).values())


def test_anthropic_summary_is_redacted_and_capped_per_day(walker_front):
    leaky = "The billing handlers route invoices. Debug key AKIAIOSFODNN7EXAMPLE was in the logs."
    with AnthropicStandIn(key="sk-ant-test", reply=leaky) as api:
        front = walker_front(
            {"summarizerModel": "auto", "anthropic": {"dailyCap": 1, "minIntervalMs": 1}},
            env={"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": api.url},
        )
        a, _ = put_file(front, "alpha.py", THRESHOLD + 1)
        b, _ = put_file(front, "beta.py", THRESHOLD + 2)
        wait_until(lambda: set(summaries_of(front).values()) == {a, b}, timeout=COLD_START_S, what="two summaries")
        got = {
            parent: (content, meta)
            for content, meta, parent in front.rows(
                "SELECT content, json_extract(metadata, '$.provider'), parent_id FROM nodes WHERE kind = 'summary'"
            )
        }
    assert len(api.requests) == 1  # the daily cap: one API summary, the other extractive
    req = api.requests[0]
    assert req["path"] == "/v1/messages" and req["headers"]["x-api-key"] == "sk-ant-test"
    assert req["headers"]["anthropic-version"] == "2023-06-01"
    assert req["body"]["messages"][0]["role"] == "user" and req["body"]["max_tokens"] == 120
    by_api = [p for p, (_, prov) in got.items() if prov == "anthropic"]
    assert len(by_api) == 1 and {prov for _, prov in got.values()} == {"anthropic", "extractive"}
    content = got[by_api[0]][0]
    assert "route invoices" in content and "AKIAIOSFODNN7EXAMPLE" not in content and "[REDACTED" in content


def test_anthropic_without_a_key_leaves_the_walker_idle_with_the_reason(tmp_path):
    from tests.support import make_paths, reap
    from tests.support import test_config as make_config
    from tests.support.actor_procs import HeartbeatSink

    paths = make_paths(tmp_path)
    sink = HeartbeatSink(paths)
    proc = start_actor(
        paths,
        make_config({"summarizerModel": "anthropic"}),
        "memtree.actors.walkers.summarize",
        "walker.summarize",
        sink.endpoint,
        extra_env={"ANTHROPIC_API_KEY": ""},
    )
    try:
        hb = sink.wait_state("walker.summarize")
        assert hb.info == {"idle": "summarizerModel is 'anthropic' but ANTHROPIC_API_KEY is not set"}
        assert proc.poll() is None
    finally:
        sink.close()
        reap(proc)
