"""The transcript fixture (tests/fixtures/transcripts/: real CLI sessions, extended) placed
where Claude Code keeps a project's transcripts, for a project of a test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid

from memtree.ops.transcripts import folder_name
from tests.fixtures.transcripts import extend
from tests.support import PYTHON, deadline

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "transcripts")
EXTENDED = os.path.join(FIXTURE, "extended")
PLACEHOLDER = "@@PROJ@@"
# What the real sessions read (tests/support/claude_code/make_transcripts.py FILES), plus the extension's files.
FILES = {
    "README.md": "# fixture project\nThe release train leaves on Thursdays; the codename is heronbay.\n",
    "src/app.py": 'def greet(name):\n    return f"hello {name}"\n\n\ndef main():\n    print(greet("world"))\n',
    "src/util.py": "def slugify(text):\n    return '-'.join(text.lower().split())\n",
    extend.SECRET_FILE: extend.SECRET_TEXT,
    extend.FORGET_FILE: extend.FORGET_TEXT,
}
SPILLED_SESSION = "8493a0f9-5629-4c34-98b9-f9ee6db899cc"
SECRETS_SESSION = "5ec2e75e-0000-4000-8000-00000000a001"
FORGOTTEN_SESSION = "f0e9a77e-0000-4000-8000-00000000a002"


def write_files(project: str) -> None:
    for rel, text in FILES.items():
        os.makedirs(os.path.dirname(os.path.join(project, rel)), exist_ok=True)
        with open(os.path.join(project, rel), "w") as f:
            f.write(text)


def place(project: str, config_dir: str, copies: int = 1) -> str:
    """The fixture's sessions (``copies`` times, each copy with fresh session and
    tool_use ids) in ``config_dir/projects/<folder>``; returns the folder."""
    real = os.path.realpath(project)
    folder = os.path.join(config_dir, "projects", folder_name(real))
    os.makedirs(folder, exist_ok=True)
    for name in sorted(os.listdir(EXTENDED)):
        src = os.path.join(EXTENDED, name)
        if not name.endswith(".jsonl"):
            continue
        sid = name[: -len(".jsonl")]
        with open(src, encoding="utf-8") as f:
            text = f.read().replace(PLACEHOLDER, real)
        for k in range(copies):
            new_sid = sid if k == 0 else str(uuid.uuid4())
            out = text.replace(sid, new_sid)
            if k:
                out = out.replace("toolu_", f"toolu_c{k}_")  # a tool_use and its result stay paired
            with open(os.path.join(folder, f"{new_sid}.jsonl"), "w", encoding="utf-8") as f:
                f.write(out)
            spill = os.path.join(FIXTURE, "real", sid)  # tool-results/ are kept once, with the real sessions
            if os.path.isdir(spill):
                shutil.copytree(spill, os.path.join(folder, new_sid), dirs_exist_ok=True)
    return folder


def forget_notes(paths, project: str, timeout_ms: int = 10000) -> None:
    """The user forgot the private notes in an earlier session (stored from
    another call, then Forget): the import must refuse them by their tombstone."""
    from memtree import protocol
    from memtree.eval import payloads
    from memtree.runtime.client import Caller

    path = os.path.join(os.path.realpath(project), extend.FORGET_FILE)
    payload = payloads.read(path, extend.FORGET_TEXT, project, "earlier", "toolu_earlier")
    ingest = Caller(paths.endpoint(protocol.SOCK_INGEST), src="fixture", timeout_ms=timeout_ms)
    write = Caller(paths.endpoint(protocol.SOCK_WRITE), src="fixture", timeout_ms=timeout_ms)
    try:
        [nid] = ingest.call(protocol.Ingest(payload=payload, received_at=0))["stored"]
        write.call(protocol.Forget(node_id=nid, reason="forgotten before the import"))
    finally:
        ingest.close()
        write.close()


def run_import(project: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PYTHON, "-m", "memtree.cli", "import", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=deadline(300),
    )


def transcript_calls(folder: str) -> dict[str, dict]:
    """tool_use_id -> {"session", "ts"} of every answered Read/Grep/Bash call in the placed files,
    read independently of memtree's parser (complete lines only)."""
    uses, out = {}, {}
    for name in os.listdir(folder):
        if not name.endswith(".jsonl"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                for b in (e.get("message") or {}).get("content") or []:
                    if isinstance(b, dict) and b.get("type") == "tool_use" and b["name"] in ("Read", "Grep", "Bash"):
                        uses[b["id"]] = b["name"]
                    elif isinstance(b, dict) and b.get("type") == "tool_result" and b["tool_use_id"] in uses:
                        out[b["tool_use_id"]] = {
                            "session": e["sessionId"],
                            "ts": e["timestamp"],
                            "tool": uses[b["tool_use_id"]],
                            "error": bool(b.get("is_error")),
                        }
    return out
