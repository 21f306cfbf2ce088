"""The spool: where a hook leaves a capture the writer did not acknowledge.

One JSON line per capture: ``{"id": <unique>, "ts": <ms>, "payload": {...}}``,
the payload already redacted. Appends take an exclusive flock and write the
whole line in one ``write()``, so concurrent hooks never interleave.

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


def new_entry_id() -> str:
    return f"{time.time_ns():x}-{os.getpid():x}-{os.urandom(4).hex()}"


def append(path: str, payload: dict) -> str:
    """Append one (already redacted) payload; return its entry id."""
    entry_id = new_entry_id()
    line = json.dumps({"id": entry_id, "ts": int(time.time() * 1000), "payload": payload},
                      separators=(",", ":"), ensure_ascii=True) + "\n"
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
            while data:  # one write() in practice; loop only on a short write
                data = data[os.write(fd, data):]
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
        os.path.join(folder, name) for name in os.listdir(folder or ".")
        if name.startswith(base + ".") and name.endswith(DRAINING_SUFFIX)
    )


def read(draining_path: str):
    """Yield (entry_id, payload) per line; a damaged line yields (None, error text)."""
    with open(draining_path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
                entry_id, payload = entry["id"], entry["payload"]
                if not isinstance(entry_id, str) or not isinstance(payload, dict):
                    raise ValueError("wrong shape")
            except (ValueError, KeyError, TypeError) as e:
                yield None, f"line {lineno}: {type(e).__name__}"
                continue
            yield entry_id, payload


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
                with open(os.path.join(folder, name), "rb") as f:
                    total += sum(1 for line in f if line.strip())
            except OSError:
                pass
    return total
