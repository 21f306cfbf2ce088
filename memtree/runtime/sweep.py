"""Remove per-user runtime dirs (``<tmp>/memtree-<uid>/<hash>/``) that dead
sessions left behind (a SIGKILLed supervisor never runs its cleanup).

A dir is stale only if nothing in it is alive: every ``*.lock`` file can be
flocked (the kernel drops a dead holder's lock; a live actor holds its own),
no socket file accepts a connection (a live zmq bind listens; a dead one's
file refuses), and it was not touched for ``MIN_AGE_S`` (a session being set
up has not bound yet). The locks stay held while the dir is emptied, so an
actor starting meanwhile waits (standby) and then reopens its lock path
(actors/base.SingletonLock), and rmdir never removes a non-empty dir.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import stat
import time

log = logging.getLogger(__name__)

MIN_AGE_S = 60.0  # younger dirs may belong to a session still binding its sockets
BUDGET_S = 0.5  # per sweep, so thousands piled up cannot stall a start; the next start goes on


def _socket_alive(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(0.2)
    try:
        s.connect(path)
    except OSError as e:
        return e.errno not in (errno.ECONNREFUSED, errno.ENOENT)  # anything else: assume a live owner
    else:
        return True
    finally:
        s.close()


def _sweep_one(run_dir: str, now: float) -> bool:
    """Empty and remove ``run_dir`` if nothing in it is alive; True if removed."""
    try:
        if now - os.stat(run_dir).st_mtime < MIN_AGE_S:
            return False
        names = os.listdir(run_dir)
    except OSError:
        return False
    held: list[int] = []
    try:
        sockets, others = [], []
        for name in names:
            path = os.path.join(run_dir, name)
            try:
                mode = os.lstat(path).st_mode
            except FileNotFoundError:
                continue
            if name.endswith(".lock") and stat.S_ISREG(mode):
                fd = os.open(path, os.O_RDWR)
                held.append(fd)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return False  # a live actor holds it
                others.append(path)
            elif stat.S_ISSOCK(mode):
                sockets.append(path)
            else:
                return False  # not a file memtree leaves: not ours to judge
        if any(_socket_alive(p) for p in sockets):
            return False
        for path in sockets + others:  # lock files last, still held
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        try:
            os.rmdir(run_dir)
        except OSError:
            return False  # something arrived meanwhile: its owner keeps it
        return True
    finally:
        for fd in held:
            os.close(fd)


def sweep(parent: str, keep: str, now: float | None = None, budget_s: float = BUDGET_S) -> int:
    """Remove stale dirs under ``parent`` (the per-user runtime dir), never
    ``keep`` (ours), for at most ``budget_s``; the number removed."""
    now = time.time() if now is None else now
    stop_at = time.monotonic() + budget_s
    try:
        entries = os.listdir(parent)
    except OSError:
        return 0
    removed = 0
    for name in entries:
        if time.monotonic() > stop_at:
            break
        path = os.path.join(parent, name)
        if path == keep or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            if _sweep_one(path, now):
                removed += 1
        except OSError as e:
            log.debug("runtime sweep: %s: %s", path, e)
    return removed


def sweep_for(paths) -> int:
    """The sweep for a store whose sockets live in a per-user runtime dir
    (none for a store with its own ``<store>/run``)."""
    run_dir = paths.run_dir
    if run_dir.startswith(paths.store_dir + os.sep):
        return 0
    parent = os.path.dirname(run_dir)
    if os.path.basename(parent) != f"memtree-{os.getuid()}":
        return 0  # not the layout memtree.paths makes: leave it alone
    return sweep(parent, run_dir)
