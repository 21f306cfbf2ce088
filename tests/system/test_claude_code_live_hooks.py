"""PostCompact and FileChanged under the REAL Claude Code CLI (2.1.197), offline against the
scripted fake API, with memtree installed by `memtree install`.

What 2.1.197 does (checked here and by hand with a logging hook, 2026-12-01):
- SessionStart ``watchPaths`` are watched in -p mode too (chokidar; a write counts once
  stable for 500 ms); the FileChanged hook gets ``{file_path, event}`` about 2 s after the
  write and runs beside the agent, not inside a tool call.
- ``/compact`` (here with ``-p --continue``) runs PreCompact, then SessionStart ``compact``,
  then PostCompact ``{trigger, compact_summary}`` about 0.5 s later; the summary is already
  in the transcript (``isCompactSummary``) when SessionStart runs.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.support import deadline
from tests.support.actor_procs import rows
from tests.support.claude_code import cli
from tests.system.test_claude_code import _installed, _store_dir

pytestmark = pytest.mark.timeout(cli.RUN_TIMEOUT_S + 300)


def _run(binary: str, env: dict, proj: str, out_dir: str, turns: list, args: list[str]) -> dict:
    api = cli.FakeApi({"side_text": "SUMMARY: the user asked for an edit of src/app.py", "turns": turns}, out_dir, proj)
    try:
        env = {**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-dummy"}
        return cli.run_session(binary, env, proj, "Read Grep Bash mcp__memtree", out_dir, args)
    finally:
        api.close()


class _Paths:
    def __init__(self, store_dir):
        self.db = os.path.join(store_dir, "store.db")


def test_file_changed_and_post_compact_on_the_real_cli(claude_bin, tmp_path):
    proj, memtree_home, env = _installed(tmp_path)
    store = _Paths(_store_dir(proj, memtree_home))
    app = os.path.join(os.path.realpath(proj), "src", "app.py")
    try:
        _run(
            claude_bin,
            env,
            proj,
            str(tmp_path / "s1"),
            [{"tool_use": {"name": "Read", "input": {"file_path": app}}}, {"text": "Read it."}],
            ["-p", "read the app"],
        )
        assert rows(
            store, "SELECT count(*) FROM nodes WHERE kind = 'file_chunk' AND source_uri LIKE ?", (f"file://{app}#%",)
        ) == [(1,)]
        # Session 2: SessionStart names src/app.py in watchPaths; a command edits it while the session runs.
        edit = f"sleep 1; printf 'def greet(name):\\n    return name\\n' > {app}; date +%s%3N; sleep 5; echo done"
        second = _run(
            claude_bin,
            env,
            proj,
            str(tmp_path / "s2"),
            [{"tool_use": {"name": "Bash", "input": {"command": edit, "description": "edit"}}}, {"text": "Edited."}],
            ["-p", "edit the app"],
        )
        debug = open(str(tmp_path / "s2" / "claude_debug.log")).read()
        assert "FileChanged: watching 1 paths" in debug and f"FileChanged: change {app}" in debug, debug[-3000:]
        [(status,)] = rows(
            store, "SELECT status FROM nodes WHERE kind = 'file_chunk' AND source_uri LIKE ?", (f"file://{app}#%",)
        )
        [(reason, at)] = rows(store, "SELECT reason, at FROM audit WHERE action = 'status' AND to_status = 'stale'")
        assert status == "stale" and "(FileChanged: mtime " in reason
        transcript = cli.transcript_path(env, second["session_id"])
        with open(transcript) as f:
            edited_ms = next(
                int(line.split('"stdout":"')[1].split("\\n")[0])
                for line in f
                if '"toolUseResult"' in line and '"stdout":"' in line
            )
        delay_ms = at - edited_ms
        print(f"\nstaleness delay with the FileChanged hook (real CLI): {delay_ms} ms after the write")
        assert 0 < delay_ms < 30_000  # the staleness walker's interval is 30 s: the hook came first

        # /compact on the same session: the summary is kept, the brief after it leads with it
        _run(claude_bin, env, proj, str(tmp_path / "s3"), [{"text": "Compacted."}], ["-p", "/compact", "--continue"])
        sid = second["session_id"]
        until = time.monotonic() + deadline(
            30
        )  # the writer may still be draining when the server stops: then it spooled
        while time.monotonic() < until and not rows(
            store, "SELECT 1 FROM nodes WHERE kind = 'observation' AND session_id = ?", (sid,)
        ):
            time.sleep(0.2)
        [(content, meta)] = rows(
            store, "SELECT content, metadata FROM nodes WHERE kind = 'observation' AND session_id = ?", (sid,)
        )
        assert content.startswith("Compaction summary (manual):") and json.loads(meta)["origin"] == "compact"
        with open(transcript) as f:
            lead = [json.loads(line)["attachment"] for line in f if '"hook_additional_context"' in line]
        texts = ["\n".join(a["content"]) for a in lead if a.get("hookEvent") == "SessionStart"]
        # compact: SessionStart runs before PostCompact and before the summary reaches the transcript,
        # so the block leads with what the session touched
        assert texts and texts[-1].startswith('<memtree:recalled kind="compaction">'), texts[-1:]
        assert "This session was just compacted" in texts[-1] and "ran `sleep 1; printf" in texts[-1]
        # resume: the summary leads, then what the session touched
        _run(claude_bin, env, proj, str(tmp_path / "s4"), [{"text": "Resumed."}], ["-p", "go on", "--continue"])
        with open(transcript) as f:
            lead = [json.loads(line)["attachment"] for line in f if '"hook_additional_context"' in line]
        resumed = ["\n".join(a["content"]) for a in lead if a.get("hookEvent") == "SessionStart"][-1]
        kept = content.split("\n", 1)[1].strip()
        assert resumed.startswith('<memtree:recalled kind="compaction">') and "its summary" in resumed, resumed
        assert kept[:40] in resumed and "ran `sleep 1; printf" in resumed
    finally:
        left = cli.reap_leftovers(str(tmp_path))
        assert left == [], f"processes left behind: {left}"
