"""Idle CPU per actor: `memtree serve --no-front` on an empty project, no traffic.

    .venv/bin/python -m memtree.eval.bench_idle [--seconds 10]

Prints each process's use as a percent of one core over the window, from
psutil cpu_times deltas (memtree.runtime.cpu.measure), beside `sleep` measured in
the same window as the floor.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from memtree.runtime.cpu import measure
from memtree.runtime.group import start_group


def _memtree() -> list[str]:
    exe = shutil.which("memtree", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-P", "-m", "memtree.cli"]


def _running(project: str) -> dict[str, int] | None:
    from memtree.ops.ctl import CtlFailure, Supervisors
    from memtree.paths import paths_for_cwd

    try:
        sups = Supervisors(paths_for_cwd(project))
    except CtlFailure:
        return None
    try:
        actors = [a for st in sups.statuses().values() for a in st["actors"]]
    except CtlFailure:
        return None
    finally:
        sups.close()
    if actors and all(a["state"] == "RUNNING" for a in actors):
        return {a["name"]: a["pid"] for a in actors}
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="memtree-idle-")
    project = os.path.join(workdir, "project")
    os.makedirs(project)
    os.environ["MEMTREE_HOME"] = os.path.join(workdir, "home")
    proc = start_group([*_memtree(), "serve", "--no-front"], cwd=project)
    floor = subprocess.Popen(["sleep", str(args.seconds + 60)])
    try:
        deadline = time.monotonic() + 60
        while (pids := _running(project)) is None:
            if time.monotonic() > deadline or proc.poll() is not None:
                print("idle: the system did not come up", file=sys.stderr)
                return 1
            time.sleep(0.2)
        time.sleep(1.0)  # let the last start-up work settle
        pids = {**pids, "supervisor": proc.pid, "(sleep, the floor)": floor.pid}
        used = measure(list(pids.values()), args.seconds)
        print(f"idle CPU over {args.seconds:g} s, percent of one core (psutil cpu_times deltas):")
        for name, pid in pids.items():
            print(f"  {name:<22} {used.get(pid, float('nan')):6.2f} %")
        total = sum(used.get(pid, 0.0) for name, pid in pids.items() if not name.startswith("("))
        print(f"  {'total (memtree)':<22} {total:6.2f} %")
    finally:
        floor.kill()
        floor.wait()
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
