"""`memtree serve` as Claude Code runs it: the real front over real MCP stdio,
the supervisor spawning the front, the writer and the walkers."""

from __future__ import annotations

import os
import time

import anyio
import psutil
from anyio.from_thread import start_blocking_portal

from tests.support import COLD_START_S, PYTHON, deadline, wait_until
from tests.support.front_harness import ids_in


def test_serve_answers_mcp_on_stdio_and_stops_every_child_when_the_client_leaves(system_factory, monkeypatch):
    import mcp.client.stdio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    # The SDK escalates to SIGTERM on the group 2 s after closing stdin; give a
    # loaded box longer, so what is seen is memtree's own shutdown.
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", COLD_START_S)

    s = system_factory
    s.write_config()
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "memtree.cli", "serve"], cwd=s.project, env={**os.environ, **s.env}
    )
    seen = {}

    async def session():
        with open(os.path.join(str(s.home), "client-stderr.log"), "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    tools = await client.list_tools()
                    seen["tools"] = {t.name for t in tools.tools}
                    actors = await anyio.to_thread.run_sync(lambda: s.wait_running(["mcp", *s.expected]))
                    seen["pids"] = {a["name"]: a["pid"] for a in actors}
                    seen["sup"] = actors[0]["supervisor_pid"]
        # leaving the block closes the server's stdin (then SIGTERM/SIGKILL after a grace period)

    anyio.run(session)
    assert seen["tools"], "the front listed no tools"
    pids = [*seen["pids"].values(), seen["sup"]]
    wait_until(
        lambda: not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE],
        timeout=COLD_START_S,
        what="every process of the session gone",
    )
    log = s.log_tail(lines=60)
    # It shut down by itself, cleanly, in reverse start order (the front last or already gone).
    assert "supervisor: exited" in log, log
    assert "SIGKILL" not in log, log


def test_the_writer_starts_beside_the_front_and_the_walkers_after_it(system_factory):
    import subprocess

    s = system_factory
    # A stand-in front READY at once: the real one's SDK import takes a second
    # or more, and the walkers wait for its READY; what matters is that the
    # writer does not wait for either.
    s.write_config(actors={"mcp": {"module": "tests.support.actors.sleepy"}})
    proc = s.serve(front=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    s.wait_running(["mcp", *s.expected])
    lines = [ln.split("]: ", 1)[1] for ln in s.log_tail(lines=200).splitlines() if "]: " in ln]

    def first(prefix: str) -> int:
        return next(i for i, ln in enumerate(lines) if ln.startswith(prefix))

    # A writer started only after the front's READY would leave a short
    # session's hooks spooling.
    assert first("writer: STARTING") < first("mcp: RUNNING")
    assert first("mcp: STARTING") < first("writer: STARTING")
    walkers = [n for n in s.expected if n.startswith("walker.")]
    assert walkers and all(first(f"{w}: STARTING") > first("writer: STARTING") for w in walkers)
    proc.stdin.close()
    assert proc.wait(timeout=COLD_START_S) == 0
    proc.stdout.close()


def _own_env(tmp_path) -> dict:
    """This environment without any MEMTREE_ setting, a home of the test's own and this tree importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(MEMTREE_HOME=str(tmp_path / "home"), PYTHONPATH=os.getcwd())
    return env


def _memtree(cwd, env: dict, *args: str, timeout: float, **kw):
    import subprocess

    return subprocess.run(
        [PYTHON, "-m", "memtree.cli", *args],
        cwd=str(cwd),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


def test_a_note_through_memtree_serve_goes_live_via_the_filter_and_is_searchable(tmp_path):
    from mcp import Client, StdioServerParameters

    project = tmp_path / "project"
    project.mkdir()
    env = _own_env(tmp_path)
    params = StdioServerParameters(command=PYTHON, args=["-m", "memtree.cli", "serve"], cwd=str(project), env=env)
    with start_blocking_portal() as portal:
        # Allows for cold interpreters (supervisor, front, writer, walkers) on 2 cores.
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3)) as client:

            def call(name, args):
                res = portal.call(client.call_tool, name, args)
                text = "\n".join(c.text for c in res.content)
                assert not res.is_error, text
                return text

            # The writer may still be starting: a note is retried until it is acknowledged.
            until = time.monotonic() + COLD_START_S * 2
            while True:
                res = portal.call(
                    client.call_tool, "recall", {"note": "The gecko service caches DNS answers for thirty seconds."}
                )
                if not res.is_error or time.monotonic() > until:
                    break
                time.sleep(0.2)
            assert not res.is_error, res.content[0].text
            nid = res.content[0].text.split()[0]
            found = set()
            while time.monotonic() < until and nid not in found:
                found = ids_in(call("recall", {"query": "gecko DNS"}))
                time.sleep(0.1)
            assert found == {nid}
            assert "thirty seconds" in call("recall", {"ids": [nid]})


def test_serve_tools_recall_lists_only_recall_and_still_serves_notes(tmp_path):
    """`memtree serve --tools recall` (what `memtree install --tools recall` registers):
    tools/list shows recall alone; note (folded into recall) still answers by
    name; read is not served. The default listing is test_front's positive control."""
    from mcp import Client, StdioServerParameters

    project = tmp_path / "project"
    project.mkdir()
    env = _own_env(tmp_path)
    params = StdioServerParameters(
        command=PYTHON, args=["-m", "memtree.cli", "serve", "--tools", "recall"], cwd=str(project), env=env
    )
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3)) as client:
            assert {t.name for t in portal.call(client.list_tools).tools} == {"recall"}

            def front_info():
                import json

                done = _memtree(project, env, "ctl", "status", "--json", timeout=deadline(60))
                actors = json.loads(done.stdout or "{}").get("actors", [])
                return [a["info"] for a in actors if a["name"] == "mcp" and a.get("info")]

            # `ctl status` names the front's tools when they are fewer than all (its NOTE column).
            assert wait_until(front_info, timeout=COLD_START_S * 2, interval=0.5, what="the front's heartbeat") == [
                {"tools": "recall"}
            ]
            res = portal.call(client.call_tool, "read", {"path": "x.py"})
            assert res.is_error and res.content[0].text == "unknown tool 'read'; memtree has recall"
            until = time.monotonic() + COLD_START_S * 2  # the writer may still be starting
            while True:
                res = portal.call(client.call_tool, "note", {"text": "The newt queue holds at most forty jobs."})
                if not res.is_error or time.monotonic() > until:
                    break
                time.sleep(0.2)
            assert not res.is_error, res.content[0].text
            assert res.content[0].text.split()[1:3] == ["note", "pending"]


def test_serve_refuses_an_unknown_tool_name_in_one_line(tmp_path):
    import subprocess

    env = _own_env(tmp_path)
    out = _memtree(
        tmp_path, env, "serve", "--tools", "recall,recal", timeout=COLD_START_S * 3, stdin=subprocess.DEVNULL
    )
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        "memtree serve: unknown tool 'recal' in --tools; memtree's tools are read, grep, bash, recall\n"
    )
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("supervisor.log"))
