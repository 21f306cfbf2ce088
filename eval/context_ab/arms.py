"""The A/B's repository, information needs and scripted sessions (one per arm).

The repository is click 8.1.7, installed from PyPI as an sdist (nobody here
wrote it). Each fact is an exact string the answer needs, at a known line.
Every arm meets the same needs; only the way of reading differs.
"""

from __future__ import annotations

PACKAGE, VERSION = "click", "8.1.7"
CORE, TYPES, CHANGES = "src/click/core.py", "src/click/types.py", "CHANGES.rst"

# name -> (file, exact string the model must see)
FACTS = {
    "unknown-command message": (CORE, 'ctx.fail(_("No such command {name!r}.")'),
    "terminal width inherited": (CORE, "terminal_width = parent.terminal_width"),
    "IntRange clamp on open bound": (TYPES, "return bound + dir"),
    "8.0.0 release date": (CHANGES, "Released 2021-05-11"),
    "where NoSuchOption is raised": ("src/click/parser.py", "raise NoSuchOption(opt, possibilities=possibilities"),
}

FINAL = {
    "text": "Unknown commands fail with 'No such command'; terminal_width is inherited from the parent "
    "context; IntRange clamps an open bound by one; 8.0.0 was released 2021-05-11; the parser "
    "raises NoSuchOption."
}


def _read(path: str, **extra) -> dict:
    return {"tool_use": {"name": "Read", "input": {"file_path": f"${{PROJ}}/{path}", **extra}}}


def _grep(pattern: str, path: str = "src/click", **extra) -> dict:
    return {
        "tool_use": {
            "name": "Grep",
            "input": {"pattern": pattern, "path": f"${{PROJ}}/{path}", "output_mode": "content", "-n": True, **extra},
        }
    }


def _bash(command: str) -> dict:
    return {"tool_use": {"name": "Bash", "input": {"command": command, "description": "look"}}}


def _mt(tool: str, **args) -> dict:
    return {"tool_use": {"name": f"mcp__memtree__{tool}", "input": args}}


# What an agent does by default: whole files, a broad search, the top of the changelog.
NATIVE_WHOLE = [_read(CORE), _read(TYPES), _grep("raise "), _bash(f"head -n 300 {CHANGES}"), FINAL]

# The same needs met with exact slices: one cheap grep gives the line numbers,
# then exact reads. (The terminal_width fact is the grep hit itself, so no
# read of its lines: an earlier script read them again, in native's arm only.)
TARGETED_GREP = "def resolve_command|terminal_width = parent|class IntRange"
NATIVE_TARGETED = [
    _grep(TARGETED_GREP),
    _read(CORE, offset=1722, limit=26),
    _read(TYPES, offset=516, limit=24),
    _grep("raise NoSuchOption"),
    _bash(f"grep -n -A3 'Version 8.0.0' {CHANGES}"),
    FINAL,
]

# memtree installed, the agent still on native tools: it reads whole files as
# before, gets previews (outlines with line numbers, head/tail/lines that
# matter) and follows them with exact reads; line numbers come from the outline.
INSTALLED = {
    "capture": {"RESOLVE": r"resolve_command\b[^\n]*? L(\d+)", "INTRANGE": r"class IntRange\b[^\n]*? L(\d+)"},
    "turns": [
        _read(CORE),
        _read(TYPES),
        _grep("raise "),
        _bash(f"head -n 300 {CHANGES}"),
        _read(CORE, offset="${RESOLVE}", limit=26),
        _grep("terminal_width = parent", path=CORE),
        _read(TYPES, offset="${INTRANGE}", limit=24),
        _grep("raise NoSuchOption"),
        _bash(f"grep -n -A3 'Version 8.0.0' {CHANGES}"),
        FINAL,
    ],
}

# memtree's own tools, with the targeted arm's knowledge: the same grep, but
# with memtree's context=symbol each hit comes inside the definition around it
# (native Grep's context is a fixed number of lines), so the two reads the
# targeted arm makes after its grep are in the grep's answer; a hit in a long
# definition stays one line naming it. Then the same second grep and command.
# (Until 2026-12-01 this arm read the two symbols in two more calls: 7,246
# added tokens with six tools, 6,340 with four.)
MEMTREE_TOOLS = [
    _mt("grep", pattern=TARGETED_GREP, path="src/click", opts="context=symbol"),
    _mt("grep", pattern="raise NoSuchOption", path="src/click"),
    _mt("bash", command=f"grep -n -A3 'Version 8.0.0' {CHANGES}"),
    FINAL,
]

# Session 2 of the two-session arm: the same questions after session 1
# explored them. Native: explore again. memtree: the SessionStart brief plus
# searches of what session 1 stored.
SESSION2_MEMTREE = [
    _mt("recall", query="No such command", opts="limit=2"),
    _mt("recall", query="terminal_width parent", opts="limit=2"),
    _mt("recall", query="IntRange _clamp bound dir", opts="limit=2"),
    _mt("recall", query="NoSuchOption possibilities", opts="limit=2"),
    _mt("recall", query="Version 8.0.0 Released", opts="limit=2"),
    FINAL,
]


def script(turns) -> dict:
    body = turns if isinstance(turns, dict) else {"turns": turns}
    return {"side_text": "ok", **body}


__all__ = [
    "FACTS",
    "NATIVE_WHOLE",
    "NATIVE_TARGETED",
    "INSTALLED",
    "MEMTREE_TOOLS",
    "SESSION2_MEMTREE",
    "script",
    "PACKAGE",
    "VERSION",
]
