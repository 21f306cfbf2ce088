"""A real writer process, a real MCP front process over real stdio (the SDK's
stdio client, as Claude Code runs it), and a direct writer caller for seeding.

The MCP client lives on an anyio blocking portal so tests stay synchronous.
"""

from __future__ import annotations

import os
import re
import shlex

from anyio.from_thread import start_blocking_portal

from memtree import protocol
from memtree.actors.base import ActorContext
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, PYTHON, deadline_ms, make_paths, reap, test_config
from tests.support.actor_procs import rows, start_writer


class Front:
    def __init__(self, tmp_path, overrides: dict | None = None, with_writer: bool = True):
        self.paths = make_paths(tmp_path)
        self.root = self.paths.project_root
        self.config = test_config(overrides)
        self.writer = start_writer(self.paths, self.config) if with_writer else None
        self.caller = Caller(self.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._client_cm = None
        try:
            self._open_client()
        except BaseException:
            self.close()
            raise

    def _open_client(self) -> None:
        from mcp import Client, StdioServerParameters

        env = dict(os.environ)
        env.update(ActorContext("mcp", self.paths, self.config, None).child_env())
        env["PYTHONPATH"] = os.getcwd()
        log = self.paths.log_file("mcp")
        # The front's stderr is its log, as under the supervisor.
        cmd = f"exec {shlex.quote(PYTHON)} -m memtree.actors.mcp_front 2>>{shlex.quote(log)}"
        params = StdioServerParameters(command="/bin/sh", args=["-c", cmd], env=env, cwd=self.root)
        # Allows for a cold interpreter importing the mcp SDK on a loaded box.
        self._client_cm = self.portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3))
        self.client = self._client_cm.__enter__()

    def close(self) -> None:
        if self._client_cm is not None:
            try:
                self._client_cm.__exit__(None, None, None)
            finally:
                self._client_cm = None
        self._portal_cm.__exit__(None, None, None)
        self.caller.close()
        if self.writer is not None:
            reap(self.writer)

    # -- MCP ----------------------------------------------------------------------
    def call(self, name: str, args: dict | None = None) -> tuple[bool, str]:
        """(is_error, text) of one tool call over stdio."""
        res = self.portal.call(self.client.call_tool, name, args or {})
        text = "\n".join(c.text for c in res.content if getattr(c, "type", "") == "text")
        return bool(res.is_error), text

    def ok(self, name: str, args: dict | None = None) -> str:
        err, text = self.call(name, args)
        assert not err, f"{name}({args}) failed: {text}"
        return text

    def error(self, name: str, args: dict | None = None) -> str:
        err, text = self.call(name, args)
        assert err, f"{name}({args}) should have failed, got: {text}"
        return text

    def tools(self):
        return self.portal.call(self.client.list_tools).tools

    # -- seeding through the writer ---------------------------------------------------
    def add(self, content: str, kind: str = "note", status: str = "live", **kw) -> str:
        nid = self.caller.call(protocol.AddNode(kind=kind, content=content, **kw))["id"]
        if status != "pending":
            self.set_status([nid], status)
        return nid

    def set_status(self, ids: list[str], status: str) -> None:
        self.caller.call(protocol.SetStatus(ids=ids, status=status, reason="test"))

    def edge(self, src: str, dst: str, kind: str) -> None:
        self.caller.call(protocol.AddEdges(edges=[{"src": src, "dst": dst, "kind": kind}]))

    def rows(self, sql: str, params=()) -> list[tuple]:
        return rows(self.paths, sql, params)

    def snapshot(self) -> tuple:
        """Everything a bad call must leave unchanged."""
        return (
            self.rows("SELECT id, status, content, parent_id FROM nodes ORDER BY id"),
            self.rows("SELECT count(*) FROM audit")[0][0],
            self.rows("SELECT count(*) FROM edges")[0][0],
            self.rows("SELECT count(*) FROM tombstones")[0][0],
        )


_ULID = re.compile(r"(?<![0-9A-Z])[0-9A-HJKMNP-TV-Z]{26}(?![0-9A-Z])")


def module_front(name: str):
    """A module-scoped ``front`` fixture: one Front (in a temp dir named ``name``) shared by the module's tests."""
    import pytest

    @pytest.fixture(scope="module")
    def front(tmp_path_factory):
        f = Front(tmp_path_factory.mktemp(name))
        yield f
        f.close()

    return front


def ids_in(text: str) -> set[str]:
    """Node ids appearing in an answer."""
    return set(_ULID.findall(text))
