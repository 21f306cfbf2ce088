"""A native Read captured by the real hook is as recallable as the wrapped read
(issue 16, point 0): cut by symbol, so a search names the method and compose
returns its lines within a small budget.

The module is real code nobody here wrote: the interpreter's own inspect.py
(3,300 lines), copied into the project and Read whole, as Claude Code's
PostToolUse payload carries it. The question names the method only in plain
words, as an agent asks when it does not know the name.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import re

import anyio

from memtree.eval import payloads
from memtree.ops.install import fallback_server_entry
from tests.support import COLD_START_S, wait_until
from tests.support.actor_procs import rows
from tests.support.front_harness import ids_in
from tests.support.hook_support import run_hook
from tests.system.test_decoy_project import serving

METHOD = ("BoundArguments", "apply_defaults")
QUESTION = "apply defaults to the arguments that were not bound"
BUDGET = 2000


def _method_lines(text: str) -> tuple[int, int]:
    cls = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == METHOD[0])
    fn = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == METHOD[1])
    return fn.lineno, fn.end_lineno


def _read_payload(path: str, text: str) -> dict:
    return payloads.read(path, text, os.path.dirname(path), "sess-hook-recall", "toolu_hook_recall")


def _text(res) -> str:
    return "\n".join(getattr(c, "text", "") for c in res.content)


async def _recall(s, path: str, text: str, seen: dict) -> None:
    async with serving(s, fallback_server_entry(), {}) as client:

        async def recall(args: dict) -> str:
            res = await client.call_tool("recall", args)
            assert not res.is_error, _text(res)
            return _text(res)

        def capture() -> list[tuple]:
            run_hook(s, _read_payload(path, text), MEMTREE_HOOK_TIMEOUT_MS="10000")
            return wait_until(
                lambda: (
                    (
                        got := rows(
                            s.paths,
                            "SELECT status, metadata FROM nodes WHERE kind = 'file_chunk' AND source_uri LIKE ?",
                            (f"file://{path}#%",),
                        )
                    )
                    and all(st != "pending" for st, _ in got)
                    and got
                ),
                timeout=COLD_START_S,
                what="the Read's chunks filtered",
            )

        seen["chunks"] = [(st, json.loads(m)) for st, m in await anyio.to_thread.run_sync(capture)]
        seen["search"] = await recall({"query": QUESTION})
        top = re.search(r"^(\w{26}) file_chunk", seen["search"], re.MULTILINE).group(1)
        seen["top"] = top
        seen["compose"] = await recall({"ids": top, "query": QUESTION, "opts": f"op=compose budget={BUDGET}"})
        root = rows(s.paths, "SELECT parent_id FROM nodes WHERE id = ?", (top,))[0][0]
        seen["root"] = await recall({"ids": root})  # the file as stored: its chunks in line order


def test_a_native_read_of_a_long_module_is_cut_by_symbol_and_recall_returns_the_method_asked_about(system_factory):
    s = system_factory
    with open(inspect.__file__, encoding="utf-8") as f:
        text = f.read()
    assert text.count("\n") > 3000
    path = os.path.join(s.project, "inspect_copy.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    s.write_config()
    seen: dict = {}
    anyio.run(_recall, s, path, text, seen)

    # Symbol-level chunks: every chunk of the Read names its symbol or is module code, together the whole file.
    chunks = sorted(seen["chunks"], key=lambda c: c[1]["start"])
    assert len(chunks) > 50 and all(st == "live" for st, _ in chunks)
    assert [(m["start"], m["end"]) for _, m in chunks] == [
        (a, b) for a, b in zip([1] + [m["end"] + 1 for _, m in chunks[:-1]], [m["end"] for _, m in chunks])
    ]
    assert chunks[-1][1]["end"] == text.count("\n") and all(m["read"] == [1, chunks[-1][1]["end"]] for _, m in chunks)
    start, end = _method_lines(text)
    [(_, mine)] = [c for c in chunks if c[1]["symbol"] == ".".join(METHOD)]
    assert mine["start"] <= start and mine["end"] >= end and mine["end"] - mine["start"] < 60

    # The first hit is that method's chunk, named as the symbol it is.
    first = seen["search"].split("\n")[1]
    assert first.startswith(seen["top"]) and first.endswith(f"#L{mine['start']}-{mine['end']} " + ".".join(METHOD)), (
        seen["search"][:600]
    )
    # compose within 2,000 tokens returns every line of the method, and says it stayed in budget.
    out = seen["compose"]
    body = [ln for ln in text.split("\n")[start - 1 : end] if ln.strip()]
    assert all(ln in out for ln in body), out[:800]
    total = int(re.search(r"manifest: budget=(\d+) total=(\d+)", out).group(2))
    assert total <= BUDGET and seen["top"] in ids_in(out)
    # The file's root shows the file put together again (cut by the answer's budget, which says so).
    n = chunks[-1][1]["end"]
    assert f"lines 1-{n} ({n} stored, from {len(chunks)} chunk(s))" in seen["root"].split("\n")[0]
    assert text.split("\n")[0] in seen["root"]
