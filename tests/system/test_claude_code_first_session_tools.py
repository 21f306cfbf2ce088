"""The plugin's first session gets memtree's tools as soon as its environment
is ready, on the REAL Claude Code CLI (pinned version, offline against the
scripted fake model API): the waiting server answers the CLI with no tools
while the environment installs, hands the connection to ``memtree serve``,
which sends ``notifications/tools/list_changed``; the CLI lists the tools
again and the model's next request offers them, and a call goes through, in
the same session. Skips, loudly, only when the npm registry is unreachable."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.support import REPO
from tests.support.claude_code import cli

pytestmark = pytest.mark.timeout(cli.RUN_TIMEOUT_S + 300)
SERVER = "mcp__plugin_memtree_memtree__"
TOOLS = {f"{SERVER}{n}" for n in ("read", "grep", "bash", "recall")}
CHANGED = "Received tools/list_changed notification"  # what the CLI logs when the notification arrives
FAILED = 'MCP server "plugin:memtree:memtree": Connection failed'  # it gave up on the server
# The same as grep patterns that do not match themselves: the debug log also holds the command.
CHANGED_RE = "Received tools/list[_]changed notification"
FAILED_RE = "plugin:memtree:memtree.: Connection fail[e]d"


def _project(tmp_path) -> str:
    proj = str(tmp_path / "proj")
    os.makedirs(proj)
    with open(os.path.join(proj, "README.md"), "w") as f:
        f.write("# demo\nThe first session of the plugin mentions the kestrel once.\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=proj, check=True, capture_output=True)
    return proj


def _mcp_tools(request: dict) -> set[str]:
    body = request.get("body") if isinstance(request.get("body"), dict) else {}
    return {t["name"] for t in body.get("tools", []) if t.get("name", "").startswith(SERVER)}


def test_the_first_plugin_session_is_offered_memtrees_tools_once_its_environment_is_ready(claude_bin, tmp_path):
    proj, home = _project(tmp_path), str(tmp_path / "home")
    env = cli.base_env(home)
    cli.install_plugin(claude_bin, env, proj, cli.plugin_market(REPO, str(tmp_path / "market")))
    data = os.path.join(home, ".claude", "plugins", "data", "memtree-memtree")
    out = str(tmp_path / "out")
    debug = os.path.join(out, "claude_debug.log")
    # Claude Code's own MCP start (non-blocking: the first request does not wait for the
    # server); MCP_TIMEOUT stays long, as the install's first step (the SDK) can take
    # longer than the 30 s default on a loaded box (the message says what happens then).
    first_env = {k: v for k, v in env.items() if k not in ("MCP_CONNECTION_NONBLOCKING", "MCP_CONNECT_TIMEOUT_MS")}
    # The model's first command waits (as a user would, reading the first message) until the
    # CLI has been told the tools changed, and a little for it to list them again.
    wait = (
        f"for i in $(seq 1100); do grep -qE '{CHANGED_RE}|{FAILED_RE}' '{debug}' && break; sleep 0.5; done; "
        "sleep 2; echo waited"
    )
    script = {
        "side_text": "ok",
        "turns": [
            {"tool_use": {"name": "Read", "input": {"file_path": "${PROJ}/README.md"}}},
            {"tool_use": {"name": "Bash", "input": {"command": wait, "description": "wait", "timeout": 600000}}},
            {"tool_use": {"name": f"{SERVER}recall", "input": {"query": "kestrel"}}},
            {"text": "All done."},
        ],
    }
    api = cli.FakeApi(script, out, proj)
    t0 = time.monotonic()
    try:
        result = cli.run_session(
            claude_bin,
            {**first_env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-dummy"},
            proj,
            f"Read Bash {SERVER.rstrip('_')}",
            out,
        )
        session_s = time.monotonic() - t0
        requests = [r for r in api.requests() if isinstance(r.get("body"), dict) and r["body"].get("messages")]
        shown = cli.tool_results(api.requests())
    finally:
        api.close()
        left = cli.reap_leftovers(str(tmp_path))
    assert left == [], f"processes left behind: {left}"
    with open(debug) as f:
        log = f.read()
    with open(os.path.join(data, "install.log")) as f:
        install_log = f.read()
    # The first message says what happens: the tools join this session, or the next one if the
    # first step is too slow for Claude Code's wait.
    assert "memtree: setting up its Python environment" in log, log[-3000:]
    assert "memtree's tools join this session when the setup is done" in log, log[-3000:]
    assert "at most 60 s), they come with the next session" in log, log[-3000:]
    assert install_log.count("installed in") == 1 and "MCP SDK in after" in install_log, install_log
    # The install's first step must beat the CLI's wait for a starting server (at most 60 s, the
    # initialize request's own timeout, whatever MCP_TIMEOUT says).
    assert FAILED not in log, [ln for ln in install_log.splitlines() if "WARNING" not in ln]
    main = [r for r in requests if r["body"].get("tools")]
    # Before the environment was ready the model was offered none of memtree's tools...
    assert _mcp_tools(main[0]) == set(), [_mcp_tools(r) for r in main]
    # ...and in the same session, once it was, all of them; the call went through to memtree.
    assert _mcp_tools(main[-1]) == TOOLS, [_mcp_tools(r) for r in main]
    assert CHANGED in log, log[-3000:]
    recall = shown.get(f"{SERVER}recall", "")
    assert recall and not recall.startswith("ERROR") and "still setting up" not in recall, shown
    assert result.get("result") == "All done.", result
    # The server process Claude Code started became memtree serve: one pid, one process tree.
    print(
        f"\nFIGURE plugin first session: tools offered in the same session; session {session_s:.1f} s; "
        f"{json.dumps([len(_mcp_tools(r)) for r in main])} memtree tools per request"
    )
