"""Every way a session ends leaves no run files (sockets, locks) behind.

``cli`` replays what Claude Code 2.1.197 does to its MCP server (its debug
log: SIGINT, SIGTERM 0.1 s later, SIGKILL 0.4 s after that), which can cut
the supervisor's shutdown short; the others are the single signals a
terminal or an operator sends, and stdin closing. The real CLI itself:
tests/system/test_claude_code_runfiles.py.
"""

import os
import signal
import subprocess
import time

import pytest

from tests.support import COLD_START_S, wait_until


def _files(run_dir: str) -> list[str]:
    try:
        return sorted(os.listdir(run_dir))
    except FileNotFoundError:
        return []


def _end(sup: subprocess.Popen, how: str) -> None:
    if how == "stdin-closed":
        sup.stdin.close()
    elif how == "cli":
        # The schedule is the CLI's, not a wait for a result: nothing is asserted in between.
        sup.send_signal(signal.SIGINT)
        time.sleep(0.1)
        sup.send_signal(signal.SIGTERM)
        time.sleep(0.4)
        if sup.poll() is None:
            sup.kill()
    else:
        sup.send_signal({"sigterm": signal.SIGTERM, "sighup": signal.SIGHUP, "sigint": signal.SIGINT}[how])


@pytest.mark.parametrize("how", ["cli", "sigterm", "sighup", "sigint", "stdin-closed"])
def test_however_the_session_ends_every_process_exits_and_no_run_file_is_left(system_factory, how):
    s = system_factory
    s.write_config()
    sup = s.serve(front=True, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    s.wait_running(["mcp", *s.expected])
    up = _files(s.paths.run_dir)
    # Positive control: while up, the supervisor's and the actors' files are there.
    assert {f"sup-{sup.pid}.ctl.sock", f"sup-{sup.pid}.hb.sock", "write.sock", "writer.lock"} <= set(up), up
    _end(sup, how)
    sup.wait(timeout=COLD_START_S)
    # The actors end by themselves, the supervisor gone or not (PR_SET_PDEATHSIG).
    wait_until(lambda: s.leftovers() == [], timeout=COLD_START_S, what="every memtree process to exit")
    assert _files(s.paths.run_dir) == []
