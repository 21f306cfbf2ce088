"""Walkers run at background priority (walkers.lowPriority); the writer and the front do not.

Read from the kernel (psutil: /proc/<pid>/stat and ioprio_get), not from
what the actors say about themselves, and beside what `ctl status` shows.
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
    # The embed walker answers queries on a thread that kept the normal priority.
    assert BASE in _thread_nices(actors["walker.embed"]["pid"]), _thread_nices(actors["walker.embed"]["pid"])

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
    shown = {a["name"]: a["priority"] for a in s.status() if a["name"] in walkers}
    assert shown == {n: f"{BASE}/-" for n in walkers}, shown
