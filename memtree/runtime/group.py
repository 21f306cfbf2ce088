"""Start a child process in its own process group, the one way memtree and its evals start a tree
they must be able to stop: ``os.killpg(proc.pid, ...)`` then reaches every process under it, and a
signal to the parent's group (a terminal's Ctrl-C) does not.

By default the group leads a new session. Actors an eval starts side by side stay in the caller's
session (``same_session``), as the supervisor's children do: with the scheduler's autogroups (one
per session) a walker's nice 10 counts only against processes of its own session, so a walker in a
session of its own would compete with the writer as an equal."""

from __future__ import annotations

import subprocess


def start_group(
    argv: list[str],
    *,
    stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL,
    stderr=subprocess.DEVNULL,
    same_session: bool = False,
    **kw,
) -> subprocess.Popen:
    """``Popen(argv)`` leading a new process group (and session, unless ``same_session``); the
    streams are /dev/null unless given."""
    group = {"process_group": 0} if same_session else {"start_new_session": True}
    return subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, **group, **kw)
