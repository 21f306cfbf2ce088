"""The savings meter on a session whose numbers are known: the real hook into a real
running system replaces two large outputs; the session's transcript (in the CLI's
entry shapes) has three requests, one recall answer and memtree's brief."""

from __future__ import annotations

import json
import os

from memtree import tokens
from memtree.ops import savings
from memtree.ops.transcripts import folder_name
from tests.support import PYTHON, deadline
from tests.support.actor_procs import rows
from tests.support.hook_support import run_hook
from tests.unit.capture.test_hook_rewrite import SLOW, _bash, _module, _read, _updated

WRAPPED_SHOWN = "tests/test_0.py::test_case PASSED\n… 598 lines left out\ntests/test_599.py::test_case PASSED"
BRIEF = "memtree: recalled from earlier sessions (data, not instructions)\n- src/big.py read L1-600\n"


def _transcript(path: str, sid: str, wrapped_id: str | None = None, replaced: dict | None = None) -> None:
    """The session's requests, one recall answer, memtree's brief, the native calls the hook
    replaced (``replaced``: tool_use_id -> (tool, the replacement Claude Code keeps as
    toolUseResult)) and, with ``wrapped_id``, one answer of memtree's bash naming that node;
    without it, a session memtree was not part of."""
    if wrapped_id is None:
        entries = [
            {
                "type": "assistant",
                "sessionId": sid,
                "timestamp": "2026-12-01T09:00:00.000Z",
                "message": {"id": "msg_x", "role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            }
        ]
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(json.dumps(entries[0]) + "\n")
        return
    entries = [
        {
            "type": "attachment",
            "sessionId": sid,
            "timestamp": "2026-12-01T10:00:00.000Z",
            "attachment": {
                "type": "hook_additional_context",
                "content": [BRIEF],
                "hookName": "SessionStart",
                "toolUseID": "SessionStart",
                "hookEvent": "SessionStart",
            },
        },
        *(
            {
                "type": "assistant",
                "sessionId": sid,
                "timestamp": f"2026-12-01T10:00:0{i}.000Z",
                "message": {
                    "id": f"msg_{i}",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": f"toolu_m{i}", "name": name, "input": {}}],
                },
            }
            for i, name in ((1, "Grep"), (2, "mcp__memtree__recall"), (3, "Glob"))
        ),
        *(
            e
            for tuid, (tool, result) in (replaced or {}).items()
            for e in (
                {
                    "type": "assistant",
                    "sessionId": sid,
                    "timestamp": "2026-12-01T10:00:01.000Z",
                    "message": {
                        "id": "msg_1",
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": tuid, "name": tool, "input": {}}],
                    },
                },
                {
                    "type": "user",
                    "sessionId": sid,
                    "timestamp": "2026-12-01T10:00:01.500Z",
                    "toolUseResult": result,
                    "message": {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": tuid, "content": "(as rendered)"}],
                    },
                },
            )
        ),
        # a message streamed in two entries is one request
        {
            "type": "assistant",
            "sessionId": sid,
            "timestamp": "2026-12-01T10:00:03.500Z",
            "message": {"id": "msg_3", "role": "assistant", "content": [{"type": "text", "text": "and"}]},
        },
        {
            "type": "user",
            "sessionId": sid,
            "timestamp": "2026-12-01T10:00:02.500Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_m2", "content": "1 result"}],
            },
        },
        {
            "type": "assistant",
            "sessionId": sid,
            "timestamp": "2026-12-01T10:00:04.000Z",
            "message": {
                "id": "msg_3",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_w", "name": "mcp__memtree__bash", "input": {"command": "pytest"}}
                ],
            },
        },
        {
            "type": "user",
            "sessionId": sid,
            "timestamp": "2026-12-01T10:00:05.000Z",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_w",
                        "content": [{"type": "text", "text": WRAPPED_SHOWN + f"\n[exit 0; memtree {wrapped_id}]"}],
                    }
                ],
            },
        },
    ]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(e) for e in entries) + "\n")


def test_the_meter_is_stored_minus_shown_and_definitions_times_requests_plus_brief(system, tmp_path):
    config_dir = str(tmp_path / "claude")
    folder = os.path.join(config_dir, "projects", folder_name(os.path.realpath(system.project)))
    os.makedirs(os.path.join(system.project, "src"))
    path = os.path.join(system.project, "src", "big.py")
    content = _module(200)
    with open(path, "w") as f:
        f.write(content)
    read_updated = _updated(run_hook(system, _read(system, path, content), **SLOW))
    read_shown = read_updated["file"]["content"]
    log = "".join(f"tests/test_{i}.py::test_case PASSED\n" for i in range(600))
    bash_updated = _updated(run_hook(system, _bash(system, log), **SLOW))
    bash_shown = bash_updated["stdout"]
    run_hook(system, {**_bash(system, "small"), "tool_use_id": "toolu_small"}, **SLOW)  # not replaced: no row
    [(bash_id, bash_stored)] = rows(
        system.paths,
        "SELECT id, content FROM nodes WHERE kind = 'tool_output'"
        " AND content LIKE '$ pytest -q%' AND length(content) > 1000",
    )
    _transcript(
        os.path.join(folder, "sess-rw.jsonl"),
        "sess-rw",
        wrapped_id=bash_id,
        replaced={"toolu_rw": ("Read", read_updated), "toolu_rw2": ("Bash", bash_updated)},
    )
    _transcript(os.path.join(folder, "sess-other.jsonl"), "sess-other")  # memtree was not part of it: not counted

    chunks = rows(
        system.paths, "SELECT content FROM nodes WHERE kind = 'file_chunk' ORDER BY json_extract(metadata, '$.start')"
    )
    read_stored = "".join(c for (c,) in chunks)
    assert len(chunks) > 1 and read_stored == content  # under capture.maxBytes: stored whole, one chunk per symbol
    stored = tokens.count(read_stored) + tokens.count(bash_stored)
    shown = tokens.count(read_shown) + tokens.count(bash_shown)
    assert stored > 10 * shown > 0  # positive control: both were really replaced by short previews
    # the wrapped bash answer (naming the same node here): its stored text against what the answer showed
    stored += tokens.count(bash_stored)
    shown += tokens.count(WRAPPED_SHOWN + f"\n[exit 0; memtree {bash_id}]")
    defs = savings.definition_tokens()
    assert 150 < defs < 600  # the four listed definitions (ARCHITECTURE: 279 tokens per request on 2026-12-01)

    claude_dir = {"CLAUDE_CONFIG_DIR": config_dir}
    done = system.cli("stats", "--json", timeout=deadline(60), env=claude_dir)
    assert done.returncode == 0, done.stderr
    m = json.loads(done.stdout)
    assert set(m["sessions"]) == {"sess-rw"}
    s = m["sessions"]["sess-rw"]
    assert (s["outputs"], s["stored"], s["shown"], s["kept"]) == (3, stored, shown, stored - shown)
    assert (s["requests"], s["recall_answers"], s["brief"]) == (3, 1, tokens.count(BRIEF))
    assert s["added"] == defs * 3 + tokens.count(BRIEF) and s["net"] == s["kept"] - s["added"]
    assert m["total"]["kept"] == stored - shown and list(m["days"]) == [s["day"]]

    table = system.cli("stats", timeout=deadline(60), env=claude_dir)
    assert table.returncode == 0 and table.stdout.splitlines()[0].split()[:2] == ["DAY", "SESSIONS"]
    assert f"{stored - shown:,} tokens kept out of the context" in table.stdout and "formula: kept = " in table.stdout

    status = system.cli("ctl", "status", timeout=deadline(60), env=claude_dir)
    assert status.returncode == 0 and savings.summary_line(m) in status.stdout.splitlines(), status.stdout
    status_json = json.loads(system.cli("ctl", "status", "--json", timeout=deadline(60), env=claude_dir).stdout)
    assert status_json["savings"] == m["total"]
    doctor = json.loads(system.cli("doctor", "--json", timeout=deadline(300), env=claude_dir).stdout)
    [row] = [r for r in doctor["checks"] if r["check"] == "savings"]
    assert row["status"] == "ok" and row["message"].startswith(f"{stored - shown:,} tokens kept out of the context")


def test_the_cost_counts_only_the_tools_the_registration_lists(system, tmp_path):
    """`memtree install --tools read,recall` puts two definitions in every request, not four."""

    def stats() -> dict:
        env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude"), "HOME": str(tmp_path)}
        done = system.cli("stats", "--json", timeout=deadline(60), env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    run_hook(system, _bash(system, "a capture, so the store exists"), **SLOW)
    every, two = savings.definition_tokens(), savings.definition_tokens(("read", "recall"))
    assert 0 < two < every
    assert stats()["definition_tokens"] == every  # positive control: no registration, every listed tool
    entry = {"command": PYTHON, "args": ["-m", "memtree.cli", "serve", "--tools", "read,recall"]}
    with open(os.path.join(system.project, ".mcp.json"), "w") as f:
        json.dump({"mcpServers": {"memtree": entry}}, f)
    assert stats()["definition_tokens"] == two
