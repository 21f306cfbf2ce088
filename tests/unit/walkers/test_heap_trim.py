"""Freed heap handed back after work (memtree/runtime/heap.py): every actor's
loop and the front call ``after_work()``; a trim runs at most once a period,
and only when the resident set grew since the last one."""

from __future__ import annotations

import platform

import pytest

from memtree.runtime.heap import Trimmer, resident_bytes, trim

glibc_only = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")


def _grow_and_fragment(mib: int = 24) -> list[bytes]:
    """Grow the malloc heap by ``mib`` and free most of it, keeping every 64th
    block so the free space is holes below the top (what free() cannot give back)."""
    blocks = [bytes(1000) + i.to_bytes(4, "little") for i in range(mib * 1024)]
    return blocks[::64]


@glibc_only
def test_a_trim_runs_after_work_at_most_once_a_period():
    assert trim() is True
    waiting = Trimmer(every_s=3600, growth=0)
    assert [waiting.after_work() for _ in range(3)] == [False, False, False] and waiting.trims == 0
    # Positive control: with the period passed and no growth floor, each call after work trims.
    due = Trimmer(every_s=0, growth=0)
    assert [due.after_work() for _ in range(3)] == [True, True, True] and due.trims == 3


@glibc_only
def test_work_that_did_not_grow_the_heap_is_not_followed_by_a_trim_work_that_did_is():
    assert resident_bytes() > 0
    trimmer = Trimmer(every_s=0)  # growth: the default 1 MiB
    assert [trimmer.after_work() for _ in range(3)] == [False, False, False]  # idle ticks: nothing to give back
    kept = _grow_and_fragment()
    before = resident_bytes()
    assert trimmer.after_work() is True and trimmer.trims == 1
    assert resident_bytes() < before  # the holes went back to the system
    assert trimmer.after_work() is False  # and nothing grew since
    assert len(kept) == 384


def test_settle_freezes_what_exists_out_of_later_collections_and_collects_its_garbage():
    import subprocess
    import sys

    # In a fresh interpreter: freezing is for the life of the process.
    code = """
import gc, weakref
from memtree.runtime.heap import settle
class Node: pass
kept = [Node() for _ in range(5000)]
cycle = Node(); cycle.me = cycle; dead = weakref.ref(cycle); del cycle  # start-up's garbage
frozen_before = gc.get_freeze_count()
settle()
assert dead() is None, "the young garbage was not collected"
assert gc.get_freeze_count() >= frozen_before + len(kept), gc.get_freeze_count()
assert all(not any(o is k for o in gc.get_objects(2)) for k in kept[:3])  # a full collection skips them
print("ok", gc.get_freeze_count())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr
