"""Background priority for walkers: the batch scheduling class, lower CPU
(nice) and I/O (ioprio) priority.

On a 2-core box a walker draining a backlog competes with the front's
queries, the writer and the hook; at a lower priority it gets what they
leave. The batch class adds that a thread never preempts the running one
when it wakes (a walker woken by the writer's answer or event; the writer's
checkpoint thread, ``background_thread``). Each such preemption of the
writer could cost it a whole scheduler tick: the next thread picked was
often the embed walker's idle-class child, owed CPU time by then, which ran
until the tick (4-5 ms) while the writer waited with a capture's ack. Re-draining
200k chunks of a 1M-node store twice each way (eval/bench_scale, perf sched):
the writer's waits over 0.5 ms came to 71 and 129 ms a minute, against 144
and 209 before.

Linux keeps all three per thread: ``lower_this_thread()`` lowers the
calling thread and the threads it starts afterwards, so a walker that must
answer someone promptly (the embed walker's query thread) starts that thread
first. Config ``walkers.lowPriority`` (default true) turns it off.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

NICE = 10  # CFS gives a nice-10 thread about a tenth of a nice-0 one's share when both want the CPU
IO_LEVEL = 7  # the lowest level of the best-effort class (not IDLE: a busy disk would starve it)


def lower_this_thread(config) -> dict:
    """Apply ``walkers.lowPriority`` to the calling thread, which must be the
    main one (the I/O priority is set on the process's main task); what was set."""
    if not config.walkers.lowPriority:
        return {}
    out = {}
    if background_thread():
        out["policy"] = "batch"
    try:
        current = os.getpriority(os.PRIO_PROCESS, 0)  # Linux: this thread
        if current < NICE:
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
        out["nice"] = max(current, NICE)
    except (OSError, AttributeError) as e:
        log.info("background priority: nice not changed (%s)", e)
    import psutil

    if hasattr(psutil, "IOPRIO_CLASS_BE"):  # Linux only
        try:
            # The main thread's task: called from it, this is the calling thread.
            psutil.Process().ionice(psutil.IOPRIO_CLASS_BE, IO_LEVEL)
            out["io"] = f"be/{IO_LEVEL}"
        except (OSError, psutil.Error) as e:
            log.info("background priority: I/O priority not changed (%s)", e)
    return out


def background_thread() -> bool:
    """The calling thread (and those it starts) into the batch class, its nice
    value kept; False where there is none (not Linux)."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))  # Linux: this thread
    except (OSError, AttributeError) as e:
        log.info("background priority: scheduling class not changed (%s)", e)
        return False
    return True


def describe(ps) -> str | None:
    """A child's priority for ``ctl status``, from its psutil.Process: ``10/be7``, ``0/-``."""
    import psutil

    try:
        nice = ps.nice()
        io = ps.ionice() if hasattr(ps, "ionice") else None
    except (psutil.Error, OSError):
        return None
    if io is None or int(io.ioclass) == getattr(psutil, "IOPRIO_CLASS_NONE", 0):
        return f"{nice}/-"
    name = {
        getattr(psutil, "IOPRIO_CLASS_RT", 1): "rt",
        getattr(psutil, "IOPRIO_CLASS_BE", 2): "be",
        getattr(psutil, "IOPRIO_CLASS_IDLE", 3): "idle",
    }.get(int(io.ioclass), "?")
    return f"{nice}/{name}{io.value if name != 'idle' else ''}"
