"""ULIDs: the time in the top 48 bits, Crockford base32, ordered as they are made.

ulid() is monotonic within a process (a time at or before the last one made
continues from it): each test starts from a fresh state, put back afterwards,
so the far-off times used here never reach another test's ids."""

from __future__ import annotations

import random
import time

import pytest

from memtree import ids
from memtree.ids import ulid

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _decode(text: str) -> int:
    value = 0
    for ch in text:
        value = value * 32 + CROCKFORD.index(ch)
    return value


@pytest.fixture(autouse=True)
def fresh_state(monkeypatch):
    monkeypatch.setattr(ids, "_last", (0, 0))


def test_a_ulid_encodes_its_millisecond_and_sorts_by_it():
    rng = random.Random(16)
    times = sorted({0, 1, 2**48 - 1, *(rng.randrange(2**48) for _ in range(2000))})
    made = [ulid(ms) for ms in times]
    for ms, got in zip(times, made):
        assert len(got) == 26 and set(got) <= set(CROCKFORD), got
        assert _decode(got) >> 80 == ms  # the time, exactly, in the top 48 bits
    assert made == sorted(made) and len(set(made)) == len(made)


def test_ulids_of_one_millisecond_are_distinct_and_increasing():
    ms = int(time.time() * 1000)
    same = [ulid(ms) for _ in range(1000)]
    assert len(set(same)) == 1000 and same == sorted(same)
    assert {_decode(u) >> 80 for u in same} == {ms}
    assert [_decode(b) - _decode(a) for a, b in zip(same, same[1:])] == [1] * 999  # the random part + 1


def test_every_bit_of_the_random_part_is_encoded(monkeypatch):
    rng = random.Random(17)
    for _ in range(2000):
        ms, rand = rng.randrange(2**48), rng.randrange(2**80)
        monkeypatch.setattr(ids, "_last", (0, 0))
        monkeypatch.setattr(ids.os, "urandom", lambda n, r=rand: r.to_bytes(n, "big"))
        assert _decode(ulid(ms)) == (ms << 80) | rand
