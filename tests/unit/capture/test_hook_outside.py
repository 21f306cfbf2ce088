"""Hook captures of native Read/Grep follow the project rule of memtree's own read/grep.

A file outside the project (after resolving symlinks), not named by
path.allowOutside, is not stored (nor spooled), is counted as refused, and
its native output is left as it is (no rewrite). The same captures inside
the project, or allowed, are stored: the positive controls.
"""

import json
import os

from memtree.capture import heartbeat
from memtree.eval import payloads
from tests.support import COLD_START_S, wait_until
from tests.support.hook_support import contents, rows, run_hook

# Large enough that a stored Read is rewritten to a preview (capture.rewriteReadTokens).
BODY = "".join(f"def outside_function_{i}(x):\n    return x + {i}  # zanzibar line {i}\n" for i in range(600))


def _read(s, path: str, i: int) -> dict:
    return payloads.read(path, BODY, s.project, "sess-out", f"toolu_read_{i}")


def _grep(s, where: str, i: int) -> dict:
    hit = os.path.join(where, "notes.py")
    return {
        "session_id": "sess-out",
        "transcript_path": "/dev/null",
        "cwd": s.project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Grep",
        "tool_input": {"pattern": "zanzibar", "path": where, "output_mode": "content", "-n": True},
        "tool_response": {
            "mode": "content",
            "numFiles": 1,
            "filenames": [hit],
            "content": f"{hit}:2:    return x + 0  # zanzibar grep {i}",
            "numLines": 1,
        },
        "tool_use_id": f"toolu_grep_{i}",
    }


def _write(path: str) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(BODY)
    return path


def _refused(s) -> int:
    return sum(slot["refused"] for slot in heartbeat.read_all(s.paths.store_dir) if slot["session"] == "sess-out")


def test_native_read_and_grep_outside_the_project_are_refused_and_left_as_they_are(system_factory, tmp_path):
    s = system_factory
    outside = _write(str(tmp_path / "elsewhere" / "notes.py"))
    inside = _write(os.path.join(s.project, "src", "notes.py"))
    link = os.path.join(s.project, "linked.py")  # inside by name, outside once resolved
    os.symlink(outside, link)
    s.write_config()
    s.serve()
    s.wait_running(["writer"])

    refused = {}
    for i, path in enumerate((outside, link)):
        done = run_hook(s, _read(s, path, i))
        refused[path] = done.stdout
    done = run_hook(s, _grep(s, os.path.dirname(outside), 0))
    refused["grep"] = done.stdout
    # Not rewritten: the agent sees the native output.
    assert refused == {outside: b"", link: b"", "grep": b""}
    assert _refused(s) == 3

    # Positive control: the same Read inside the project is stored and rewritten to a preview.
    done = run_hook(s, _read(s, inside, 9))
    assert json.loads(done.stdout)["hookSpecificOutput"]["updatedToolOutput"]
    run_hook(s, _grep(s, os.path.dirname(inside), 9))
    wait_until(lambda: contents(s, "%zanzibar grep 9%"), timeout=COLD_START_S, what="the inside Grep stored")
    paths = {
        r[0] for r in rows(s.paths, "SELECT json_extract(metadata, '$.path') FROM nodes WHERE kind = 'file_chunk'")
    }
    assert paths == {inside}, paths
    assert contents(s, "%zanzibar grep 0%") == {}
    assert _refused(s) == 3


def test_path_allow_outside_lets_hook_captures_of_that_folder_in(system_factory, tmp_path):
    s = system_factory
    outside = _write(str(tmp_path / "elsewhere" / "notes.py"))
    s.write_config({"path": {"allowOutside": [os.path.dirname(outside)]}})
    s.serve()
    s.wait_running(["writer"])
    run_hook(s, _read(s, outside, 0))
    run_hook(s, _grep(s, os.path.dirname(outside), 0))
    wait_until(lambda: contents(s, "%zanzibar grep 0%"), timeout=COLD_START_S, what="the allowed Grep stored")
    paths = {
        r[0] for r in rows(s.paths, "SELECT json_extract(metadata, '$.path') FROM nodes WHERE kind = 'file_chunk'")
    }
    assert paths == {outside}
    assert _refused(s) == 0


def test_with_the_writer_down_an_outside_read_is_not_spooled(system_factory, tmp_path):
    s = system_factory
    outside = _write(str(tmp_path / "elsewhere" / "notes.py"))
    inside = _write(os.path.join(s.project, "notes.py"))
    s.write_config()
    s.serve()
    s.wait_running(["writer"])
    done = s.ctl("stop", "writer")
    assert done.returncode == 0, done.stderr
    first = run_hook(s, _read(s, outside, 0))
    assert first.stdout == b""
    spooled = os.path.getsize(s.paths.spool) if os.path.exists(s.paths.spool) else 0
    # Positive control: an inside Read is spooled (and previewed from the spool).
    second = run_hook(s, _read(s, inside, 1))
    assert json.loads(second.stdout)["hookSpecificOutput"]["updatedToolOutput"]
    assert (spooled, os.path.getsize(s.paths.spool) > 0) == (0, True)
    assert _refused(s) == 1
