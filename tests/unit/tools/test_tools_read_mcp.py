"""read, grep and bash through the real MCP front over real stdio (the SDK's
stdio client, as Claude Code runs it), against a real writer."""

from __future__ import annotations

import ast
import os
import re

import pytest

from memtree import tokens
from tests.support import REPO
from tests.support.front_harness import Front
from tests.support.tools_harness import numbered

REPO = REPO


@pytest.fixture
def front(tmp_path):
    f = Front(tmp_path)
    yield f
    f.close()


def _write(front, rel: str, text: str) -> None:
    full = os.path.join(front.root, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as fh:
        fh.write(text)


def _counts(front) -> tuple:
    return tuple(front.rows(f"SELECT count(*) FROM {t}")[0][0] for t in ("nodes", "audit", "edges"))


def test_read_over_stdio_returns_the_exact_symbol_and_reuses_chunks(front):
    with open(os.path.join(REPO, "actors", "base.py"), encoding="utf-8") as f:
        text = f.read()
    _write(front, "base.py", text)
    node = next(n for n in ast.parse(text).body if getattr(n, "name", "") == "run_actor")
    lines = text.split("\n")
    first = front.ok("read", {"path": "base.py", "symbol": "run_actor", "budget_tokens": 5000})
    assert numbered(first) == {i: lines[i - 1] for i in range(node.lineno, node.end_lineno + 1)}
    before = _counts(front)
    second = front.ok("read", {"path": "base.py", "symbol": "run_actor", "with_ids": True, "budget_tokens": 5000})
    assert _counts(front) == before and "chunks reused" in second
    # Native Read's form: numbered lines and one trailer naming the file's node, no chunk ids unless asked.
    # The trailer is the node id alone: path, symbol and range are on screen already.
    assert re.fullmatch(r"\[memtree \w{26}\]", first.splitlines()[-1]) and not re.search(r"L\d+-\d+ \w{26}", first)
    third = front.ok("read", {"path": "base.py", "symbol": "run_actor", "with_ids": True, "budget_tokens": 5000})
    ids = re.findall(r"L\d+-\d+ (\w{26})", second)
    assert ids and ids == re.findall(r"L\d+-\d+ (\w{26})", third)


def test_budgets_hold_over_stdio(front):
    _write(front, "big.txt", "".join(f"line {i} " + "x" * 60 + "\n" for i in range(3000)))
    for budget in (5, 100, 1000):
        out = front.ok("read", {"path": "big.txt", "lines": "1-3000", "budget_tokens": budget})
        assert tokens.count(out) <= budget
    out = front.ok("bash", {"command": "seq 1 20000", "budget_tokens": 300})
    assert tokens.count(out) <= 300 and "20000" in out


def test_secret_paths_and_bad_arguments_are_tool_errors_and_store_nothing(front):
    _write(front, ".env", "needle=secret\n")
    _write(front, "ok.txt", "needle here\n")
    front.ok("grep", {"pattern": "needle"})
    before = _counts(front)
    assert "refused" in front.error("read", {"path": ".env"})
    assert "refused" in front.error("read", {"path": "sub/../.env"})
    assert "refused" in front.error("grep", {"pattern": "needle", "path": ".env"})
    assert "regex parse error" in front.error("grep", {"pattern": "(oops"})
    assert "lines" in front.error("read", {"path": "ok.txt", "lines": "0-3"})
    assert "timeout_s" in front.error("bash", {"command": "true", "timeout_s": -1})
    assert _counts(front) == before
