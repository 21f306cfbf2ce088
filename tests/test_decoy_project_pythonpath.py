"""A PYTHONPATH pointing into the user's project reaches no memtree process.

``-P`` keeps the cwd off sys.path, but PYTHONPATH is honoured: a user whose
shell exports ``PYTHONPATH=src`` would have the project's ``json.py``,
``zmq.py`` or ``memtree/`` shadow ours. The MCP server as install registers
it, every actor the supervisor starts and the hook must import none of them;
the user's own commands (the bash tool) still get the user's PYTHONPATH.
"""

import os
import subprocess

import anyio

from memtree.ops.install import server_entry
from memtree.runtime import pythonpath
from tests.hook_support import bash_payload, contents, run_hook
from tests.support import COLD_START_S, PYTHON, deadline, wait_until
from tests.test_decoy_project import _text, plant_decoys, serving

DECOYS = {"json": "json.py", "zmq": "zmq.py", "memtree": "memtree/__init__.py", "orjson": "orjson.py",
          "apsw": "apsw.py", "psutil": "psutil.py"}


def _project_pythonpath(s) -> str:
    # Relative, absolute and empty (the cwd) entries into the project, ahead of everything else.
    return os.pathsep.join(["src", os.path.join(s.project, "src"), "", s.env["PYTHONPATH"]])


async def _session(s, seen: dict) -> None:
    async with serving(s, server_entry(), seen) as client:
        res = await client.call_tool("bash", {"command": 'echo "user-pythonpath=$PYTHONPATH"'})
        seen["bash"] = _text(res)
        run_hook(s, bash_payload(s, 1, extra="through a project PYTHONPATH"))
        seen["hook"] = await anyio.to_thread.run_sync(lambda: wait_until(
            lambda: contents(s, "%through a project PYTHONPATH%"), timeout=COLD_START_S, what="the capture stored"))


def test_a_pythonpath_into_the_project_reaches_neither_the_server_nor_the_actors_nor_the_hook(
        system_factory, tmp_path):
    s = system_factory
    marks = str(tmp_path / "imported")
    plant_decoys(os.path.join(s.project, "src"), marks, DECOYS)
    plant_decoys(s.project, marks, DECOYS)
    s.write_config()
    user_path = _project_pythonpath(s)
    s.env["PYTHONPATH"] = user_path
    seen = {}
    anyio.run(_session, s, seen)
    s.shutdown()

    assert seen["running"] == {"mcp", *s.expected}
    assert {"read", "grep", "bash", "recall"} <= seen["tools"]
    assert list(seen["hook"].values()) == [1]
    assert set(os.listdir(marks)) == set()
    # The user's commands run with the user's PYTHONPATH, as typed.
    assert f"user-pythonpath={user_path}" in seen["bash"], seen["bash"]

    # Positive control: with -P alone (how actors started before) the decoys bite.
    done = subprocess.run([PYTHON, "-P", "-c", "import json"], cwd=s.project, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": user_path}, timeout=deadline(60))
    assert done.returncode == 1 and "decoy json.py from the project was imported" in done.stderr
    assert set(os.listdir(marks)) == {"json"}


def test_sanitized_drops_every_entry_inside_the_project_and_keeps_the_rest(tmp_path):
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    link = tmp_path / "link-to-src"
    link.symlink_to(project / "src")
    outside = tmp_path / "libs"
    entries = ["src", str(project / "src"), "", str(project), str(link), str(outside), str(project) + "-sibling"]
    got = pythonpath.sanitized(os.pathsep.join(entries), str(project))
    kept = got.split(os.pathsep) if got else []
    root = os.path.realpath(pythonpath.memtree_root())
    assert [k for k in kept if k != root] == [str(outside), str(project) + "-sibling"]
    # memtree's own folder stays even inside the project (memtree developed in its own checkout).
    inside = pythonpath.sanitized(os.pathsep.join([root, "src"]), os.path.dirname(root))
    assert inside == root


def test_child_env_carries_the_users_value_and_an_actor_gets_it_back(monkeypatch, tmp_path):
    env = pythonpath.child_env({"PYTHONPATH": "src", "HOME": "/h"}, str(tmp_path))
    assert env[pythonpath.ENV_USER] == "src" and "src" not in (env.get("PYTHONPATH") or "").split(os.pathsep)
    assert pythonpath.child_env(env, str(tmp_path))[pythonpath.ENV_USER] == "src"  # a nested start keeps it
    monkeypatch.setenv("PYTHONPATH", env.get("PYTHONPATH", ""))
    monkeypatch.setenv(pythonpath.ENV_USER, "src")
    pythonpath.restore_user_pythonpath()
    assert os.environ["PYTHONPATH"] == "src" and pythonpath.ENV_USER not in os.environ
    monkeypatch.setenv(pythonpath.ENV_USER, "")
    pythonpath.restore_user_pythonpath()
    assert "PYTHONPATH" not in os.environ
