"""start_group: a child leads its own process group, and its own session unless same_session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from memtree.runtime.group import start_group

# The child prints its pid, process group and session, then waits for stdin to close.
PROBE = "import os, sys; print(os.getpid(), os.getpgid(0), os.getsid(0), flush=True); sys.stdin.read()"


@pytest.mark.parametrize("same_session", [False, True])
def test_a_child_leads_its_group_and_a_new_session_unless_asked_to_stay(same_session):
    proc = start_group(
        [sys.executable, "-c", PROBE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, same_session=same_session
    )
    try:
        pid, pgid, sid = map(int, proc.stdout.readline().split())
        assert (pid, pgid) == (proc.pid, proc.pid)
        # Same session: the scheduler's autogroup is the caller's, so a walker's nice counts against its peers.
        assert sid == (os.getsid(0) if same_session else proc.pid)
        os.killpg(proc.pid, signal.SIGTERM)  # the group is what callers stop
        assert proc.wait(timeout=10) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        proc.stdin.close()
        proc.stdout.close()
