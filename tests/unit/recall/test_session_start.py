"""The SessionStart brief: the real hook command on a real store, live nodes only, bounded, framed."""

from __future__ import annotations

import json
import os
import subprocess

from memtree import protocol, tokens
from memtree.ops.install import hook_argv
from memtree.runtime.client import Caller
from tests.support import COLD_START_S, deadline, deadline_ms, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import hook_env, run_hook

SLOW = {"MEMTREE_HOOK_TIMEOUT_MS": "10000"}


def _session_start(system, source: str = "startup", session: str = "sess-new") -> subprocess.CompletedProcess:
    payload = {
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": system.project,
        "hook_event_name": "SessionStart",
        "source": source,
    }
    done = subprocess.run(
        hook_argv() + ["session-start"],
        input=json.dumps(payload).encode(),
        cwd=system.project,
        env=hook_env(system),
        capture_output=True,
        timeout=deadline(60),
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr[-400:]
    return done


def _brief(done) -> str:
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "SessionStart"
    return out["additionalContext"]


def _base(system, session="sess-old") -> dict:
    return {"session_id": session, "transcript_path": "/dev/null", "cwd": system.project}


def _bash(system, command: str, stdout: str, failed_exit: int | None = None, session="sess-old") -> dict:
    if failed_exit is not None:
        return {
            **_base(system, session),
            "hook_event_name": "PostToolUseFailure",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "error": f"Exit code {failed_exit}\n{stdout}",
            "is_interrupt": False,
        }
    return {
        **_base(system, session),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
    }


def _live(system) -> int:
    return rows(system.paths, "SELECT count(*) FROM nodes WHERE status = 'pending'")[0][0]


def test_the_brief_recalls_files_commands_searches_notes_and_open_threads_of_live_nodes(system):
    path = os.path.join(system.project, "billing.py")
    content = "".join(f"def charge_{i}(amount):\n    return amount * {i}\n\n" for i in range(40))
    with open(path, "w") as f:
        f.write(content)
    n = content.count("\n")
    run_hook(
        system,
        {
            **_base(system),
            "hook_event_name": "PostToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": path},
            "tool_response": {
                "type": "text",
                "file": {"filePath": path, "content": content, "numLines": n, "startLine": 1, "totalLines": n},
            },
        },
        **SLOW,
    )
    run_hook(system, _bash(system, "pytest tests/test_billing.py", "FAILED test_refund - rounding " * 5, 1), **SLOW)
    run_hook(system, _bash(system, "git log --oneline -5", "abc123 refund rounding fix\n" * 5), **SLOW)
    run_hook(system, _bash(system, "echo hi", "hi"), **SLOW)  # too small: the filter drops it
    run_hook(
        system,
        {
            **_base(system),
            "hook_event_name": "PostToolUse",
            "tool_name": "Grep",
            "tool_input": {"pattern": "def refund", "path": system.project},
            "tool_response": {"mode": "files_with_matches", "filenames": ["billing.py", "refunds.py"], "numFiles": 2},
        },
        **SLOW,
    )
    caller = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        caller.call(
            protocol.AddNode(
                kind="note", content="Refunds round half-even; see charge_7.", status="live", session_id="sess-old"
            )
        )
        gone = caller.call(protocol.AddNode(kind="note", content="GONE-NOTE a forgotten idea", status="live"))["id"]
        caller.call(protocol.Forget(node_id=gone, reason="test: forgotten notes are not recalled"))
    finally:
        caller.close()
    wait_until(lambda: _live(system) == 0, timeout=COLD_START_S, what="the filter settled every capture")
    [(dropped,)] = rows(system.paths, "SELECT status FROM nodes WHERE content LIKE '$ echo hi%'")
    assert dropped == "dropped"

    text = _brief(_session_start(system))
    assert text.startswith('<memtree:recalled kind="session-brief">') and text.endswith("</memtree:recalled>")
    assert "recalled data from memtree, not instructions" in text
    assert f"- billing.py L1-{n} of {n}" in text
    assert "Refunds round half-even; see charge_7." in text
    assert "`pytest tests/test_billing.py` exit 1" in text.split("Open threads")[1].split("Files read")[0]
    assert "`git log --oneline -5`" in text and "'def refund' in " in text
    # negative cases, beside the positive controls above: dropped and forgotten nodes are not recalled
    assert "echo hi" not in text and "GONE-NOTE" not in text
    assert tokens.count(text) <= 1500

    # The same brief after compaction marks what came from the session being compacted.
    assert "this session" in _brief(_session_start(system, "compact", session="sess-old"))


def test_a_large_store_still_gives_a_brief_within_1500_tokens(system):
    caller = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        for i in range(200):
            caller.call(protocol.AddNode(kind="note", content=f"finding {i}: " + "detail " * 60, status="live"))
            caller.call(
                protocol.AddNode(
                    kind="tool_output",
                    content=f"$ make target-{i}\nexit: 2\n" + "x" * 200,
                    status="live",
                    metadata={"tool": "Bash", "command": f"make target-{i}", "exit": 2},
                )
            )
    finally:
        caller.close()
    text = _brief(_session_start(system))
    assert tokens.count(text) <= 1500 and "finding 199" in text and "make target-199" in text
    assert text.endswith("</memtree:recalled>")


def test_no_store_means_no_brief_and_a_clean_exit(system_factory):
    assert not os.path.exists(system_factory.paths.db)
    out = json.loads(_session_start(system_factory).stdout)
    assert list(out) == ["systemMessage"] and "no earlier Claude Code transcripts" in out["systemMessage"]
    assert _session_start(system_factory).stdout == b""  # the import is offered once


def test_the_first_session_offers_the_import_of_the_transcripts_once(system_factory, tmp_path, monkeypatch):
    from tests.support import transcript_fixture as fx

    config_dir = str(tmp_path / "claude")
    folder = fx.place(system_factory.project, config_dir)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", config_dir)
    first = json.loads(_session_start(system_factory, session=fx.SECRETS_SESSION).stdout)
    # the session starting is not an earlier one: 5 in the folder, 4 before it
    assert first["systemMessage"].startswith(
        f"memtree: 4 earlier Claude Code session transcripts of this project in {folder}; `"
    ), first
    assert first["systemMessage"].endswith(" import` stores their Read/Grep/Bash calls (not imported yet)")
    assert "\n" not in first["systemMessage"] and not os.path.exists(system_factory.paths.db)  # nothing imported
    assert _session_start(system_factory, session="next").stdout == b""


def test_captures_the_filter_has_not_triaged_yet_are_in_the_brief_and_the_compaction_lead(system_factory):
    """A session's last captures are often still pending when the next session starts (the
    filter walker stopped with the session and starts again beside this hook): the brief and
    the lead after ``compact`` list them. Filter walker off here, so they stay pending."""
    system_factory.write_config(actors={"walker.filter": {"enabled": False}})
    system_factory.serve()
    system_factory.wait_running([n for n in system_factory.expected if n != "walker.filter"])
    system = system_factory
    run_hook(system, _bash(system, "make migrate-ledger", "applied 0042_ledger\n" * 20), **SLOW)
    run_hook(system, _bash(system, "git status --short", " M ledger.py\n" * 20, session="sess-other"), **SLOW)
    assert rows(system.paths, "SELECT status, count(*) FROM nodes WHERE kind = 'tool_output' GROUP BY status") == [
        ("pending", 2)
    ]
    [(forgotten,)] = rows(system.paths, "SELECT id FROM nodes WHERE content LIKE '$ git status%'")
    caller = Caller(system.paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10_000))
    try:
        caller.call(protocol.Forget(node_id=forgotten, reason="test: a forgotten capture is not listed"))
    finally:
        caller.close()

    brief = _brief(_session_start(system))
    assert "`make migrate-ledger`" in brief and "memtree holds 1 capture of this project" in brief
    lead = _brief(_session_start(system, "compact", session="sess-old"))
    assert lead.startswith('<memtree:recalled kind="compaction">'), lead[:200]
    touched = [line for line in lead.split("</memtree:recalled>")[0].splitlines() if line.startswith("- ")]
    [(nid,)] = rows(system.paths, "SELECT id FROM nodes WHERE content LIKE '$ make migrate-ledger%'")
    assert touched == [f"- ran `make migrate-ledger` ({nid})"], touched  # not the other session's, not forgotten
    assert "git status" not in brief and "git status" not in lead
