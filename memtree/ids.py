"""ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Every pair of digits, indexed by 10 bits: a ULID is 14 lookups (base64's
# b32encode walks 5-byte groups in Python, twice the cost; the writer makes one a note).
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
_PAIR_SHIFTS = tuple(range(115, 4, -10))  # the 12 pairs below the top digit, above the last
_last = (0, 0)


def ulid(now_ms: int | None = None) -> str:
    """A new ULID, monotonic within this process (same ms: random part + 1)."""
    global _last
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    if ms <= _last[0]:
        ms, rand = _last[0], _last[1] + 1
    else:
        rand = int.from_bytes(os.urandom(10), "big")
    _last = (ms, rand)
    v = (ms << 80) | (rand & ((1 << 80) - 1))  # 128 bits: one 3-bit digit, then 25 of 5 bits
    return _ALPHABET[v >> 125] + "".join([_PAIRS[v >> s & 1023] for s in _PAIR_SHIFTS]) + _ALPHABET[v & 31]


def now_ms() -> int:
    return int(time.time() * 1000)
