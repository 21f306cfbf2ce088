"""The embed walker's backlog batches, computed in a child process of the idle scheduling class.

While the walker drained a backlog on a thread at nice 10, a hook capture
waited for the writer p95 4.0-4.4 ms, against 2.0 idle (100k store,
``eval/bench_scale --embed-backlog``): the writer, woken for it, often waited a
scheduler tick behind the computation. Any other thread preempts a SCHED_IDLE
one at once, and the p95 came down to 1.5-1.6 ms. But a SCHED_IDLE thread that
holds the GIL while normal work fills the cores stalls every thread of its
process: 1.3 s a GIL handoff here beside two busy loops, and the walker's
heartbeat pulse and query thread are in that process. A child has a GIL of
its own.

Forked once the provider is loaded and before any other thread of the walker
uses it (the query thread starts after): the model's pages are shared, not
copied, and no lock another thread held is copied held. The child answers one
batch at a time on a pipe, computing it a slice at a time, each once the
writer has no batch of requests marked (memtree/runtime/foreground.py). It
ends when the pipe closes (the walker stopped or died), and it is in the
walker's process group, which the supervisor signals.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
from concurrent.futures import TimeoutError as FutureTimeout

from memtree.recall.embeddings import ProviderUnavailable
from memtree.runtime import foreground

log = logging.getLogger(__name__)

STOP_WAIT_S = 2.0  # for the child to finish its batch and go at on_stop, then SIGKILL


class ComputeGone(RuntimeError):
    """The child ended (killed, out of memory): the walker exits and the supervisor starts it afresh."""


def lower_to_idle() -> None:
    """The calling process into the idle class (or nice 19 where there is none)."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        try:
            os.setpriority(os.PRIO_PROCESS, 0, 19)
        except OSError:
            pass  # left as it was


def _close_inherited(keep: int) -> None:
    """Every descriptor the walker had open but ``keep`` and the standard streams: the
    walker's singleton lock (an flock lives while any copy of it is open), its sockets,
    its reader's database file and the walker's end of our pipe (whose closing is how
    the child learns the walker is gone)."""
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        fds = range(3, 1024)
    for fd in fds:
        if fd > 2 and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass  # the listing's own descriptor, gone already


# Texts computed between two looks at the writer's foreground mark
# (memtree/runtime/foreground.py): a text of code takes about half a
# millisecond, so a capture arriving mid-batch shares the machine with this
# child for about a millisecond at most. Stepping aside, the drain of a 100k
# backlog ran at 882-1,079 chunks/s, against 1,007-1,222 without.
SLICE_TEXTS = 2


def embed_stepping_aside(provider, texts: list[str], watch: foreground.Watch):
    """``provider.embed(texts)``, SLICE_TEXTS at a time, each slice once the
    writer's foreground mark is down (or its wait gave up)."""
    if len(texts) <= SLICE_TEXTS:
        watch.wait()
        return provider.embed(texts)
    import numpy as np

    parts = []
    for at in range(0, len(texts), SLICE_TEXTS):
        watch.wait()
        parts.append(provider.embed(texts[at : at + SLICE_TEXTS]))
    return np.concatenate(parts)


def _serve(provider, conn, store_dir: str) -> None:
    """The child: batches in, vectors (or the error's type and message) out, until the pipe closes."""
    _close_inherited(conn.fileno())
    signal.set_wakeup_fd(-1)  # the walker's wake pipe is not ours to write
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    lower_to_idle()
    watch = foreground.Watch(store_dir)
    while True:
        try:
            texts = conn.recv()
        except (EOFError, OSError):
            return
        try:
            before = watch.waited_s
            out = ("ok", embed_stepping_aside(provider, texts, watch), watch.waited_s - before)
        except Exception as e:  # noqa: BLE001 - told to the walker, which decides
            out = ("error", type(e).__name__, str(e))
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            return


class ComputeChild:
    """A forked child running ``provider.embed``; one batch at a time."""

    def __init__(self, provider, store_dir: str):
        ctx = multiprocessing.get_context("fork")
        self._conn, child_end = ctx.Pipe()
        # daemon: a walker that exits without on_stop (a crash in on_start) terminates it at exit
        # instead of joining a child that waits for the pipe the exit would close.
        self._proc = ctx.Process(
            target=_serve, args=(provider, child_end, store_dir), name="embed-compute", daemon=True
        )
        self._proc.start()
        child_end.close()
        self.pid = self._proc.pid
        self._pending = False
        self.stepped_aside_s = 0.0  # what the child waited for the writer's batches, in total

    def alive(self) -> bool:
        return self._proc.is_alive()

    def submit(self, texts: list[str]) -> ComputeChild:
        if self._pending:
            raise RuntimeError("a batch is still being computed")
        if not self.alive():
            raise ComputeGone(f"the embedding process {self.pid} ended (exit code {self._proc.exitcode})")
        self._conn.send(texts)
        self._pending = True
        return self

    def result(self, timeout: float):
        """The vectors of the batch submitted (a Future's ``result``: FutureTimeout while it works)."""
        if not self._conn.poll(timeout):
            raise FutureTimeout
        try:
            reply = self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(STOP_WAIT_S)
            raise ComputeGone(
                f"the embedding process {self.pid} ended mid-batch (exit code {self._proc.exitcode})"
            ) from None
        self._pending = False
        if reply[0] == "ok":
            self.stepped_aside_s += reply[2]
            return reply[1]
        _, kind, message = reply
        if kind == ProviderUnavailable.__name__:
            raise ProviderUnavailable(message)
        raise RuntimeError(f"embedding failed in the child: {kind}: {message}")

    def close(self) -> None:
        """End the child: its pipe closed, then SIGKILL if it is still at a batch."""
        self._conn.close()
        self._proc.join(STOP_WAIT_S)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(STOP_WAIT_S)
