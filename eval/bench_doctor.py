"""`memtree doctor` run time on a large store, beside the same doctor on an
empty store in the same run (the baseline: the checks' fixed costs, mostly
the MCP server's cold `initialize`).

Seeds N live notes through a real writer (`memtree serve --no-front`, 8
client threads), installs memtree in the scratch project, then times
`memtree doctor --json` as an operator runs it, with the per-check split.

    .venv/bin/python -m memtree.eval.bench_doctor [--nodes 100000] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from memtree.eval import system
from memtree.eval.bench_core import add_notes
from memtree.eval.stats import summary


def _doctor(project: str, env: dict) -> tuple[float, dict]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-P", "-m", "memtree.cli", "doctor", "--json"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    took = time.perf_counter() - t0
    return took, json.loads(done.stdout)


def _project(work: str, name: str, env: dict) -> str:
    project = os.path.join(work, name)
    os.makedirs(project)
    subprocess.run(
        [sys.executable, "-P", "-m", "memtree.cli", "install"], cwd=project, env=env, check=True, capture_output=True
    )
    return project


def _series(project: str, env: dict, runs: int) -> tuple[list[float], dict]:
    times, last = [], {}
    for _ in range(runs):
        took, last = _doctor(project, env)
        times.append(took)
    return times, {r["check"]: r["ms"] for r in last["checks"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    work = tempfile.mkdtemp(prefix="memtree-bench-doctor-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env["MEMTREE_HOME"] = os.environ["MEMTREE_HOME"] = os.path.join(work, "home")
    env["HOME"] = work  # no user-level Claude Code settings leak in
    proc = None
    try:
        empty = _project(work, "empty", env)
        big = _project(work, "big", env)
        proc = system.start(big, env)
        from memtree import protocol
        from memtree.paths import paths_for_cwd

        endpoint = paths_for_cwd(big).endpoint(protocol.SOCK_WRITE)
        t0 = time.perf_counter()
        add_notes(endpoint, args.nodes, 8, lambda i: f"note {i}: the parser talks to the cache through hook {i}")
        print(
            f"seeded {args.nodes} notes in {time.perf_counter() - t0:.1f} s; store "
            f"{os.path.getsize(paths_for_cwd(big).db) / 1048576:.1f} MiB"
        )
        base, base_split = _series(empty, env, args.runs)
        large, large_split = _series(big, env, args.runs)
        b, l_ = summary(base), summary(large)
        print(f"doctor, empty store:        median {b['median']:.2f} s  p95 {b['p95']:.2f} s  (n={b['n']})")
        print(
            f"doctor, {args.nodes} nodes:  median {l_['median']:.2f} s  p95 {l_['p95']:.2f} s  (n={l_['n']})"
            f"  ratio {l_['median'] / b['median']:.2f}x"
        )
        print(
            "per check (ms, last run): "
            + ", ".join(f"{k} {large_split[k]:.0f} (empty {base_split.get(k, 0):.0f})" for k in large_split)
        )
    finally:
        if proc is not None:
            system.shutdown(proc, big, env)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
