"""Start a child process in its own process group (a new session), the one way memtree and its
evals start a tree they must be able to stop: ``os.killpg(proc.pid, ...)`` then reaches every
process under it, and a signal to the parent's group (a terminal's Ctrl-C) does not."""

from __future__ import annotations

import subprocess


def start_group(
    argv: list[str], *, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw
) -> subprocess.Popen:
    """``Popen(argv)`` leading a new session; the streams are /dev/null unless given."""
    return subprocess.Popen(argv, stdin=stdin, stdout=stdout, stderr=stderr, start_new_session=True, **kw)
