"""The plugin's first-session MCP server (plugin/waiting_server.py) over real
stdio with the real MCP SDK client: it answers with no tools while memtree's
environment installs, and when the environment is ready it becomes ``memtree
serve`` in the same process, which tells the client its tools changed and then
serves them on the same connection. The real CLI does the same in
tests/system/test_claude_code_first_session_tools.py."""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig

import anyio
import psutil
import pytest

from tests.support import COLD_START_S, REPO, deadline
from tests.support.claude_code import cli

pytestmark = pytest.mark.timeout(300)


def _bootstrap():
    spec = importlib.util.spec_from_file_location("plugin_bootstrap", os.path.join(REPO, "plugin", "bootstrap.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _waiting_server(tmp_path, cwd):
    """(bootstrap module, the plugin data folder, the server's stdio params): the
    environment after the install's first step. This test's venv stands for it
    (it has the SDK, and memtree too, but without the stamp it is not ready)."""
    from mcp import StdioServerParameters

    bootstrap = _bootstrap()
    data = tmp_path / "data"
    data.mkdir()
    os.symlink(sys.prefix, data / "venv")
    (data / "sdk.manifest").write_text(bootstrap.manifest())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMTREE_", "CLAUDE"))}
    env.update(CLAUDE_PLUGIN_DATA=str(data), MEMTREE_HOME=str(tmp_path / "home"))
    params = StdioServerParameters(
        command=str(data / "venv" / "bin" / "python"),
        args=["-I", os.path.join(REPO, "plugin", "waiting_server.py")],
        cwd=str(cwd),
        env=env,
    )
    return bootstrap, data, params


def test_the_waiting_server_lists_no_tools_then_hands_over_to_memtree_serve_which_offers_them(tmp_path):
    from mcp import ClientSession, stdio_client

    project = tmp_path / "proj"
    project.mkdir()
    bootstrap, data, params = _waiting_server(tmp_path, project)
    changed = anyio.Event()
    seen: dict = {}

    async def on_message(message) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    def server_process() -> psutil.Process:
        [proc] = psutil.Process().children()
        return proc

    async def session():
        with open(tmp_path / "server-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as client:
                    init = await client.initialize()
                    seen["list_changed"] = init.capabilities.tools.list_changed
                    seen["before"] = {t.name for t in (await client.list_tools()).tools}
                    early = await client.call_tool("recall", {"query": "anything"})
                    seen["early"] = (early.is_error, early.content[0].text)
                    waiting = server_process()
                    seen["waiting"] = (waiting.pid, waiting.cmdline())
                    assert not changed.is_set()
                    # The install finishes: the link to site-packages, then the stamp.
                    os.symlink(sysconfig.get_paths()["purelib"], data / "lib")
                    (data / "installed.manifest").write_text(bootstrap.manifest())
                    with anyio.fail_after(deadline(COLD_START_S * 2)):
                        await changed.wait()
                    seen["after"] = {t.name for t in (await client.list_tools()).tools}
                    served = server_process()
                    seen["served"] = (served.pid, served.cmdline())
                    answer = await client.call_tool("recall", {"query": "anything at all"})
                    seen["answer"] = (answer.is_error, answer.content[0].text)

    try:
        anyio.run(session)
    finally:
        left = cli.reap_leftovers(str(tmp_path))
    assert left == [], f"processes left behind: {left}"
    assert seen["list_changed"] is True
    assert seen["before"] == set(), seen  # nothing offered before the environment is ready...
    assert seen["early"][0] is True and "still setting up" in seen["early"][1], seen
    assert seen["after"] == {"read", "grep", "bash", "recall"}, seen  # ...all of it after
    # The same process, now memtree serve: no second server started, none left behind.
    assert seen["served"][0] == seen["waiting"][0], seen
    assert "waiting_server.py" in " ".join(seen["waiting"][1]), seen
    assert seen["served"][1][1:] == ["-E", "-P", "-m", "memtree.cli", "serve"], seen
    assert seen["answer"][0] is False and "internal error" not in seen["answer"][1], seen
    with open(tmp_path / "server-stderr.log") as f:
        assert "handing the connection to memtree serve" in f.read()


def test_the_waiting_server_says_when_the_install_failed_and_exits_when_the_client_leaves(tmp_path):
    from mcp import ClientSession, stdio_client

    _, data, params = _waiting_server(tmp_path, tmp_path)
    seen: dict = {}

    async def session():
        with open(tmp_path / "server-stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as client:
                    await client.initialize()
                    before = await client.call_tool("recall", {"query": "x"})
                    seen["before"] = before.content[0].text
                    (data / "install.failed").write_text("pip failed\n")
                    with anyio.fail_after(deadline(60)):
                        while True:  # the server looks at the install's files twice a second
                            after = await client.call_tool("recall", {"query": "x"})
                            if "could not install" in after.content[0].text:
                                break
                            await anyio.sleep(0.2)
                    seen["after"] = (after.is_error, after.content[0].text)
                    seen["tools"] = (await client.list_tools()).tools

    try:
        anyio.run(session)
    finally:
        left = cli.reap_leftovers(str(tmp_path))
    assert left == [], f"processes left behind: {left}"
    assert "still setting up" in seen["before"], seen  # the positive control: before the failure
    assert seen["after"][0] is True and str(data / "install.log") in seen["after"][1], seen
    assert seen["tools"] == [], seen
