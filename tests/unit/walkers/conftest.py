"""Fixtures shared by the walker tests."""

from __future__ import annotations

import pytest

from memtree import protocol
from memtree.runtime.client import Caller
from tests.support import deadline_ms, make_paths, reap
from tests.support import test_config as make_config
from tests.support.actor_procs import HeartbeatSink, start_actor, start_writer


@pytest.fixture()
def filter_system(tmp_path):
    """A real writer on a fresh store, a client of it, and ``start_filter()``,
    which starts the filter walker and waits until it is READY (subscribed and
    swept once); every process is reaped at the end."""
    paths = make_paths(tmp_path)
    config = make_config()
    procs = [start_writer(paths, config)]
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="test", timeout_ms=deadline_ms(10000))
    sink = HeartbeatSink(paths)

    def start_filter():
        procs.append(start_actor(paths, config, "memtree.actors.walkers.filter", "walker.filter", sink.endpoint))
        sink.wait_state("walker.filter", "running")
        return procs[-1]

    yield paths, caller, start_filter
    caller.close()
    sink.close()
    for p in reversed(procs):
        reap(p)
