"""eval/bench_scale's paired probes: hook captures timed with the embed walker
running and stopped in turns. The stand-in walker is a real process group (a
leader and its child, as the walker and its compute child); the captures go
to a real writer's ingest socket."""

from __future__ import annotations

import sys
import threading

import pytest

from memtree import protocol
from memtree.eval import bench_scale
from memtree.runtime.group import start_group
from tests.support import deadline, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import rows, running_writer

# A leader that starts a child and both wait: stopped, neither runs.
_GROUP = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"


@pytest.mark.timeout(120)
def test_paired_probes_stop_the_whole_group_in_turns_and_leave_it_running(tmp_path, monkeypatch):
    import psutil

    monkeypatch.setattr(bench_scale, "PAIRED_ON_S", 0.5)
    monkeypatch.setattr(bench_scale, "PAIRED_OFF_S", 1.0)
    paths = make_paths(tmp_path)
    group = start_group([sys.executable, "-c", _GROUP])
    try:
        wait_until(lambda: len(psutil.Process(group.pid).children()) == 1, timeout=deadline(20), what="the child")
        with running_writer(paths, make_config()):
            busy, paused, halts, stop = [], [], [], threading.Event()
            prober = threading.Thread(
                target=bench_scale.paired_probes,
                args=(paths.endpoint(protocol.SOCK_INGEST), str(tmp_path), 0, group.pid, stop, busy, paused, halts),
            )
            prober.start()
            try:
                # A paused window's first capture is answered: leader and child are stopped then.
                wait_until(lambda: paused, timeout=deadline(20), interval=0.001, what="a paused probe")
                states = bench_scale.group_states(group.pid)
                assert states and states <= {"T", "t"}, states
                wait_until(lambda: len(busy) > 12, timeout=deadline(20), what="a second busy window")
            finally:
                stop.set()
                prober.join(deadline(20))
            assert not prober.is_alive()
            # Running again after the last window, whichever it was, and never stopped outside one.
            states = bench_scale.group_states(group.pid)
            assert states and not states & {"T", "t"}, states
            assert halts and all(end - start >= bench_scale.PAIRED_OFF_S for start, end in halts[:-1]), halts
            stored = rows(paths, "SELECT count(*) FROM nodes WHERE kind = 'tool_output'")[0][0]
            assert stored == len(busy) + len(paused) and len(busy) > 0 and len(paused) > 0
    finally:
        reap(group)
