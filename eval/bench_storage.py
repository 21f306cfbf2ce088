"""Bytes stored per byte captured, for a real Claude Code session's payloads.

Replays the recorded PostToolUse/PostToolUseFailure payloads of real Claude
Code 2.1.197 sessions (tests/fixtures/claude_code/*.jsonl: a 2,500-line Read,
Grep in every mode, a 230 KB Bash output, failures) through the real capture
hook into a real `memtree serve --no-front`, shuts it down (the WAL is
checkpointed), and prints the store's size beside the bytes the agent was
shown (tool output text in the payloads) and beside what memtree counts as
captured (original_bytes, as `memtree ctl status` reports it).

    .venv/bin/python -m memtree.eval.bench_storage
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

from memtree.eval import system

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "claude_code")
RECORDED_PROJECT = "/tmp/claude-code-harness/proj"


def _shown_bytes(p: dict) -> int:
    r = p.get("tool_response")
    if not isinstance(r, dict):
        return len(str(p.get("error", "")).encode())
    if isinstance(r.get("file"), dict):
        return len(str(r["file"].get("content", "")).encode())
    if "stdout" in r:
        return len((str(r.get("stdout", "")) + str(r.get("stderr", ""))).encode())
    return len((str(r.get("content", "")) + "\n".join(r.get("filenames") or [])).encode())


def main(argv: list[str] | None = None) -> int:
    from memtree.ops.install import hook_argv
    from memtree.paths import paths_for_cwd
    from memtree.store import budget
    from memtree.store.db import open_read

    if not os.path.isdir(FIXTURES):
        print(f"bench_storage: no recorded payloads at {FIXTURES} (run from a checkout)")
        return 0
    work = tempfile.mkdtemp(prefix="memtree-bench-storage-")
    project = os.path.join(work, "proj")
    os.makedirs(project)
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE")}
    env["MEMTREE_HOME"] = os.environ["MEMTREE_HOME"] = os.path.join(work, "home")
    payloads = []
    for name in sorted(n for n in os.listdir(FIXTURES) if n.endswith(".jsonl")):
        with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
            payloads += [json.loads(line.replace(RECORDED_PROJECT, project)) for line in f if line.strip()]
    proc = system.start(project, env)
    paths = paths_for_cwd(project)
    try:
        for p in payloads:
            subprocess.run(
                hook_argv(), input=json.dumps(p).encode(), cwd=project, env=env, check=True, stdout=subprocess.DEVNULL
            )  # the hook may answer Claude Code (rewritten output)
    finally:
        system.shutdown(proc, project, env)
    db = open_read(paths.db)
    try:
        captured = budget.captured_bytes(db)
        nodes = db.execute("SELECT count(*) FROM nodes").fetchone()[0]
    finally:
        db.close()
    shown = sum(_shown_bytes(p) for p in payloads)
    stored = budget.file_bytes(paths.db)
    print(
        f"{len(payloads)} real payloads, {shown / 1024:.0f} KiB of tool output shown to the agent; "
        f"{nodes} nodes; memtree counts {captured / 1024:.0f} KiB captured"
    )
    print(
        f"store on disk after shutdown: {stored / 1024:.0f} KiB -> {stored / shown:.2f} bytes stored per byte "
        f"shown, {stored / captured:.2f} per byte captured (ctl status figure)"
    )
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
