"""Freed heap handed back after work (memtree/runtime/heap.py): every actor's
loop and the front call ``after_work()``; a trim runs at most once a period."""

from __future__ import annotations

import platform

import pytest

from memtree.runtime.heap import Trimmer, trim


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_a_trim_runs_after_work_at_most_once_a_period():
    assert trim() is True
    waiting = Trimmer(every_s=3600)
    assert [waiting.after_work() for _ in range(3)] == [False, False, False] and waiting.trims == 0
    # Positive control: with the period passed, each call after work trims.
    due = Trimmer(every_s=0)
    assert [due.after_work() for _ in range(3)] == [True, True, True] and due.trims == 3
