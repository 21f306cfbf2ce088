"""Capture hook wall time, process start -> exit, as Claude Code runs it.

Runs the hook exactly as `memtree install` registers it (absolute
interpreter, -I -S, the hook script) against a real `memtree serve
--no-front` on a scratch project, interleaved with the floors measured in
the same run: the bare interpreter (`python -I -S -c pass`), a process that
only counts one capture-heartbeat outcome (what the heartbeat adds), and
`python -c "import zmq"` (what a pyzmq-based hook would pay before doing anything).
Then the same with the writer stopped (the spool path), and where the time
goes (-X importtime of the hook's hot path).

    .venv/bin/python -m memtree.eval.bench_hook [--runs 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from memtree.eval import payloads, system
from memtree.eval.stats import fmt_ms, summary
from memtree.ops.install import hook_argv


def _payload(project: str, i: int) -> bytes:
    return json.dumps(
        {
            "session_id": "bench-hook",
            "transcript_path": "/dev/null",
            "cwd": project,
            "permission_mode": "default",
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"ls -la src/{i}", "description": "bench"},
            "tool_response": {
                "stdout": "total 8\n" + "-rw-r--r-- 1 dev dev 120 app.py\n" * 20 + f"run {i}\n",
                "stderr": "",
                "interrupted": False,
                "isImage": False,
            },
            "tool_use_id": f"toolu_bench_{i}",
        }
    ).encode()


def _big_read(project: str, i: int) -> bytes:
    """A whole-file Read of a 40 KB module: above capture.rewriteReadTokens, so the
    hook prints the writer's preview (memtree.capture.rewrite) after the ack."""
    path = os.path.join(project, "big_module.py")
    content = f"# run {i}\n" + "".join(
        f"\ndef handler_{k}(request, retries=3):\n    value = request.get('k{k}')\n    return value * {k}\n"
        for k in range(600)
    )
    return json.dumps(payloads.read(path, content, project, "bench-hook", f"toolu_bench_read_{i}")).encode()


def _round_rewrite(runs: int, env: dict, project: str) -> dict[str, list[float]]:
    py = os.path.abspath(sys.executable)
    series = {"hook": [], "bare -I -S": []}
    for i in range(runs):
        data = _big_read(project, i)
        t0 = time.perf_counter()
        done = subprocess.run(hook_argv(), input=data, capture_output=True, env=env, cwd=project, check=False)
        series["hook"].append(time.perf_counter() - t0)
        if b"updatedToolOutput" not in done.stdout:
            series.setdefault("not rewritten (no ack in time)", []).append(series["hook"][-1])
        series["bare -I -S"].append(_time([py, "-I", "-S", "-c", "pass"], None, env, project))
    return series


def _time(argv: list[str], data: bytes | None, env: dict, cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        argv, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd, check=False
    )
    return time.perf_counter() - t0


def _heartbeat_argv(store_dir: str) -> list[str]:
    """A process that does only what the capture heartbeat adds to a hook run."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__import__("memtree").__file__)))
    code = (
        f"import sys; sys.path.insert(0, {root!r}); from memtree.capture import heartbeat; "
        f"heartbeat.count({store_dir!r}, 'bench-heartbeat', 'stored')"
    )
    return [os.path.abspath(sys.executable), "-I", "-S", "-c", code]


def _round(runs: int, env: dict, project: str) -> dict[str, list[float]]:
    from memtree.paths import paths_for_cwd

    py = os.path.abspath(sys.executable)
    beat = _heartbeat_argv(paths_for_cwd(project).store_dir)
    series = {"hook": [], "bare -I -S": [], "heartbeat": [], "import zmq": []}
    for i in range(runs):  # interleaved so load on the box hits every series alike
        series["hook"].append(_time(hook_argv(), _payload(project, i), env, project))
        series["bare -I -S"].append(_time([py, "-I", "-S", "-c", "pass"], None, env, project))
        series["heartbeat"].append(_time(beat, None, env, project))
        series["import zmq"].append(_time([py, "-c", "import zmq"], None, env, project))
    return series


def _print(title: str, series: dict[str, list[float]]) -> None:
    print(f"\n{title}")
    for name, samples in series.items():
        print(f"  {name:<12} {fmt_ms(summary(samples))}")
    bare = summary(series["bare -I -S"])
    for name in ("hook", "heartbeat"):
        if name in series:
            print(f"  {name} p95 / bare p95: {summary(series[name])['p95'] / bare['p95']:.2f}x")


def _heartbeat_in_process(store_dir: str, runs: int = 2000) -> list[float]:
    """heartbeat.count alone (lock, read 6 KB, write one slot), in this process."""
    from memtree.capture import heartbeat

    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        heartbeat.count(store_dir, "bench-in-process", "stored")
        out.append(time.perf_counter() - t0)
    return out


def _importtime(env: dict, project: str, top: int = 10) -> list[tuple[int, str]]:
    argv = hook_argv()
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        input=_payload(project, -1),
        env=env,
        cwd=project,
        capture_output=True,
        check=False,
    )
    rows = []
    for line in done.stderr.decode(errors="replace").splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[0].startswith("import time:") and parts[1].strip().isdigit():
            name = parts[2][1:]  # nesting shows as extra leading spaces
            if not name.startswith(" "):
                rows.append((int(parts[1]), name))
    return sorted(rows, reverse=True)[:top]


def _round_trips(project: str, runs: int, make=_payload, rewrite: bool = False) -> list[float]:
    """The hook's network part alone, from this process: one connection per call, as the hook does."""
    from memtree import protocol
    from memtree.capture import zmtp
    from memtree.paths import paths_for_cwd

    ep = paths_for_cwd(project).endpoint(protocol.SOCK_INGEST)
    out = []
    for i in range(runs):
        rid, frame = protocol.encode_ingest_raw(make(project, 10_000 + i), rewrite=rewrite)
        t0 = time.perf_counter()
        reply = zmtp.request(ep, [frame], 5.0)
        out.append(time.perf_counter() - t0)
        assert protocol.reply_is_ok(reply[-1], rid), reply
    return out


def mixed_batches(ack, runs: int, first_read: int, first: int, clients: int = 4) -> tuple[list[float], list[float]]:
    """Ordinary captures from ``clients`` threads while one more sends rewritten
    40 KB Reads, so they share the writer's batches: the ordinary captures'
    ack times show what a Read's work inside the batch costs its neighbours.
    ``ack(make, i, rewrite)`` sends one capture and returns its ack time;
    ids count from ``first_read`` and ``first`` so no call repeats another."""
    import threading

    small, big, stop = [], [], threading.Event()

    def reads() -> None:
        i = first_read
        while not stop.is_set():
            big.append(ack(_big_read, i, True))
            i += 1

    def ordinary(k: int) -> None:
        for i in range(runs):
            small.append(ack(_payload, first + 100_000 * (k + 1) + i, False))

    reader = threading.Thread(target=reads)
    workers = [threading.Thread(target=ordinary, args=(k,)) for k in range(clients)]
    reader.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    reader.join()
    return small, big


def _acker(project: str):
    """One capture to the writer's ingest socket, as the hook sends it; its ack time."""
    from memtree import protocol
    from memtree.capture import zmtp
    from memtree.paths import paths_for_cwd

    ep = paths_for_cwd(project).endpoint(protocol.SOCK_INGEST)

    def ack(make, i: int, rewrite: bool) -> float:
        rid, frame = protocol.encode_ingest_raw(make(project, i), rewrite=rewrite)
        t0 = time.perf_counter()
        reply = zmtp.request(ep, [frame], 10.0)
        took = time.perf_counter() - t0
        assert protocol.reply_is_ok(reply[-1], rid), reply
        return took

    return ack


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=200)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memtree-bench-hook-", ignore_cleanup_errors=True) as work:
        project, home = os.path.join(work, "project"), os.path.join(work, "home")
        os.makedirs(project)
        env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
        env["MEMTREE_HOME"] = os.environ["MEMTREE_HOME"] = home
        with system.serving(project, env):
            print(f"hook: {' '.join(hook_argv())}\nruns per series: {args.runs}; cores: {os.cpu_count()}")
            _print("writer up (ack after commit)", _round(args.runs, env, project))
            _print(
                "writer up, a 40 KB whole-file Read each run (rewritten: preview printed after the ack)",
                _round_rewrite(max(20, args.runs // 4), env, project),
            )
            from memtree.paths import paths_for_cwd

            beat = _heartbeat_in_process(paths_for_cwd(project).store_dir)
            print(
                f"\n  capture heartbeat count, in process (flock + 6 KB read + one slot write): {fmt_ms(summary(beat))}"
            )
            rt = _round_trips(project, args.runs)
            print(
                f"\n  in-process ZMTP Ingest round trip (connect, handshake, writer commit, ack): {fmt_ms(summary(rt))}"
            )
            rt = _round_trips(project, max(20, args.runs // 4), _big_read, rewrite=True)
            print(
                f"  the same for the 40 KB Read, rewrite on (+ redaction of 40 KB, preview built and redacted): "
                f"{fmt_ms(summary(rt))}"
            )
            small, big = mixed_batches(_acker(project), max(25, args.runs // 4), 50_000, 0)
            print(
                f"\n  writer ingest ack, 4 clients of ordinary captures sharing batches with rewritten 40 KB Reads:\n"
                f"    ordinary: {fmt_ms(summary(small))}\n    40 KB Read + preview: {fmt_ms(summary(big))}"
            )
            print("\nwhere the time goes (hook, writer up; -X importtime, cumulative, top-level modules):")
            for us, name in _importtime(env, project):
                print(f"  {us / 1000:7.1f} ms  {name}")
            system.ctl(project, env, "stop", "writer")
            system.wait_writer(project, env, up=False)
            _print("writer stopped (spool path: json + redaction + locked append)", _round(args.runs, env, project))
            print("\nwhere the time goes (hook, writer stopped):")
            for us, name in _importtime(env, project):
                print(f"  {us / 1000:7.1f} ms  {name}")
            from memtree.capture import spool
            from memtree.paths import paths_for_cwd

            print(f"\nspooled entries waiting: {spool.pending_count(paths_for_cwd(project).spool)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
