"""ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Every pair of digits, indexed by 10 bits: a ULID is 13 lookups (base64's
# b32encode walks 5-byte groups in Python, twice the cost; the writer makes one a note).
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]
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
    p = _PAIRS
    return (
        _ALPHABET[v >> 125]
        + p[v >> 115 & 1023]
        + p[v >> 105 & 1023]
        + p[v >> 95 & 1023]
        + p[v >> 85 & 1023]
        + p[v >> 75 & 1023]
        + p[v >> 65 & 1023]
        + p[v >> 55 & 1023]
        + p[v >> 45 & 1023]
        + p[v >> 35 & 1023]
        + p[v >> 25 & 1023]
        + p[v >> 15 & 1023]
        + p[v >> 5 & 1023]
        + _ALPHABET[v & 31]
    )


def now_ms() -> int:
    return int(time.time() * 1000)
