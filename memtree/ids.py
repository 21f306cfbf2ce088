"""ULIDs: 48-bit millisecond time + 80 random bits, Crockford base32, sortable."""

from __future__ import annotations

import base64
import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# base64's RFC 4648 base32 digits -> Crockford's: one C-level pass instead of 26 Python steps a ULID.
_CROCKFORD = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", _ALPHABET.encode())
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
    # 20 bytes are 32 digits; the value's 130 bits (two leading zeros) are the last 26.
    return base64.b32encode(value.to_bytes(20, "big"))[6:].translate(_CROCKFORD).decode()


def now_ms() -> int:
    return int(time.time() * 1000)
