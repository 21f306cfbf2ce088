"""Claude Code hook payloads, shaped as 2.1.197 sends them (the recorded ones
are in tests/fixtures/claude_code/), for the benches and the tests that feed
the real hook or the writer's ingest socket."""

from __future__ import annotations


def read(
    path: str,
    content: str,
    cwd: str,
    session_id: str = "sess-test",
    tool_use_id: str = "toolu_test",
    start: int = 1,
    total_lines: int | None = None,
    **tool_input,
) -> dict:
    """A PostToolUse payload of a Read that returned ``content`` from line
    ``start``. ``numLines`` counts as the CLI does: a text that ends in a
    newline has one more (empty) line."""
    lines = content.count("\n") + 1
    return {
        "session_id": session_id,
        "transcript_path": "/dev/null",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": path, **tool_input},
        "tool_response": {
            "type": "text",
            "file": {
                "filePath": path,
                "content": content,
                "numLines": lines,
                "startLine": start,
                "totalLines": total_lines or start - 1 + lines,
            },
        },
        "tool_use_id": tool_use_id,
    }
