"""The capture heartbeat: is the hook actually running, and does memtree hold
what the agent saw?

Every capture-hook run counts one outcome for its session: ``stored`` (the
writer acknowledged it), ``spooled`` (no ack; left in the spool), ``refused``
(stored nothing by rule: a denied path or command, ``capture.bash`` off,
a forgotten hash, nothing to store such as an unchanged re-Read) or
``failed`` (lost). ``seen`` counts every run. The Stop
hook (memtree.hooks.stop) then counts the Read/Grep/Bash calls in the
session's transcript and records ``gap`` = calls - (stored + spooled +
refused): calls memtree has no account of (a hook that is not registered,
a missing interpreter, a crash). The comparison is by ``tool_use_id``, not by
count: each accounted run adds its id to the session's set, and ``gap`` is
the completed calls of the transcript whose id is not in it. (By count, a
failed call's hook run, which the transcript does not count as completed,
hid a successful call that was never captured.)

State is one fixed-size file, ``<store>/heartbeat.bin``: a header,
``SLOTS`` slots, one per session, the least recently used slot reused, and
per slot a Bloom filter of the accounted ids (``BLOOM_BYTES``, ``BLOOM_K``
probes), so it never grows. A Bloom filter never misses an id it holds, so it
never reports a false gap; a call that was lost can hide behind a false
positive with a probability below 0.1 % up to 1,000 calls in a session. Updates take an exclusive flock (hooks of parallel tool calls
run concurrently). Standard library only, no ``struct``: the hook imports
this under ``python -I -S``.
"""

import os

from memtree.capture.claude_code import CAPTURED_TOOLS

MAGIC = b"MTHB0002"  # 0001 had no id sets: such a file starts over
SLOTS = 64
SID_BYTES = 48
# Counters in slot order; each a little-endian uint32.
COUNTERS = ("seen", "stored", "spooled", "refused", "failed", "transcript_calls", "gap", "checks")
OUTCOMES = ("stored", "spooled", "refused", "failed")
_TIMES = ("last_ms", "checked_ms")  # uint64 each
SLOT_BYTES = SID_BYTES + 4 * len(COUNTERS) + 8 * len(_TIMES)
HEADER_BYTES = len(MAGIC) + SLOTS * SLOT_BYTES  # what a count reads: every slot's session and times
BLOOM_BYTES = 4096  # per slot: 32,768 bits
BLOOM_K = 4
FILE_BYTES = HEADER_BYTES + SLOTS * BLOOM_BYTES
ACCOUNTED = ("stored", "spooled", "refused")  # outcomes whose call memtree has an account of
FILE_NAME = "heartbeat.bin"
# The native tools memtree captures: the calls a transcript is checked for.


def path_for(store_dir: str) -> str:
    return os.path.join(store_dir, FILE_NAME)


def _sid_key(session_id: str) -> bytes:
    key = session_id.encode("utf-8", "replace")[:SID_BYTES]
    return key.ljust(SID_BYTES, b"\0")


def _decode_slot(raw: bytes) -> dict:
    sid = raw[:SID_BYTES].rstrip(b"\0").decode("utf-8", "replace")
    out: dict = {"session": sid}
    at = SID_BYTES
    for name in COUNTERS:
        out[name] = int.from_bytes(raw[at : at + 4], "little")
        at += 4
    for name in _TIMES:
        out[name] = int.from_bytes(raw[at : at + 8], "little")
        at += 8
    return out


def _encode_slot(slot: dict) -> bytes:
    parts = [_sid_key(slot["session"])]
    parts += [min(int(slot.get(n, 0)), 0xFFFFFFFF).to_bytes(4, "little") for n in COUNTERS]
    parts += [int(slot.get(n, 0)).to_bytes(8, "little") for n in _TIMES]
    return b"".join(parts)


def _pick(data: bytes, key: bytes) -> tuple[int, bool, int]:
    """(slot index, found, newest last_ms of the other slots): the session's
    slot, else an empty one, else the least recently used."""
    found, empty, oldest, oldest_ms, newest_ms = -1, -1, 0, None, 0
    last_at = SID_BYTES + 4 * len(COUNTERS)
    for i in range(SLOTS):
        base = len(MAGIC) + i * SLOT_BYTES
        sid = data[base : base + SID_BYTES]
        if sid[:1] == b"\0":
            if empty < 0:
                empty = i
            continue
        if sid == key:
            found = i
            continue
        ms = int.from_bytes(data[base + last_at : base + last_at + 8], "little")
        if oldest_ms is None or ms < oldest_ms:
            oldest, oldest_ms = i, ms
        newest_ms = max(newest_ms, ms)
    if found >= 0:
        return found, True, newest_ms
    return (empty if empty >= 0 else oldest), False, newest_ms


def _probes(tool_use_id: str) -> list[int]:
    """Bit positions of an id: FNV-1a 64 and double hashing (stdlib only, no
    hashlib import on the hook's path; Python's hash() is salted per process)."""
    h1 = h2 = 0xCBF29CE484222325
    for b in tool_use_id.encode("utf-8", "replace"):
        h1 = ((h1 ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    for b in tool_use_id.encode("utf-8", "replace")[::-1]:
        h2 = ((h2 ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    h2 |= 1
    bits = BLOOM_BYTES * 8
    return [(h1 + i * h2) % bits for i in range(BLOOM_K)]


def _bloom_at(i: int) -> int:
    return HEADER_BYTES + i * BLOOM_BYTES


def _has(bloom: bytes, tool_use_id: str) -> bool:
    return all(bloom[p >> 3] & (1 << (p & 7)) for p in _probes(tool_use_id))


def _update(store_dir: str, session_id: str, change, add_id: str | None = None, check=None) -> None:
    """Lock, read the header, apply ``change(slot)`` to the session's slot,
    write it back; ``add_id`` goes into the slot's id set, ``check(bloom)``
    (if given) reads it first. A slot taken by a new session starts with an
    empty set."""
    import fcntl

    from memtree.paths import makedirs_private

    makedirs_private(store_dir)
    fd = os.open(path_for(store_dir), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = os.pread(fd, HEADER_BYTES, 0)
        if len(data) != HEADER_BYTES or not data.startswith(MAGIC) or os.fstat(fd).st_size != FILE_BYTES:
            data = MAGIC + b"\0" * (HEADER_BYTES - len(MAGIC))  # new, old or damaged: start over
            os.pwrite(fd, data + b"\0" * (FILE_BYTES - HEADER_BYTES), 0)
        key = _sid_key(session_id)
        i, found, newest_ms = _pick(data, key)
        base = len(MAGIC) + i * SLOT_BYTES
        slot = _decode_slot(data[base : base + SLOT_BYTES] if found else bytes(SLOT_BYTES))
        slot["session"] = session_id
        bloom = os.pread(fd, BLOOM_BYTES, _bloom_at(i)) if found else bytes(BLOOM_BYTES)
        if check is not None:
            check(bloom)
        change(slot)
        if slot["last_ms"] <= newest_ms:
            # Runs in one millisecond (or after a clock stepped back) would tie, and the least
            # recently used slot would be a guess: the slot just used is stamped strictly newest.
            slot["last_ms"] = newest_ms + 1
        if add_id:
            bits = bytearray(bloom)
            for p in _probes(add_id):
                bits[p >> 3] |= 1 << (p & 7)
            bloom = bytes(bits)
        if add_id or not found:  # a reused slot forgets the old session's ids
            os.pwrite(fd, bloom, _bloom_at(i))
        os.pwrite(fd, _encode_slot(slot), base)
    finally:
        os.close(fd)  # releases the lock


def ensure(store_dir: str) -> None:
    """Create the file at its full size while there is space (the writer does
    at start), so a hook on a full disk can still count a lost capture: counts
    overwrite bytes in place and need no new space."""
    import fcntl

    fd = os.open(path_for(store_dir), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size != FILE_BYTES or not os.pread(fd, len(MAGIC), 0) == MAGIC:
            os.ftruncate(fd, 0)
            os.pwrite(fd, MAGIC + b"\0" * (FILE_BYTES - len(MAGIC)), 0)
    finally:
        os.close(fd)


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


def count(store_dir: str, session_id: str, outcome: str, tool_use_id: str | None = None) -> None:
    """One hook run for ``session_id`` ended in ``outcome`` (one of OUTCOMES);
    an accounted run adds its call's ``tool_use_id`` to the session's set."""
    now = _now_ms()

    def change(slot: dict) -> None:
        slot["seen"] = slot.get("seen", 0) + 1
        slot[outcome] = slot.get(outcome, 0) + 1
        slot["last_ms"] = now

    add = tool_use_id if outcome in ACCOUNTED and isinstance(tool_use_id, str) and tool_use_id else None
    _update(store_dir, session_id or "?", change, add_id=add)


def record_check(store_dir: str, session_id: str, transcript_ids) -> dict:
    """The Stop hook's comparison: the ids of the transcript's completed calls
    (``transcript_ids``) against the ids the hook accounted for; returns the
    session's slot afterwards."""
    now = _now_ms()
    ids = {i for i in transcript_ids if isinstance(i, str) and i}
    out: dict = {}
    missing = [0]

    def check(bloom: bytes) -> None:
        missing[0] = sum(1 for i in ids if not _has(bloom, i))

    def change(slot: dict) -> None:
        slot["transcript_calls"] = len(ids)
        slot["gap"] = missing[0]
        slot["checks"] = slot.get("checks", 0) + 1
        slot["checked_ms"] = now
        slot["last_ms"] = max(slot.get("last_ms", 0), now)
        out.update(slot)

    _update(store_dir, session_id or "?", change, check=check)
    return out


def read_all(store_dir: str) -> list[dict]:
    """Every session slot in use, most recent first (empty when there is no file)."""
    try:
        with open(path_for(store_dir), "rb") as f:
            data = f.read(HEADER_BYTES)
    except OSError:
        return []
    if len(data) != HEADER_BYTES or not data.startswith(MAGIC):
        return []
    slots = []
    for i in range(SLOTS):
        base = len(MAGIC) + i * SLOT_BYTES
        if data[base : base + 1] != b"\0":
            slots.append(_decode_slot(data[base : base + SLOT_BYTES]))
    return sorted(slots, key=lambda s: s["last_ms"], reverse=True)


def transcript_ids(transcript_path: str, tools=CAPTURED_TOOLS) -> set[str]:
    """The tool_use_ids of the calls of ``tools`` in a Claude Code session
    transcript (JSONL) that completed without error. A call the user denied,
    or one that failed, may fire no capture hook at all: expecting one would
    report a false gap (a failed call whose hook did run is simply not asked for)."""
    import json

    wanted, ok = set(), set()
    with open(transcript_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if '"tool_use"' not in line and '"tool_result"' not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a line still being written
            msg = entry.get("message") if isinstance(entry, dict) else None
            content = msg.get("content") if isinstance(msg, dict) else None
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and block.get("name") in tools:
                    wanted.add(block.get("id"))
                elif block.get("type") == "tool_result" and not block.get("is_error"):
                    ok.add(block.get("tool_use_id"))
    return {i for i in wanted & ok if isinstance(i, str) and i}


def problems(slots: list[dict]) -> list[str]:
    """One line per session whose captures do not add up."""
    out = []
    for s in slots:
        if s["gap"]:
            out.append(
                f"session {s['session'][:12]}: {s['gap']} of {s['transcript_calls']} Read/Grep/Bash "
                f"calls in the transcript were not captured (hook runs seen: {s['seen']})"
            )
        elif s["failed"]:
            out.append(
                f"session {s['session'][:12]}: {s['failed']} of {s['seen']} hook runs failed (see logs/hook.log)"
            )
    return out


def summary(slots: list[dict]) -> str:
    """One line for ``memtree ctl status``."""
    if not slots:
        return "capture: no hook run recorded yet"
    totals = {k: sum(s[k] for s in slots) for k in ("seen", "stored", "spooled", "refused", "failed")}
    head = (
        f"capture: {len(slots)} sessions, hook runs {totals['seen']} (stored {totals['stored']}, "
        f"spooled {totals['spooled']}, refused {totals['refused']}, failed {totals['failed']})"
    )
    bad = problems(slots)
    return head + ("; GAP: " + "; ".join(bad) if bad else "; no gap")
