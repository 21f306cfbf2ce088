"""`memtree serve` as Claude Code runs it: the real front over real MCP stdio."""

import os

import anyio
import psutil

from tests.support import COLD_START_S, PYTHON, wait_until


def test_serve_answers_mcp_on_stdio_and_stops_every_child_when_the_client_leaves(system_factory, monkeypatch):
    import mcp.client.stdio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    # The SDK escalates to SIGTERM on the group 2 s after closing stdin; give a
    # loaded box longer, so what is seen is memtree's own shutdown.
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", COLD_START_S)

    s = system_factory
    s.write_config()
    params = StdioServerParameters(command=PYTHON, args=["-m", "memtree.cli", "serve"], cwd=s.project,
                                   env={**os.environ, **s.env})
    seen = {}

    async def session():
        with open(os.path.join(str(s.home), "client-stderr.log"), "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    tools = await client.list_tools()
                    seen["tools"] = {t.name for t in tools.tools}
                    actors = await anyio.to_thread.run_sync(
                        lambda: s.wait_running(["mcp", *s.expected]))
                    seen["pids"] = {a["name"]: a["pid"] for a in actors}
                    seen["sup"] = actors[0]["supervisor_pid"]
        # leaving the block closes the server's stdin (then SIGTERM/SIGKILL after a grace period)

    anyio.run(session)
    assert seen["tools"], "the front listed no tools"
    pids = [*seen["pids"].values(), seen["sup"]]
    wait_until(lambda: not [p for p in pids if psutil.pid_exists(p)
                            and psutil.Process(p).status() != psutil.STATUS_ZOMBIE],
               timeout=COLD_START_S, what="every process of the session gone")
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
    s.write_config(actors={"mcp": {"module": "tests.actors.sleepy"}})
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
