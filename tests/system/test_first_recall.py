"""A session's first recall is hybrid even while the embed walker is still loading.

Claude Code starts ``memtree serve`` and may call ``recall`` as soon as the tools are
listed; the embed walker may not have its model yet (here an Ollama stand-in whose
first answer, the walker's dimension probe, takes 3 s: a cold Ollama loading a model).
The front the supervisor started waits for that first query embedding once, instead of
answering keyword-only ("no query embedding from the embed walker within 300 ms").
"""

from __future__ import annotations

import os

import anyio

from memtree.ops.install import fallback_server_entry
from tests.support import COLD_START_S
from tests.support.ollama_standin import OllamaStandIn


def _text(res) -> str:
    return "\n".join(getattr(c, "text", "") for c in res.content)


def test_the_first_recall_of_a_session_waits_for_the_walker_loading_its_model(system_factory):
    from mcp import Client, StdioServerParameters

    s = system_factory
    with OllamaStandIn(first_delay_s=3.0) as ollama:
        s.write_config({"embeddingModel": "ollama:test-embed", "ollama": {"url": ollama.url}})
        entry = fallback_server_entry()
        params = StdioServerParameters(
            command=entry["command"], args=entry["args"], cwd=s.project, env={**os.environ, **s.env}
        )

        async def first_recall() -> tuple[str, int]:
            async with Client(params, read_timeout_seconds=COLD_START_S * 3) as client:
                res = await client.call_tool("recall", {"query": "alpha beta gamma"})
                assert not res.is_error, _text(res)
                # How many embed requests had reached the stand-in when the answer came.
                return _text(res), len([r for r in ollama.requests if r["path"] == "/api/embed"])

        text, embeds = anyio.run(first_recall)
    assert "degraded" not in text, text
    assert text.startswith("search 'alpha beta gamma' (hybrid)"), text
    assert embeds == 2, embeds  # the probe, then this query's embedding: the walker was still loading at the call
