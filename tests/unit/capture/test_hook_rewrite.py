"""The real hook rewrites large native outputs only after the writer committed them."""

from __future__ import annotations

import json
import os
import re

from memtree.capture import spool
from tests.support import COLD_START_S, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import run_hook

SLOW = {"MEMTREE_HOOK_TIMEOUT_MS": "10000"}  # a loaded 2-core box: wait for the ack


def _module(n: int) -> str:
    return '"""Generated module."""\n\n' + "".join(
        f"\ndef handler_{i}(request, retries=3):\n    value = request.get('k{i}')\n    return value * {i}\n"
        for i in range(n)
    )


def _read(system, path: str, content: str, rtype: str = "text") -> dict:
    lines = content.count("\n") + 1
    resp = (
        {
            "type": "text",
            "file": {"filePath": path, "content": content, "numLines": lines, "startLine": 1, "totalLines": lines},
        }
        if rtype == "text"
        else {"type": "file_unchanged", "file": {"filePath": path}}
    )
    return {
        "session_id": "sess-rw",
        "transcript_path": "/dev/null",
        "cwd": system.project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": path},
        "tool_response": resp,
        "tool_use_id": "toolu_rw",
    }


def _bash(system, stdout: str) -> dict:
    return {
        "session_id": "sess-rw",
        "transcript_path": "/dev/null",
        "cwd": system.project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q", "description": "tests"},
        "tool_response": {
            "stdout": stdout,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        "tool_use_id": "toolu_rw2",
    }


def _updated(done) -> dict:
    out = json.loads(done.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUse"
    return out["updatedToolOutput"]


def _node_id(text: str) -> str:
    """The node a preview names: ``memtree node <id>`` (Read, Grep) or ``ids=<id>`` (Bash)."""
    return re.search(r"(?:memtree node |memtree recall ids=)(\w+)", text).group(1)


def test_a_large_read_is_shown_as_an_outline_of_the_node_that_holds_the_whole_file(system):
    path = os.path.join(system.project, "handlers.py")
    content = _module(150)
    with open(path, "w") as f:
        f.write(content)
    updated = _updated(run_hook(system, _read(system, path, content), **SLOW))
    f = updated["file"]
    assert updated["type"] == "text" and set(f) == {"filePath", "content", "numLines", "startLine", "totalLines"}
    assert "def handler_0 L4-6" in f["content"] and "return value * 149" not in f["content"]
    node = _node_id(f["content"])
    # The file's root: its chunks (one per handler, as the wrapped read cuts it) keep every line the preview
    # leaves out, and `recall ids=<root>` shows them as the file.
    assert rows(system.paths, "SELECT kind, source_uri FROM nodes WHERE id = ?", (node,)) == [
        ("file", f"file://{path}")
    ]
    chunks = sorted(
        (json.loads(m)["start"], c)
        for c, m in rows(
            system.paths, "SELECT content, metadata FROM nodes WHERE parent_id = ? AND kind = 'file_chunk'", (node,)
        )
    )
    assert "".join(c for _, c in chunks) == content and len(chunks) > 10  # small symbols joined, still cut

    # Claude Code's dedup of a re-read carries no content: answered with the preview of that node again.
    again = _updated(run_hook(system, _read(system, path, "", rtype="file_unchanged"), **SLOW))
    assert again["type"] == "text" and again["file"]["filePath"] == path
    assert "unchanged since your last Read" in again["file"]["content"]
    assert _node_id(again["file"]["content"]) == node and "def handler_1 L8-10" in again["file"]["content"]

    # control: a small file's Read and its re-read go through untouched
    small = os.path.join(system.project, "small.py")
    with open(small, "w") as fh:
        fh.write("x = 1\n")
    assert run_hook(system, _read(system, small, "x = 1\n"), **SLOW).stdout == b""
    assert run_hook(system, _read(system, small, "", rtype="file_unchanged"), **SLOW).stdout == b""


def test_a_secret_in_a_large_output_is_redacted_in_the_preview_and_the_store(system):
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    log = "\n".join([f"token used: {secret}"] + [f"test_{i} PASSED" for i in range(3000)] + ["1 failed"])
    text = _updated(run_hook(system, _bash(system, log), **SLOW))["stdout"]
    assert secret not in text and "[REDACTED" in text and "3002: 1 failed" in text
    [(stored,)] = rows(system.paths, "SELECT content FROM nodes WHERE id = ?", (_node_id(text),))
    assert secret not in stored and "test_2999 PASSED" in stored


def test_with_the_writer_stopped_the_spooled_capture_is_previewed_from_the_redacted_entry(system):
    secret = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    log = "\n".join([f"auth {secret}"] + [f"step {i} done" for i in range(4000)] + ["ERROR: out of disk"])
    assert system.ctl("stop", "writer").returncode == 0
    wait_until(lambda: system.actor("writer", {"STOPPED"}) is not None, timeout=COLD_START_S, what="writer stopped")
    text = _updated(run_hook(system, _bash(system, log), MEMTREE_HOOK_TIMEOUT_MS="300"))["stdout"]
    assert spool.pending_count(system.paths.spool) == 1  # stored safely first: spooled
    assert "4002: ERROR: out of disk" in text and "step 2000 done" not in text
    # no id until the writer stores it
    assert "memtree node" not in text and "whole kept by memtree, being stored" in text
    assert secret not in text and "[REDACTED" in text
    spooled = open(system.paths.spool, encoding="utf-8").read()
    assert secret not in spooled and "step 2000 done" in spooled  # the whole output, redacted
    # control: a small output spools and is left as it is
    assert run_hook(system, _bash(system, "ok"), MEMTREE_HOOK_TIMEOUT_MS="300").stdout == b""
    assert spool.pending_count(system.paths.spool) == 2
