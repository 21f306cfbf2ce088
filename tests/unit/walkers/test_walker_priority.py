"""Walkers run at background priority (walkers.lowPriority); the writer and the front do not.

Read from the kernel (psutil: /proc/<pid>/stat and ioprio_get; the
scheduling policy of every thread), not from what the actors say about
themselves, and beside what `ctl status` shows.
"""

import json
import os

import psutil

from memtree.runtime import priority

WALKERS = {"walker.filter", "walker.staleness", "walker.pruner", "walker.embed", "walker.dedupe", "walker.summarize"}
BASE = os.getpriority(os.PRIO_PROCESS, 0)  # children start at the test runner's nice


def _kernel_priority(pid: int) -> tuple[int, int, int]:
    p = psutil.Process(pid)
    io = p.ionice()
    return p.nice(), int(io.ioclass), io.value


def _thread_nices(pid: int) -> list[int]:
    return [psutil.Process(t.id).nice() for t in psutil.Process(pid).threads()]


def _batch_threads(pid: int) -> set[int]:
    """The threads of ``pid`` in the batch scheduling class (never preempt on waking)."""
    return {t.id for t in psutil.Process(pid).threads() if os.sched_getscheduler(t.id) == os.SCHED_BATCH}


def test_walkers_run_niced_with_low_io_priority_the_writer_does_not_and_ctl_status_shows_it(system_factory):
    s = system_factory
    s.write_config()
    s.serve()
    actors = {a["name"]: a for a in s.wait_running()}
    walkers = WALKERS & set(actors)
    assert walkers == WALKERS & set(s.expected) and "walker.embed" in walkers  # positive control: all measured
    low = (max(BASE, priority.NICE), psutil.IOPRIO_CLASS_BE, priority.IO_LEVEL)
    kernel = {n: _kernel_priority(a["pid"]) for n, a in actors.items()}
    assert {n for n, k in kernel.items() if k == low} == walkers, kernel
    assert kernel["writer"][0] == BASE and kernel["writer"][1] != psutil.IOPRIO_CLASS_BE, kernel
    # Waking, a walker never takes the core from the writer: its threads are of the batch class.
    batch = {n: _batch_threads(actors[n]["pid"]) for n in actors}
    assert {n for n in walkers if actors[n]["pid"] in batch[n]} == walkers, batch
    # The writer's main thread is not; its WAL checkpoint thread (one) is.
    writer = actors["writer"]["pid"]
    assert len(batch["writer"]) == 1 and writer not in batch["writer"], batch["writer"]
    # The embed walker answers queries on a thread that kept the normal priority.
    assert BASE in _thread_nices(actors["walker.embed"]["pid"]), _thread_nices(actors["walker.embed"]["pid"])
    assert len(batch["walker.embed"]) < len(psutil.Process(actors["walker.embed"]["pid"]).threads())

    done = s.ctl("status", "--json")
    assert done.returncode == 0, done.stderr
    shown = {a["name"]: a["priority"] for a in json.loads(done.stdout)["actors"]}
    assert {n for n, p in shown.items() if p == f"{low[0]}/be{priority.IO_LEVEL}"} == walkers, shown
    table = s.ctl("status")
    header, *rows = table.stdout.split("\n\n")[0].splitlines()
    col = header.split().index("PRIO")
    assert {r.split()[0] for r in rows if r.split()[col] == f"{low[0]}/be7"} == walkers, table.stdout


def test_with_low_priority_off_every_walker_keeps_the_normal_priority(system_factory):
    s = system_factory
    s.write_config({"walkers": {"lowPriority": False}})
    s.serve()
    actors = {a["name"]: a for a in s.wait_running()}
    walkers = WALKERS & set(actors)
    assert "walker.embed" in walkers
    kernel = {n: _kernel_priority(actors[n]["pid"]) for n in walkers}
    assert {n for n, k in kernel.items() if k[0] == BASE and k[1] != psutil.IOPRIO_CLASS_BE} == walkers, kernel
    assert {n for n in walkers if _batch_threads(actors[n]["pid"])} == set(), "a walker thread in the batch class"
    shown = {a["name"]: a["priority"] for a in s.status() if a["name"] in walkers}
    assert shown == {n: f"{BASE}/-" for n in walkers}, shown
