"""The broad eval's check that its figures are what the MCP ``recall`` tool answers.

broad_eval.py scores ``search.run`` called as memtree.recall.retrieval calls
it, thousands of times. This check runs a fixed sample of the same queries
through the tool itself: a real writer and a real embed walker serving the
store, ``memtree.front.services.Services`` as the front builds it (query
embeddings over the walker's socket, within walkers.embedQueryTimeoutMs),
``retrieval.recall(svc, query=..., mode=...)`` and the front's
``budget.enforce`` at the default budget. From the text an agent would read it
takes the node ids of the hits, in order, and compares them with the eval's.
A disagreement means the tool answers differently from what the eval scores
(logic added above search.run, a degraded embedding, ...): the figures would
not be the agent's.
"""

from __future__ import annotations

import re

from memtree.eval.recall_eval import eval_config, start_actor, start_writer, stop

_ID_LINE = re.compile(r"^([0-9A-HJKMNP-TV-Z]{26}) ", re.M)
MODES = ("keyword", "hybrid")


async def _wait_for_walker(svc, deadline_s: float = 60.0) -> None:
    import anyio

    with anyio.fail_after(deadline_s):
        while await svc.embed_query("warm up", timeout_ms=2000) is None:
            await anyio.sleep(0.2)


def tool_answers(where: str, queries: list[str]) -> dict:
    """{mode: {query: (ids shown within the default budget, ids before the budget, no-hits said)}}"""
    import anyio

    from memtree.front.services import Services
    from memtree.recall import retrieval
    from memtree.text import budget

    config = eval_config()
    writer, caller, paths = start_writer(where, config)
    caller.close()
    walker = start_actor("memtree.actors.walkers.embed", "walker.embed", paths, config)
    out: dict = {m: {} for m in MODES}

    async def run():
        svc = Services(config, paths, session_id="broad-eval")
        try:
            await _wait_for_walker(svc)
            for q in queries:
                for mode in MODES:
                    text = await retrieval.recall(svc, query=q, mode=mode)
                    shown = budget.enforce(text, budget.DEFAULT_BUDGET)
                    title = text.split("\n", 1)[0]
                    out[mode][q] = (
                        _ID_LINE.findall(shown),
                        _ID_LINE.findall(text),
                        "no hits" in title or ": 0 result(s)" in title,
                        "degraded" in title,
                    )
        finally:
            svc.close()

    try:
        anyio.run(run)
    finally:
        stop(walker)
        stop(writer)
    return out


def compare(tool: dict, eval_ids: dict) -> dict:
    """Per mode: queries compared, same hit ids in the same order, same
    emptiness, degraded answers, and hits an agent sees within the default
    budget (mean) against the eval's top 10."""
    out = {}
    for mode, answers in tool.items():
        same = same_empty = degraded = 0
        shown = []
        diffs = []
        for q, (ids_shown, ids_all, empty, deg) in answers.items():
            mine, mine_empty = eval_ids[mode][q]
            same += ids_all == mine
            same_empty += empty == mine_empty
            degraded += deg
            shown.append(len(ids_shown))
            if ids_all != mine:
                diffs.append(q)
        n = len(answers)
        out[mode] = {
            "n": n,
            "same_ids": same,
            "same_emptied": same_empty,
            "degraded": degraded,
            "mean_hits_within_budget": round(sum(shown) / max(n, 1), 2),
            "differ": diffs[:5],
        }
    return out
