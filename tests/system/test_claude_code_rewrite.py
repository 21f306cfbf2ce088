"""The rewrite as the real Claude Code CLI (2.1.197) applies it, against the scripted fake API.

What the model was shown is read from the request bodies the CLI sent. The CLI
is installed from npm once into a cache outside the repo (~1 min); without
npm or the registry this test is skipped with the reason printed loudly.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from memtree.eval.context_ab import cli
from memtree.ops.install import main as install_main
from tests.support import COLD_START_S, wait_until
from tests.support.actor_procs import rows

pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def claude():
    path, why = cli.find_claude(install=True)
    if path is None:
        sys.stderr.write(f"\n\n*** SKIPPING the real Claude Code CLI test: {why} ***\n\n")
        pytest.skip(f"LOUD SKIP: real Claude Code CLI unavailable: {why}")
    return path


def _module(n: int) -> str:
    return '"""Generated module."""\n\n' + "".join(
        f"\ndef handler_{i}(request, retries=3):\n    value = request.get('k{i}')\n    return value * {i}\n"
        for i in range(n)
    )


def _script(proj: str) -> dict:
    big, small = f"{proj}/handlers.py", f"{proj}/small.py"
    log_cmd = (
        "python3 -c \"[print('ERROR: disk quota exceeded at step 1500' if i == 1500 else f'step {i} ok')"
        ' for i in range(3000)]"'
    )
    return {
        "side_text": "ok",
        "turns": [
            {"tool_use": {"name": "Read", "input": {"file_path": big}}},
            {"tool_use": {"name": "Read", "input": {"file_path": big}}},
            {"tool_use": {"name": "Read", "input": {"file_path": big, "offset": 20, "limit": 4}}},
            {
                "tool_use": {
                    "name": "Edit",
                    "input": {"file_path": big, "old_string": "return value * 149", "new_string": "return value * 150"},
                }
            },
            {"tool_use": {"name": "Bash", "input": {"command": log_cmd, "description": "long log"}}},
            {
                "tool_use": {
                    "name": "Grep",
                    "input": {"pattern": "value = request", "path": proj, "output_mode": "content", "-n": True},
                }
            },
            {"tool_use": {"name": "Read", "input": {"file_path": small}}},
            {"text": "done"},
        ],
    }


def test_the_real_cli_shows_previews_keeps_edit_working_and_answers_the_dedup(claude, system, tmp_path):
    proj = system.project
    with open(os.path.join(proj, "handlers.py"), "w") as f:
        f.write(_module(150))
    with open(os.path.join(proj, "small.py"), "w") as f:
        f.write("SMALL_MARKER = 1\n")
    # The writer acks after commit; a loaded box may need more than the 100 ms default.
    system.write_config({"capture": {"hookTimeoutMs": 5000}})
    assert install_main(["--project", proj, "--shared"]) == 0
    os.unlink(os.path.join(proj, ".mcp.json"))  # the system fixture runs the store; no MCP server needed here
    log = cli.run(claude, proj, _script(proj), str(tmp_path / "run"), env={"MEMTREE_HOME": system.home})
    bodies = cli.main_requests(log)
    assert len(bodies) == 8, [len(cli.tool_results(b)) for b in bodies]
    results = cli.tool_results(bodies[-1])
    assert [r[0] for r in results] == ["Read", "Read", "Read", "Edit", "Bash", "Grep", "Read"]
    read1, reread, sliced, edit, bash, grep, small = [r[1] for r in results]
    assert "[memtree]" in read1 and "def handler_0 L4-6" in read1 and "return value * 149" not in read1
    # The CLI numbers the file's own first line right; memtree's line says the numbers after it are not file lines.
    assert read1.startswith('1\t"""Generated module."""\n2\t[memtree] Above: file lines 1-1. Below: Outline')
    assert "numbers at the left are not file lines" in read1
    assert "unchanged since your last Read" in reread and "def handler_0 L4-6" in reread
    assert "Wasted call" not in reread
    assert "20\tdef handler_4(request, retries=3):" in sliced and "[memtree]" not in sliced  # exact lines, as asked
    assert not results[3][2] and "updated successfully" in edit
    assert "return value * 150" in open(os.path.join(proj, "handlers.py")).read()
    assert "1501: ERROR: disk quota exceeded at step 1500" in bash and "step 900 ok" not in bash
    assert "[memtree] Grep" in grep and "handlers.py\n5:    value = request.get('k0')" in grep  # under its file
    assert "SMALL_MARKER = 1" in small and "[memtree]" not in small  # control: a small output is untouched
    debug = open(tmp_path / "run" / "claude_debug.log", errors="replace").read()
    assert "does not match" not in debug  # no replacement was rejected for its shape


CHECK = "python3 -c 'print(\"checking handlers: 3 problems found\"); raise SystemExit(3)'"


def test_a_new_session_starts_with_the_brief_of_what_the_last_one_explored(claude, system, tmp_path):
    proj = system.project
    with open(os.path.join(proj, "handlers.py"), "w") as f:
        f.write(_module(150))
    system.write_config({"capture": {"hookTimeoutMs": 5000}})
    assert install_main(["--project", proj, "--shared"]) == 0
    os.unlink(os.path.join(proj, ".mcp.json"))
    env = {"MEMTREE_HOME": system.home}
    explore = {
        "side_text": "ok",
        "turns": [
            {"tool_use": {"name": "Read", "input": {"file_path": f"{proj}/handlers.py"}}},
            {"tool_use": {"name": "Bash", "input": {"command": CHECK, "description": "a failing check"}}},
            {"text": "done"},
        ],
    }
    first = cli.main_requests(cli.run(claude, proj, explore, str(tmp_path / "s1"), env=env))
    assert "memtree:recalled" not in json.dumps(first[0]["messages"])  # control: an empty store gives no brief
    # The filter walker makes the captures live (the brief shows live nodes only).
    wait_until(
        lambda: (
            rows(
                system.paths,
                "SELECT count(*) FROM nodes WHERE kind IN ('file_chunk', 'tool_output') AND status = 'live'",
            )[0][0]
            >= 2
        ),
        timeout=COLD_START_S,
        what="the Read and the failed Bash captures live",
    )
    second = cli.main_requests(
        cli.run(claude, proj, {"side_text": "ok", "turns": [{"text": "done"}]}, str(tmp_path / "s2"), env=env)
    )
    seen = json.dumps(second[0]["messages"], ensure_ascii=False)
    assert '<memtree:recalled kind=\\"session-brief\\">' in seen
    n = _module(150).count("\n")  # the file's own lines (Claude Code's numLines also counts the end)
    assert f"- handlers.py L1-{n} of {n}" in seen
    assert "Open threads (last run failed)" in seen and "exit 3" in seen
