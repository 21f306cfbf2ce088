"""End to end as Claude Code runs it: `memtree serve` over real stdio, the
supervisor spawning the front, the writer and the walkers."""

from __future__ import annotations

import os
import time

from anyio.from_thread import start_blocking_portal

from tests.front_harness import ids_in
from tests.support import COLD_START_S, PYTHON, deadline, wait_until


def test_a_note_through_memtree_serve_goes_live_via_the_filter_and_is_searchable(tmp_path):
    from mcp import Client, StdioServerParameters

    project = tmp_path / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(MEMTREE_HOME=str(tmp_path / "home"), PYTHONPATH=os.getcwd())
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
                res = portal.call(client.call_tool, "recall",
                                  {"note": "The gecko service caches DNS answers for thirty seconds."})
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(MEMTREE_HOME=str(tmp_path / "home"), PYTHONPATH=os.getcwd())
    params = StdioServerParameters(command=PYTHON, args=["-m", "memtree.cli", "serve", "--tools", "recall"],
                                   cwd=str(project), env=env)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3)) as client:
            assert {t.name for t in portal.call(client.list_tools).tools} == {"recall"}

            def front_info():
                import json
                import subprocess

                done = subprocess.run([PYTHON, "-m", "memtree.cli", "ctl", "status", "--json"], cwd=str(project),
                                      env=env, capture_output=True, text=True, timeout=deadline(60))
                actors = json.loads(done.stdout or "{}").get("actors", [])
                return [a["info"] for a in actors if a["name"] == "mcp" and a.get("info")]

            # `ctl status` names the front's tools when they are fewer than all (its NOTE column).
            assert wait_until(front_info, timeout=COLD_START_S * 2, interval=0.5,
                              what="the front's heartbeat") == [{"tools": "recall"}]
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

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(MEMTREE_HOME=str(tmp_path / "home"), PYTHONPATH=os.getcwd())
    out = subprocess.run([PYTHON, "-m", "memtree.cli", "serve", "--tools", "recall,recal"], cwd=str(tmp_path),
                         env=env, capture_output=True, text=True, timeout=COLD_START_S * 3, stdin=subprocess.DEVNULL)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == ("memtree serve: unknown tool 'recal' in --tools; memtree's tools are "
                          "read, grep, bash, recall\n")
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("supervisor.log"))
