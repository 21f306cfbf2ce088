"""ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable."""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
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
    value = (ms << 80) | (rand & ((1 << 80) - 1))
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(125, -1, -5))


def now_ms() -> int:
    return int(time.time() * 1000)
