"""A real writer process and a Services instance for driving the wrapped tools
(read, grep, bash) directly, plus row counts for "nothing was stored" checks."""

from __future__ import annotations

import asyncio
import os
import re

from memtree.front.services import Services
from tests.support import make_paths, reap, test_config
from tests.support.actor_procs import rows, start_writer


class Harness:
    def __init__(self, tmp_path, overrides: dict | None = None):
        self.paths = make_paths(tmp_path)
        self.root = self.paths.project_root
        self.config = test_config(overrides)
        self.writer = start_writer(self.paths, self.config)

    def close(self) -> None:
        reap(self.writer)

    def run(self, tool, *args, **kwargs):
        """Run one tool call on a fresh event loop with its own Services."""

        async def main():
            svc = Services(self.config, self.paths, session_id="test-session", src="test")
            try:
                return await tool(svc, *args, **kwargs)
            finally:
                svc.close()
                svc.zctx.destroy(linger=0)

        return asyncio.run(main())

    def write(self, rel: str, text: str) -> str:
        full = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w", encoding="utf-8") as f:
            f.write(text)
        return full

    def rows(self, sql: str, params=()) -> list[tuple]:
        return rows(self.paths, sql, params)

    def counts(self) -> tuple[int, int, int]:
        """(nodes, audit, edges): equal before and after means nothing was stored."""
        if not os.path.exists(self.paths.db):
            return (0, 0, 0)
        return tuple(self.rows(f"SELECT count(*) FROM {t}")[0][0] for t in ("nodes", "audit", "edges"))

    def refused(self, tool, *args, **kwargs) -> str:
        """Run ``tool`` expecting a BadRequest, and nothing stored by it: the error's message."""
        import pytest

        from memtree.errors import BadRequest

        before = self.counts()
        with pytest.raises(BadRequest) as e:
            self.run(tool, *args, **kwargs)
        assert self.counts() == before
        return e.value.message


def numbered(out: str) -> dict[int, str]:
    """The ``N\t`` numbered lines of a tool answer (native Read's form): {line number: text}."""
    got = {}
    for line in out.splitlines():
        head, tab, text = line.partition("\t")
        if tab and head.isdigit():
            got[int(head)] = text
    return got


def stored_node_id(out: str) -> str:
    """The node id a grep/bash answer reports its stored result as (its
    trailer, or the recall call a cut answer names)."""
    return re.search(r'(?:memtree |recall\(ids=")([0-9A-Z]{26})', out).group(1)
