"""Process hygiene figures (issue 7, points 4 and 6).

1. ``bash`` with a background child holding the output
   (``sleep 300 & echo started``, timeout 3 s): wall time and answer of each
   run, beside ``echo started`` measured in the same run (the floor: what the
   shell itself takes). Before the fix each run took the whole timeout.
2. Disk-full recovery: a real writer on a small tmpfs (needs root to mount
   one; skipped otherwise). The disk is filled until the writer refuses a
   write, then the filler is deleted; the figure is the time from the delete
   to the first acknowledged write.

    .venv/bin/python -m memtree.eval.bench_robust [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from memtree.eval.stats import fmt_ms, summary


def _bash_round(runs: int, cwd: str) -> int:
    from memtree.tools.bash import _status, run_command

    series: dict[str, list[float]] = {"sleep 300 & echo started": [], "echo started": []}
    answers = set()
    for _ in range(runs):
        for command in series:
            t0 = time.perf_counter()
            res = asyncio.run(run_command(command, cwd, 3.0, 1 << 20))
            series[command].append(time.perf_counter() - t0)
            if command.startswith("sleep"):
                answers.add(_status(res, 3.0))
                print(f"  run {len(series[command])}: {series[command][-1] * 1000:7.1f} ms  [{_status(res, 3.0)}]")
    for command, samples in series.items():
        print(f"{command:28s} {fmt_ms(summary(samples))}")
    ratio = summary(series["sleep 300 & echo started"])["median"] / summary(series["echo started"])["median"]
    print(f"background child / floor: {ratio:.2f}x; distinct answers: {len(answers)}")
    return 0 if len(answers) == 1 else 1


def _fill(folder: str) -> str:
    path = os.path.join(folder, "filler")
    with open(path, "wb", buffering=0) as f:
        for block in (1 << 20, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * block)
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
    return path


def _disk_round(runs: int, workdir: str) -> int:
    from memtree import protocol
    from memtree.config.defaults import defaults
    from memtree.config.loader import Config, validate
    from memtree.errors import MemtreeError, Unavailable
    from memtree.paths import prepare_store, store_paths
    from memtree.runtime.actorenv import ActorContext
    from memtree.runtime.client import Caller

    home = os.path.join(workdir, "disk")
    os.makedirs(home)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m,mode=0700", "tmpfs", home], capture_output=True, text=True
    )
    if done.returncode != 0:
        print(f"disk-full recovery: skipped (cannot mount a tmpfs: {done.stderr.strip()})")
        return 0
    project = os.path.join(workdir, "project")
    os.makedirs(project)
    paths = store_paths(project, hashlib.sha256(project.encode()).hexdigest()[:16], home=home)
    prepare_store(paths)
    config = Config(validate({"capture": {"maxBytes": 2_000_000}}, "<bench>", defaults()), ["<bench>"])
    env = dict(os.environ, **ActorContext("writer", paths, config, None).child_env())
    log = open(os.path.join(workdir, "writer.log"), "ab")
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "memtree.actors.writer"],
        env=env,
        stdout=log,
        stderr=log,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    caller = Caller(paths.endpoint(protocol.SOCK_WRITE), src="bench", timeout_ms=5000)
    recoveries = []
    try:
        deadline = time.monotonic() + 60
        while True:  # a cold writer
            try:
                caller.call(protocol.Ping(), timeout_ms=500)
                break
            except MemtreeError:
                if time.monotonic() > deadline:
                    raise
        big = "x = 1\n" * 300_000
        for i in range(runs):
            filler = _fill(home)
            for n in range(100):  # the WAL may still have room for a few
                try:
                    caller.call(protocol.AddNode(kind="note", content=f"{i}.{n}\n{big}"))
                except Unavailable:
                    break
            else:
                raise RuntimeError("the writer never refused a write on a full disk")
            os.unlink(filler)
            t0 = time.perf_counter()
            while True:
                try:
                    caller.call(protocol.AddNode(kind="note", content=f"after {i}"))
                    break
                except Unavailable:
                    time.sleep(0.01)
            recoveries.append(time.perf_counter() - t0)
            print(
                f"  round {i + 1}: acknowledged {recoveries[-1] * 1000:7.1f} ms after space returned; "
                f"writer pid unchanged: {proc.poll() is None}"
            )
        print(f"{'disk-full recovery':28s} {fmt_ms(summary(recoveries))}")
        return 0
    finally:
        caller.close()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        subprocess.run(["umount", "-l", home], check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="memtree-bench-robust-")
    try:
        print("bash with a background child holding the output (timeout 3 s):")
        code = _bash_round(args.runs, workdir)
        print("disk-full recovery (24 MB tmpfs):")
        return code or _disk_round(args.runs, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
