"""Native Grep output, parsed in one place: what each line of Claude Code's
Grep result names. Content mode prints a match as ``path:N:text`` (with
``-n``) or ``path:text``, a context line (``-A/-B/-C``) as ``path-N-text``,
and ``--`` between groups; a search of one file leaves the path out.
Standard library only (the capture hook's spool path plans with it)."""

import re

_HIT = re.compile(r"^(.+?):(\d+):(.*)$")
_CONTEXT = re.compile(r"^(.+?)-(\d+)-(.*)$")
_BARE_HIT = re.compile(r"^(\d+):(.*)$")
_UNNUMBERED_HIT = re.compile(r"^([^:]+):(.*)$")


def parse_line(line: str, mode: str, single_file: str | None = None, numbered: bool = True):
    """(path, line number or None, text, is_context) of one output line;
    (None, None, None, False) when it names no file. ``numbered``: the search
    asked for line numbers (``-n``); without them a match is ``path:text``."""
    if not line or line == "--":
        return None, None, None, False
    if mode == "files_with_matches":
        return line, None, "", False
    if mode == "count":
        path, sep, _n = line.rpartition(":")
        return (path, None, "", False) if sep and path else (None, None, None, False)
    if not numbered:
        m = _UNNUMBERED_HIT.match(line)
        return (m.group(1), None, m.group(2), False) if m else (None, None, None, False)
    m = _HIT.match(line)
    if m:
        return m.group(1), int(m.group(2)), m.group(3), False
    if single_file:
        m = _BARE_HIT.match(line)
        if m:
            return single_file, int(m.group(1)), m.group(2), False
    m = _CONTEXT.match(line)
    if m:
        return m.group(1), int(m.group(2)), m.group(3), True
    return None, None, None, False
