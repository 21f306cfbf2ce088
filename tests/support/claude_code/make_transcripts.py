"""Build tests/fixtures/transcripts/ from REAL Claude Code sessions.

Runs the pinned CLI (tests/support/claude_code/cli.py) offline against the scripted
fake API for a few sessions in a scratch project without memtree, then copies
what the CLI wrote under ``$CLAUDE_CONFIG_DIR/projects/<folder>/`` (each
session's JSONL and its ``<session>/tool-results/`` spill files) into the
fixture folder, the scratch project path replaced by ``@@PROJ@@`` so a test can
put the sessions in its own project. tests/fixtures/transcripts/extend.py then
adds what a real run cannot give offline (secrets, a truncated line).

    .venv/bin/python -m tests.support.claude_code.make_transcripts
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from tests.support.claude_code import cli

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "fixtures", "transcripts", "real")
PLACEHOLDER = "@@PROJ@@"

FILES = {
    "README.md": "# fixture project\nThe release train leaves on Thursdays; the codename is heronbay.\n",
    "src/app.py": 'def greet(name):\n    return f"hello {name}"\n\n\ndef main():\n    print(greet("world"))\n',
    "src/util.py": "def slugify(text):\n    return '-'.join(text.lower().split())\n",
}

SESSIONS = [
    [  # read, grep, bash
        {"tool_use": {"name": "Read", "input": {"file_path": "${PROJ}/README.md"}}},
        {
            "tool_use": {
                "name": "Grep",
                "input": {"pattern": "def greet", "path": "${PROJ}", "output_mode": "content", "-n": True},
            }
        },
        {"tool_use": {"name": "Bash", "input": {"command": "echo build-ok-marmot; ls", "description": "list"}}},
        {"text": "Done."},
    ],
    [  # a large Bash output the CLI spills under tool-results/, a failing command, a missing file
        {"tool_use": {"name": "Bash", "input": {"command": "seq 1 40000", "description": "count"}}},
        {"tool_use": {"name": "Bash", "input": {"command": "echo failing-step; exit 3", "description": "fail"}}},
        {"tool_use": {"name": "Read", "input": {"file_path": "${PROJ}/missing.txt"}}},
        {"text": "Done."},
    ],
    [  # parallel calls, a ranged read
        {
            "tool_use": [
                {"name": "Read", "input": {"file_path": "${PROJ}/src/app.py"}},
                {"name": "Read", "input": {"file_path": "${PROJ}/src/util.py", "offset": 1, "limit": 1}},
            ]
        },
        {"tool_use": {"name": "Grep", "input": {"pattern": "slugify"}}},
        {"text": "Done."},
    ],
]


def _project(root: str) -> str:
    proj = os.path.join(root, "proj")
    for rel, text in FILES.items():
        os.makedirs(os.path.dirname(os.path.join(proj, rel)), exist_ok=True)
        with open(os.path.join(proj, rel), "w") as f:
            f.write(text)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "i"]):
        subprocess.run(["git", *args], cwd=proj, check=True, capture_output=True)
    return proj


def main() -> int:
    binary = cli.ensure_cli()
    root = tempfile.mkdtemp(prefix="mt-transcripts-")
    try:
        proj = _project(root)
        home = os.path.join(root, "home")
        env = cli.base_env(home)
        for i, turns in enumerate(SESSIONS):
            out = os.path.join(root, f"out{i}")
            api = cli.FakeApi({"side_text": "ok", "turns": turns}, out, proj)
            try:
                result = cli.run_session(
                    binary,
                    {**env, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-dummy"},
                    proj,
                    "Read Grep Bash",
                    out,
                )
            finally:
                api.close()
            print(f"session {i}: {result['session_id']}", file=sys.stderr)
        projects = os.path.join(home, ".claude", "projects")
        [folder] = os.listdir(projects)
        print(f"the CLI wrote {projects}/{folder} for {proj}", file=sys.stderr)
        shutil.rmtree(OUT, ignore_errors=True)
        real_proj = os.path.realpath(proj)
        for dirpath, _dirs, files in os.walk(os.path.join(projects, folder)):
            for name in files:
                src = os.path.join(dirpath, name)
                rel = os.path.relpath(src, os.path.join(projects, folder))
                dst = os.path.join(OUT, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with open(src, encoding="utf-8") as f:
                    text = f.read()
                with open(dst, "w", encoding="utf-8") as f:
                    f.write(text.replace(real_proj, PLACEHOLDER).replace(proj, PLACEHOLDER))
        with open(os.path.join(OUT, "FOLDER"), "w") as f:
            f.write(f"{folder}\n{real_proj}\n")  # the name the CLI gave the path (tests check folder_name)
        return 0
    finally:
        left = cli.reap_leftovers(root)
        shutil.rmtree(root, ignore_errors=True)
        if left:
            print(f"reaped: {left}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
