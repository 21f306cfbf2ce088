"""How long a captured file's chunks stay "current" after an edit, with and without the
FileChanged hook, on a real running system (default config: the staleness walker re-stats
every walkers.stalenessIntervalMs, 30 s).

- with the hook: the write, then the hook command as `memtree install` registers it (Claude
  Code 2.1.197 runs it ~0.5 s after a write settles; tests/system/test_claude_code_live_hooks.py
  measures the whole path on the real CLI);
- without: the write, then polling the store until the staleness walker marks the chunk.

    nice -n 10 .venv/bin/python -m memtree.eval.bench_stale_delay [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from memtree.eval import system

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _status(db: str, path: str) -> str | None:
    import apsw

    from memtree.store.db import open_read

    try:
        conn = open_read(db)
    except apsw.Error:
        return None
    try:
        row = conn.execute(
            "SELECT status FROM nodes WHERE kind = 'file_chunk' AND source_uri LIKE ? ORDER BY created_at DESC LIMIT 1",
            (f"file://{path}#%",),
        ).fetchone()
        return row[0] if row else None
    except apsw.Error:  # the writer is still creating the schema
        return None
    finally:
        conn.close()


def _hook(argv, payload: dict, project: str, env: dict) -> None:
    subprocess.run(argv, input=json.dumps(payload).encode(), cwd=project, env=env, capture_output=True, timeout=60)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    from memtree.ops.install import hook_argv
    from memtree.paths import paths_for_cwd

    work = tempfile.mkdtemp(prefix="bench-stale-")
    project, home = os.path.join(work, "project"), os.path.join(work, "home")
    os.makedirs(project)
    env = {
        **os.environ,
        "MEMTREE_HOME": home,
        "MEMTREE_HOOK_TIMEOUT_MS": "10000",
        "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p),
    }
    env.pop("CLAUDE_PROJECT_DIR", None)
    os.environ["MEMTREE_HOME"] = home
    serve = system.start(project, env)

    results: dict[str, list[float]] = {"with FileChanged": [], "without (staleness walker)": []}
    try:
        db = paths_for_cwd(project).db
        for run in range(args.runs):
            for label in results:
                path = os.path.realpath(os.path.join(project, f"f{run}_{list(results).index(label)}.py"))
                text = "".join(f"def f{i}():\n    return {i}\n" for i in range(60))
                with open(path, "w") as f:
                    f.write(text)
                read = {
                    "session_id": "bench",
                    "transcript_path": "/dev/null",
                    "cwd": project,
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Read",
                    "tool_use_id": f"t-{path}",
                    "tool_input": {"file_path": path},
                    "tool_response": {
                        "type": "text",
                        "file": {"filePath": path, "content": text, "numLines": 120, "startLine": 1, "totalLines": 120},
                    },
                }
                _hook(hook_argv(), read, project, env)
                deadline = time.monotonic() + 120
                while not os.path.exists(db) or _status(db, path) != "live":  # the filter walker's pass
                    time.sleep(0.1)
                    if time.monotonic() > deadline:
                        raise SystemExit(f"capture never went live ({_status(db, path)}, {db})")
                time.sleep(1.1)  # a new mtime, whatever the file system's granularity
                with open(path, "w") as f:
                    f.write(text.replace("return 1\n", "return -1\n"))
                t0 = time.monotonic()
                if label == "with FileChanged":
                    _hook(
                        hook_argv() + ["file-changed"],
                        {
                            "session_id": "bench",
                            "cwd": project,
                            "hook_event_name": "FileChanged",
                            "file_path": path,
                            "event": "change",
                        },
                        project,
                        env,
                    )
                while _status(db, path) != "stale":
                    time.sleep(0.05)
                    if time.monotonic() - t0 > 120:
                        raise SystemExit(f"{label}: never marked stale")
                results[label].append(time.monotonic() - t0)
        for label, xs in results.items():
            print(
                f"{label:28} median {statistics.median(xs) * 1000:8.0f} ms  max {max(xs) * 1000:8.0f} ms  "
                f"(n={len(xs)}, from the write to status stale)"
            )
    finally:
        system.shutdown(serve, project, env)
        if not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
