"""The facts of Claude Code that memtree relies on, in one place: which hook
events and tools it captures, how a hook answers. Checked on the real CLI
2.1.197 (../shared/claude-code/verified-2.1.197.md). Standard library only:
every hook imports it."""

CAPTURED_TOOLS = ("Read", "Grep", "Bash")
MATCHER = "|".join(CAPTURED_TOOLS)  # the PostToolUse matcher install registers
CAPTURE_EVENTS = POST_TOOL_USE, POST_TOOL_USE_FAILURE = ("PostToolUse", "PostToolUseFailure")
STOP_EVENT = "Stop"  # takes no matcher
SESSION_EVENT, SESSION_MATCHER = "SessionStart", "startup|resume|compact"
# Issue 18, verified on 2.1.197 (tests/system/test_claude_code_live_hooks.py): PostCompact {trigger,
# compact_summary} fires after SessionStart "compact"; FileChanged {file_path, event} fires for the
# paths a SessionStart/FileChanged hook returned as watchPaths. Neither takes a matcher here.
COMPACT_EVENT, FILE_EVENT = "PostCompact", "FileChanged"
SERVER_NAME = "memtree"  # the MCP server's name: its tools are mcp__memtree__<tool>


def hook_output(event: str, **fields) -> dict:
    """What a hook prints on stdout to act on the session: ``updatedToolOutput``
    (PostToolUse), ``additionalContext`` (SessionStart)."""
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}
