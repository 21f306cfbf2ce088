"""Helpers for end-to-end hook tests: the real hook command, real payloads, DB reads."""

from __future__ import annotations

import json
import os
import subprocess

from memtree.ops.install import hook_argv
from tests.support import PAYLOAD_DIR, deadline
from tests.support.actor_procs import rows

RECORDED_PROJECT = "/tmp/claude-code-harness/proj"


def hook_env(system, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    env["MEMTREE_HOME"] = system.home
    env.update(extra)
    return env


def run_hook(system, data: bytes | dict, **extra_env) -> subprocess.CompletedProcess:
    """The hook exactly as `memtree install` registers it; it must exit 0, printing
    nothing or a replacement of a large output (tests/unit/capture/test_hook_rewrite.py checks those)."""
    if isinstance(data, dict):
        data = json.dumps(data).encode()
    done = subprocess.run(
        hook_argv(),
        input=data,
        cwd=system.project,
        env=hook_env(system, **extra_env),
        capture_output=True,
        timeout=deadline(120),
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])
    if done.stdout:
        out = json.loads(done.stdout)["hookSpecificOutput"]
        assert out["hookEventName"] == "PostToolUse" and isinstance(out["updatedToolOutput"], dict), out
    return done


def start_hook(system, **extra_env) -> subprocess.Popen:
    return subprocess.Popen(
        hook_argv(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=system.project,
        env=hook_env(system, **extra_env),
        start_new_session=True,
    )


def real_payloads(project: str) -> list[dict]:
    """Every recorded payload, moved into ``project`` (whose files are created to match)."""
    out = []
    for name in sorted(n for n in os.listdir(PAYLOAD_DIR) if n.endswith(".jsonl")):
        with open(os.path.join(PAYLOAD_DIR, name), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    out.append(json.loads(line.replace(RECORDED_PROJECT, project)))
    for p in out:
        f = (p.get("tool_response") or {}).get("file") if isinstance(p.get("tool_response"), dict) else None
        if f and f.get("startLine") == 1 and "content" in f:
            os.makedirs(os.path.dirname(f["filePath"]), exist_ok=True)
            with open(f["filePath"], "w", encoding="utf-8") as out_f:
                out_f.write(f["content"])
    return out


def bash_payload(system, i: int, session: str = "sess-hook-test", extra: str = "") -> dict:
    stdout = f"capture number {i} {extra}".strip() + " -- padding so the filter keeps it"
    return {
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": system.project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"echo capture-{i}", "description": "test capture"},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
        "tool_use_id": f"toolu_{i}",
    }


def contents(system, like: str) -> dict[str, int]:
    """content -> how many nodes hold it, for content LIKE ``like``."""
    return {
        r[0]: r[1]
        for r in rows(
            system.paths, "SELECT content, count(*) FROM nodes WHERE content LIKE ? GROUP BY content", (like,)
        )
    }


def counter(system, name: str) -> int:
    got = rows(system.paths, "SELECT value FROM counters WHERE name = ?", (name,))
    return got[0][0] if got else 0
