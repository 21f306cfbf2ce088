"""memtree under the REAL Claude Code CLI (npm @anthropic-ai/claude-code at a
pinned version), offline against the scripted fake model API, installed
once through the plugin (a local marketplace) and once through
``memtree install``: native Read/Grep/Bash are captured and found by
memtree's search tool, whose text the model is shown; the capture heartbeat
shows no gap; a session whose capture hook is not registered shows the gap.

Fails when anything is wrong. Skips, loudly, only when the npm registry
cannot be reached to install the CLI (then `-ra` prints the reason in CI).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time

import pytest

from memtree.capture import heartbeat
from memtree.paths import compute_project, store_paths
from tests.support import PYTHON, REPO, deadline
from tests.support.claude_code import cli

pytestmark = pytest.mark.timeout(cli.RUN_TIMEOUT_S + 300)
REPO = REPO
WORD = "zebrafinch"  # in the README only: found by recall only if the Read was captured
README_LINE = f"A tiny project for driving Claude Code; it mentions the {WORD} once."


def _script(search_tool: str) -> dict:
    return {
        "side_text": "ok",
        "turns": [
            {"text": "Reading the README.", "tool_use": {"name": "Read", "input": {"file_path": "${PROJ}/README.md"}}},
            {
                "tool_use": {
                    "name": "Grep",
                    "input": {"pattern": "def greet", "path": "${PROJ}", "output_mode": "content", "-n": True},
                }
            },
            {"tool_use": {"name": "Bash", "input": {"command": "echo hello-from-bash; ls", "description": "list"}}},
            {"tool_use": {"name": search_tool, "input": {"query": WORD}}},
            {"text": "All done."},
        ],
    }


def _project(tmp_path) -> str:
    proj = str(tmp_path / "proj")
    os.makedirs(os.path.join(proj, "src"))
    with open(os.path.join(proj, "README.md"), "w") as f:
        f.write(f"# demo project\n{README_LINE}\nLine three mentions greet() so grep has something to find.\n")
    with open(os.path.join(proj, "src", "app.py"), "w") as f:
        f.write('def greet(name):\n    return f"hello {name}"\n\n\ndef main():\n    print(greet("world"))\n')
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=proj, check=True, capture_output=True)
    return proj


def _installed(tmp_path) -> tuple[str, str, dict]:
    """A fresh project with the default ``memtree install`` (hooks in
    .claude/settings.local.json, the server in the CLI's user config at local
    scope, the isolated one this CLI reads): (project, MEMTREE_HOME, env)."""
    proj, home = _project(tmp_path), str(tmp_path / "home")
    memtree_home = os.path.join(home, ".memtree")
    env = cli.base_env(home, {"MEMTREE_HOME": memtree_home})
    done = subprocess.run(
        [PYTHON, "-m", "memtree.cli", "install"],
        cwd=proj,
        capture_output=True,
        text=True,
        timeout=deadline(60),
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return proj, memtree_home, env


def _store_dir(proj: str, memtree_home: str) -> str:
    root, phash, _ = compute_project(proj)
    return store_paths(root, phash, home=memtree_home).store_dir


def _captures(store_dir: str, session: str) -> dict[str, list[str]]:
    """tool -> contents of the capture nodes memtree holds for the session."""
    import apsw

    db = apsw.Connection(os.path.join(store_dir, "store.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out: dict[str, list[str]] = {}
        for meta, content in db.execute(
            "SELECT metadata, content FROM nodes WHERE session_id = ? AND kind IN ('file_chunk', 'tool_output')",
            (session,),
        ):
            out.setdefault(json.loads(meta).get("tool"), []).append(content)
        return out
    finally:
        db.close()


def _first_capture_ms(store_dir: str, session: str) -> int:
    import apsw

    db = apsw.Connection(os.path.join(store_dir, "store.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return db.execute(
            "SELECT min(created_at) FROM nodes WHERE session_id = ? AND kind IN ('file_chunk', 'tool_output')",
            (session,),
        ).fetchone()[0]
    finally:
        db.close()


def _system_tmp_dirs() -> set[str]:
    """The CLI's per-project temp dirs in the system's temp dir (claude-<uid>/...)."""
    try:
        return set(os.listdir(os.path.join(tempfile.gettempdir(), f"claude-{os.getuid()}")))
    except FileNotFoundError:
        return set()


def _session(claude_bin, tmp_path, proj, env, allowed, search_tool) -> tuple[dict, dict[str, str]]:
    api = cli.FakeApi(_script(search_tool), str(tmp_path / "out"), proj)
    before = _system_tmp_dirs()
    try:
        result = cli.run_session(
            claude_bin,
            {**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-dummy"},
            proj,
            allowed,
            str(tmp_path / "out"),
        )
        shown = cli.tool_results(api.requests())
    finally:
        api.close()
        left = cli.reap_leftovers(str(tmp_path))
    assert left == [], f"processes left behind: {left}"
    # The CLI's temp files went under the test's HOME (CLAUDE_CODE_TMPDIR), none into /tmp.
    assert os.listdir(env["CLAUDE_CODE_TMPDIR"]) == [f"claude-{os.getuid()}"]
    assert _system_tmp_dirs() - before == set()
    return result, shown


def _checked_again(store_dir: str, env: dict, sid: str) -> dict:
    """The Stop hook's comparison run again on the whole transcript. The hook
    reads it while Claude Code may still be writing its last lines (in CI it
    once counted 2 of the 3 calls); once the CLI exited, every line is there."""
    return heartbeat.record_check(store_dir, sid, heartbeat.transcript_ids(cli.transcript_path(env, sid)))


def _assert_captured_found_and_no_gap(store_dir, result, shown, search_tool, env):
    sid = result["session_id"]
    assert set(shown) >= {"Read", "Grep", "Bash", search_tool}, shown
    # memtree's MCP tool answered, with text the model can read, from the captured Read
    assert "driving Claude Code" in shown[search_tool] and not shown[search_tool].startswith("ERROR"), shown
    assert not shown[search_tool].lstrip().startswith('{"result"'), "structured JSON instead of text"
    caps = _captures(store_dir, sid)
    assert set(caps) == {"Read", "Grep", "Bash"}, caps
    assert any(WORD in c for c in caps["Read"]) and any("hello-from-bash" in c for c in caps["Bash"])
    [slot] = [s for s in heartbeat.read_all(store_dir) if s["session"] == sid]
    # The real Stop hook ran and found no gap in what the transcript held then.
    assert 1 <= slot["transcript_calls"] <= 3 and (slot["gap"], slot["failed"]) == (0, 0), slot
    assert slot["stored"] + slot["spooled"] + slot["refused"] >= 3 and slot["checks"] >= 1, slot
    whole = _checked_again(store_dir, env, sid)
    assert (whole["transcript_calls"], whole["gap"], whole["failed"]) == (3, 0, 0), whole


def _doctor_healthy(memtree_cmd: list[str], proj: str, env: dict) -> dict:
    """`memtree doctor --json` after the session, in the CLI's environment: every check passes."""
    done = subprocess.run(
        [*memtree_cmd, "doctor", "--json"], cwd=proj, env=env, capture_output=True, text=True, timeout=deadline(300)
    )
    report = json.loads(done.stdout)
    checks = {r["check"]: r for r in report["checks"]}
    assert done.returncode == 0 and report["healthy"], checks
    assert {c for c, r in checks.items() if r["status"] == "ok"} >= {
        "hook.PostToolUse",
        "hook.PostToolUseFailure",
        "hook.Stop",
        "mcp",
        "store",
        "capture",
    }, checks
    return checks


def test_memtree_install_captures_native_tools_that_memtree_search_finds(claude_bin, tmp_path):
    proj, memtree_home, env = _installed(tmp_path)
    assert not os.path.exists(os.path.join(proj, ".mcp.json"))
    result, shown = _session(claude_bin, tmp_path, proj, env, "Read Grep Bash mcp__memtree", "mcp__memtree__recall")
    _assert_captured_found_and_no_gap(_store_dir(proj, memtree_home), result, shown, "mcp__memtree__recall", env)
    checks = _doctor_healthy([PYTHON, "-P", "-m", "memtree.cli"], proj, env)
    assert ".claude/settings.local.json" in checks["hook.PostToolUse"]["message"]


def test_a_session_without_the_capture_hook_shows_the_gap(claude_bin, tmp_path):
    proj, memtree_home, env = _installed(tmp_path)
    settings_path = os.path.join(proj, ".claude", "settings.local.json")
    with open(settings_path) as f:
        settings = json.load(f)
    for event in ("PostToolUse", "PostToolUseFailure"):  # deliberately not registered; Stop stays
        del settings["hooks"][event]
    with open(settings_path, "w") as f:
        json.dump(settings, f)
    result, shown = _session(claude_bin, tmp_path, proj, env, "Read Grep Bash mcp__memtree", "mcp__memtree__recall")
    store_dir = _store_dir(proj, memtree_home)
    [slot] = [s for s in heartbeat.read_all(store_dir) if s["session"] == result["session_id"]]
    # The real Stop hook found every call it saw uncaptured; on the whole transcript, all three.
    assert slot["seen"] == 0 and 1 <= slot["transcript_calls"] == slot["gap"] <= 3, slot
    whole = _checked_again(store_dir, env, result["session_id"])
    assert (whole["seen"], whole["transcript_calls"], whole["gap"]) == (0, 3, 3), whole
    # nothing was captured, so search cannot find it (the answer only echoes the query)
    assert "driving Claude Code" not in shown["mcp__memtree__recall"] and "0 result" in shown["mcp__memtree__recall"]
    with open(os.path.join(store_dir, "logs", "hook.log")) as f:
        assert "capture GAP" in f.read()


def test_the_plugin_from_a_local_marketplace_installs_itself_and_captures(claude_bin, tmp_path):
    proj, home = _project(tmp_path), str(tmp_path / "home")
    env = cli.base_env(home)
    t_install = cli.install_plugin(claude_bin, env, proj, cli.plugin_market(REPO, str(tmp_path / "market")))
    data = os.path.join(home, ".claude", "plugins", "data", "memtree-memtree")

    # First session, Claude Code's default MCP wait: the SessionStart hook starts the install in the
    # background and says so; the session runs on without waiting for it.
    first_env = {
        k: v for k, v in env.items() if k not in ("MCP_CONNECTION_NONBLOCKING", "MCP_CONNECT_TIMEOUT_MS", "MCP_TIMEOUT")
    }
    api = cli.FakeApi(
        {
            "side_text": "ok",
            "turns": [{"tool_use": {"name": "Bash", "input": {"command": "echo first"}}}, {"text": "done"}],
        },
        str(tmp_path / "first"),
        proj,
    )
    try:
        t0 = time.monotonic()
        first_sid = cli.run_session(
            claude_bin,
            {**first_env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-dummy"},
            proj,
            "Bash",
            str(tmp_path / "first"),
        )["session_id"]
        first_s = time.monotonic() - t0
    finally:
        api.close()
    with open(tmp_path / "first" / "claude_debug.log") as f:
        assert "memtree: setting up its Python environment" in f.read()
    stamp = os.path.join(data, "installed.manifest")
    from tests.support import wait_until

    wait_until(
        lambda: os.path.exists(stamp) or os.path.exists(os.path.join(data, "install.failed")),
        timeout=deadline(cli.RUN_TIMEOUT_S),
        interval=0.5,
        what="the plugin's background install",
    )  # pip, cold
    ready_s = time.time() - t_install
    with open(os.path.join(data, "install.log")) as f:
        log = f.read()
    assert os.path.exists(stamp), f"install failed:\n{log[-3000:]}"
    assert log.count("installed in") == 1, log  # one install, though hook and MCP launcher both asked
    left = cli.reap_leftovers(str(tmp_path))
    assert left == [], f"processes left behind: {left}"

    tool = "mcp__plugin_memtree_memtree__recall"
    result, shown = _session(claude_bin, tmp_path, proj, env, "Read Grep Bash mcp__plugin_memtree_memtree", tool)
    store_dir = _store_dir(proj, os.path.join(home, ".memtree"))
    _assert_captured_found_and_no_gap(store_dir, result, shown, tool, env)
    # The first session's command, run while the environment was still installing, was captured too:
    # the system interpreter ran the stdlib hook, which spooled it; the writer drained it.
    assert "$ echo first" in "".join(_captures(store_dir, first_sid).get("Bash", [])), _captures(store_dir, first_sid)
    first = _first_capture_ms(store_dir, result["session_id"]) / 1000 - t_install
    # The same result as `memtree install`, by the same doctor (the plugin's own copy of it).
    checks = _doctor_healthy([os.path.join(data, "venv", "bin", "memtree")], proj, env)
    assert checks["hook.PostToolUse"]["message"].startswith("registered in plugin memtree@memtree"), checks
    print(
        f"\nFIGURE plugin: first session {first_s:.1f} s (did not wait for the install); "
        f"plugin install -> environment ready {ready_s:.1f} s; plugin install -> first captured tool call "
        f"{first:.1f} s"
    )
