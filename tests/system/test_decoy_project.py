"""No memtree process imports from the user's project (issue 7, point 2).

The project is full of decoys named like the standard library, memtree's
dependencies and memtree itself; each one, if imported, leaves a marker file
(outside the project) and breaks. serve (the supervisor and every actor,
started by the install's fallback command), ctl, the hook and every MCP tool
must work, and no marker may appear.

A PYTHONPATH pointing into the user's project reaches no memtree process.

``-P`` keeps the cwd off sys.path, but PYTHONPATH is honoured: a user whose
shell exports ``PYTHONPATH=src`` would have the project's ``json.py``,
``zmq.py`` or ``memtree/`` shadow ours. The MCP server as install registers
it, every actor the supervisor starts and the hook must import none of them;
the user's own commands (the bash tool) still get the user's PYTHONPATH."""

import contextlib
import json
import os
import subprocess
import sys

import anyio

from memtree.ops.install import fallback_server_entry, server_entry
from memtree.runtime import pythonpath
from tests.support import COLD_START_S, PYTHON, deadline, wait_until
from tests.support.hook_support import bash_payload, contents, run_hook

# name -> file in the project; a package's __init__ or a module.
DECOYS = {
    "email": "email/__init__.py",  # a partial package: email._policybase is missing, as in the report
    "json": "json.py",
    "zmq": "zmq.py",
    "pydantic": "pydantic/__init__.py",
    "memtree": "memtree/__init__.py",
    "anyio": "anyio/__init__.py",
    "logging": "logging/__init__.py",
    "psutil": "psutil.py",
    "orjson": "orjson.py",
    "apsw": "apsw.py",
}


def plant_decoys(project: str, marks: str, decoys: dict[str, str] = DECOYS) -> None:
    """Each decoy, once imported, leaves a file named for it in ``marks`` (and
    raises, but for the partial ``email`` package)."""
    os.makedirs(marks, exist_ok=True)
    for name, rel in decoys.items():
        path = os.path.join(project, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        breaks = "" if name == "email" else f"raise ImportError('decoy {rel} from the project was imported')\n"
        with open(path, "w") as f:
            f.write(f"open({os.path.join(marks, name)!r}, 'w').close()\n{breaks}")


def _text(res) -> str:
    return "\n".join(getattr(c, "text", "") for c in res.content)


@contextlib.asynccontextmanager
async def serving(s, entry: dict, seen: dict):
    """The registered server command over real stdio in the project, once every
    actor runs: ``seen`` gets the listed tools and the running actors."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], cwd=s.project, env={**os.environ, **s.env}
    )
    async with Client(params, read_timeout_seconds=COLD_START_S * 3) as client:
        seen["tools"] = {t.name for t in (await client.list_tools()).tools}
        actors = await anyio.to_thread.run_sync(lambda: s.wait_running(["mcp", *s.expected]))
        seen["running"] = {a["name"] for a in actors if a["state"] == "RUNNING"}
        yield client


async def _every_tool(s, seen: dict) -> None:
    entry = fallback_server_entry()
    assert entry["args"][:3] == ["-E", "-P", "-m"]
    async with serving(s, entry, seen) as client:
        ctl = os.path.join(os.path.dirname(sys.executable), "memtree")
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [ctl, "ctl", "status", "--json"],
                cwd=s.project,
                env={**os.environ, **s.env},
                capture_output=True,
                text=True,
                timeout=deadline(60),
            )
        )
        actors = json.loads(done.stdout or "{}").get("actors", [])
        seen["ctl"] = (done.returncode, done.stderr, {a["name"]: a["state"] for a in actors})
        seen["mcp_info"] = [a.get("info") for a in actors if a["name"] == "mcp"]

        results, failed = {}, []

        async def call(name, args):
            res = await client.call_tool(name, args)
            results[name] = (bool(res.is_error), _text(res))
            if res.is_error:  # recall is called several ways: keep every failure
                failed.append((name, args, _text(res)))
            return _text(res)

        text = "The decoy project keeps its own json, zmq and pydantic; memtree must never import them."
        nid = (await call("recall", {"note": text})).split()[0]
        hidden = (await call("note", {"text": "The hidden note tool still answers by name."})).split()[0]
        until = anyio.current_time() + COLD_START_S
        while "never import them" not in await call("recall", {"query": "decoy project pydantic"}):
            assert anyio.current_time() < until, results["recall"]
            await anyio.sleep(0.1)
        await call("recall", {"ids": [nid]})
        await call("recall", {})
        await call("recall", {"op": "neighbors", "ids": [nid]})
        await call("recall", {"op": "path", "ids": [nid]})
        await call("recall", {"op": "compose", "ids": [nid], "budget_tokens": 300})
        await call("read", {"path": "app.py"})
        await call("grep", {"pattern": "def greet"})
        await call("bash", {"command": "echo decoys-ok"})
        await call("recall", {"ids": nid, "note": "test", "opts": "op=forget"})
        await call("forget", {"node_id": hidden, "reason": "test"})

        def hook() -> dict:
            run_hook(s, bash_payload(s, 1, extra="from the decoy project"))
            return wait_until(
                lambda: contents(s, "%from the decoy project%"), timeout=COLD_START_S, what="the hook's capture stored"
            )

        seen["hook"] = await anyio.to_thread.run_sync(hook)
        seen["results"] = results
        seen["failed"] = failed
        seen["nid"] = nid


def test_serve_ctl_hook_and_every_tool_work_in_a_project_full_of_decoys(system_factory, tmp_path):
    s = system_factory
    marks = str(tmp_path / "imported")
    plant_decoys(s.project, marks)
    with open(os.path.join(s.project, "app.py"), "w") as f:
        f.write("def greet(name):\n    return f'hello {name}'\n")
    s.write_config()
    seen = {}
    anyio.run(_every_tool, s, seen)

    assert seen["running"] == {"mcp", *s.expected}
    code, err, states = seen["ctl"]
    assert (code, err) == (0, "") and states == {n: "RUNNING" for n in ("mcp", *s.expected)}
    assert seen["mcp_info"] == [{}]  # all four tools: nothing to note (serve --tools: test_serve_front.py)
    results = seen["results"]
    assert set(results) >= seen["tools"], f"a tool was not called: {seen['tools'] - set(results)}"
    assert seen["failed"] == [], seen["failed"]
    assert "def greet" in results["read"][1] and "decoys-ok" in results["bash"][1]

    assert list(seen["hook"].values()) == [1]
    s.shutdown()

    assert set(os.listdir(marks)) == set()
    # Positive control: the decoys do bite a Python started in the project the usual way.
    done = subprocess.run(
        [PYTHON, "-c", "import json"], cwd=s.project, capture_output=True, text=True, timeout=deadline(60)
    )
    assert done.returncode == 1 and "decoy json.py from the project was imported" in done.stderr
    assert set(os.listdir(marks)) == {"json"}


DECOYS = {
    "json": "json.py",
    "zmq": "zmq.py",
    "memtree": "memtree/__init__.py",
    "orjson": "orjson.py",
    "apsw": "apsw.py",
    "psutil": "psutil.py",
}


def _project_pythonpath(s) -> str:
    # Relative, absolute and empty (the cwd) entries into the project, ahead of everything else.
    return os.pathsep.join(["src", os.path.join(s.project, "src"), "", s.env["PYTHONPATH"]])


async def _session(s, seen: dict) -> None:
    async with serving(s, server_entry(), seen) as client:
        res = await client.call_tool("bash", {"command": 'echo "user-pythonpath=$PYTHONPATH"'})
        seen["bash"] = _text(res)
        run_hook(s, bash_payload(s, 1, extra="through a project PYTHONPATH"))
        seen["hook"] = await anyio.to_thread.run_sync(
            lambda: wait_until(
                lambda: contents(s, "%through a project PYTHONPATH%"), timeout=COLD_START_S, what="the capture stored"
            )
        )


def test_a_pythonpath_into_the_project_reaches_neither_the_server_nor_the_actors_nor_the_hook(system_factory, tmp_path):
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
    done = subprocess.run(
        [PYTHON, "-P", "-c", "import json"],
        cwd=s.project,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": user_path},
        timeout=deadline(60),
    )
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
