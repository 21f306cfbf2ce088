"""The spool: where a hook leaves a capture the writer did not acknowledge.

One JSON line per capture: ``{"id": <unique>, "ts": <ms>, "payload": {...}}``,
the payload already redacted, ``ts`` when the tool call was captured (the
writer dates the capture by it). Appends take an exclusive flock and write the
whole line in one ``write()``, so concurrent hooks never interleave; a write
that fails half way (disk full) is cut back off, so no partial line is left.

Reading is bounded: entries stream one line at a time, and a line longer
than ``MAX_LINE_BYTES`` is skipped as damaged without being held in memory.

Draining is crash-safe without a second copy: the writer renames the spool
to ``spool.<ns>.draining`` (new hooks start a fresh spool), commits each entry
together with its id in ``spool_applied`` (so a crash mid-drain never applies
an entry twice), and deletes the draining file only after every entry in it
is committed (so a crash never loses one).

Standard library only: the hook imports this under ``python -I -S``.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

DRAINING_SUFFIX = ".draining"
# The hook cuts each string at 1M characters; escaped as ASCII that is at most
# ~6 MB, so a longer line is damage (or not ours) and is skipped unread.
MAX_LINE_BYTES = 64 * 1024 * 1024


def new_entry_id() -> str:
    return f"{time.time_ns():x}-{os.getpid():x}-{os.urandom(4).hex()}"


def append(path: str, payload: dict, ts: int | None = None) -> str:
    """Append one (already redacted) payload captured at ``ts`` (epoch ms,
    default now); return its entry id. Raises OSError (disk full) with the
    file as it was."""
    entry_id = new_entry_id()
    ts = int(time.time() * 1000) if ts is None else int(ts)
    line = json.dumps({"id": entry_id, "ts": ts, "payload": payload}, separators=(",", ":"), ensure_ascii=True) + "\n"
    data = line.encode("ascii")
    while True:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                continue  # a drain renamed the file while we waited: reopen
            size = os.fstat(fd).st_size
            try:
                while data:  # one write() in practice; loop only on a short write
                    data = data[os.write(fd, data) :]
            except OSError:
                os.ftruncate(fd, size)  # shrinking needs no space: never leave half a line
                raise
            return entry_id
        finally:
            os.close(fd)  # closing drops the lock


def claim(path: str) -> list[str]:
    """Move the live spool aside and return every draining file, oldest first.

    Takes the append lock for the rename so no hook is mid-write on the file
    being moved; leftovers from a crashed drain are returned too.
    """
    if os.path.exists(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_size > 0:
                os.rename(path, f"{path}.{time.time_ns():020d}{DRAINING_SUFFIX}")
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)
    folder, base = os.path.split(path)
    return sorted(
        os.path.join(folder, name)
        for name in os.listdir(folder or ".")
        if name.startswith(base + ".") and name.endswith(DRAINING_SUFFIX)
    )


def read(draining_path: str):
    """Yield (entry_id, payload, ts, line bytes) per line, streaming; a damaged
    or oversized line yields (None, error text, 0, 0)."""
    with open(draining_path, "rb") as f:
        lineno = 0
        while raw := f.readline(MAX_LINE_BYTES + 1):
            lineno += 1
            if len(raw) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n"):  # skip the rest without keeping it
                    raw = f.readline(1 << 20)
                yield None, f"line {lineno}: longer than {MAX_LINE_BYTES} bytes", 0, 0
                continue
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                entry_id, payload, ts = entry["id"], entry["payload"], entry.get("ts", 0)
                if not isinstance(entry_id, str) or not isinstance(payload, dict):
                    raise ValueError("wrong shape")
            except (ValueError, KeyError, TypeError, AttributeError) as e:
                yield None, f"line {lineno}: {type(e).__name__}", 0, 0
                continue
            yield entry_id, payload, ts if isinstance(ts, int) and not isinstance(ts, bool) else 0, len(raw)


def release(draining_path: str) -> None:
    """Delete a fully committed draining file."""
    try:
        os.unlink(draining_path)
    except FileNotFoundError:
        pass


def pending_count(path: str) -> int:
    """Lines waiting in the spool and in unfinished drains (for status)."""
    total = 0
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except FileNotFoundError:
        return 0
    for name in names:
        if name == base or (name.startswith(base + ".") and name.endswith(DRAINING_SUFFIX)):
            try:
                total += _count_lines(os.path.join(folder, name))
            except OSError:
                pass
    return total


def _count_lines(path: str) -> int:
    """Complete lines in a file, read in blocks (a line may be huge)."""
    n = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            n += block.count(b"\n")
    return n


def oldest_ts(path: str) -> int:
    """Capture time (ms) of the first entry of the spool and of each
    unfinished drain, the oldest of them; 0 when there is none. Entries are
    appended about in capture order (a hook appends seconds after its capture
    at most), so the first line of each file stands for it; reads one line per file."""
    folder, base = os.path.split(path)
    try:
        names = os.listdir(folder or ".")
    except FileNotFoundError:
        return 0
    oldest = 0
    for name in names:
        if name == base or (name.startswith(base + ".") and name.endswith(DRAINING_SUFFIX)):
            try:
                with open(os.path.join(folder, name), "rb") as f:
                    first = f.readline(1 << 16)
                ts = json.loads(first).get("ts") if first.endswith(b"\n") else None
            except (OSError, ValueError, AttributeError):
                ts = None
            if ts is None:  # a huge or damaged first line: the file's own age stands for it
                try:
                    ts = int(os.stat(os.path.join(folder, name)).st_mtime * 1000)
                except OSError:
                    continue
            if isinstance(ts, int) and ts > 0 and (oldest == 0 or ts < oldest):
                oldest = ts
    return oldest
