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
