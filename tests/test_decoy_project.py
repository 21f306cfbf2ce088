"""No memtree process imports from the user's project (issue 7, point 2).

The project is full of decoys named like the standard library, memtree's
dependencies and memtree itself; each one, if imported, leaves a marker file
(outside the project) and breaks. serve (the supervisor and every actor,
started by the install's fallback command), ctl, the hook and every MCP tool
must work, and no marker may appear.
"""

import contextlib
import json
import os
import subprocess
import sys

import anyio

from memtree.ops.install import fallback_server_entry
from tests.hook_support import bash_payload, contents, run_hook
from tests.support import COLD_START_S, PYTHON, deadline, wait_until

# name -> file in the project; a package's __init__ or a module.
DECOYS = {
    "email": "email/__init__.py",  # a partial package: email._policybase is missing, as in the report
    "json": "json.py", "zmq": "zmq.py", "pydantic": "pydantic/__init__.py", "memtree": "memtree/__init__.py",
    "anyio": "anyio/__init__.py", "logging": "logging/__init__.py", "psutil": "psutil.py",
    "orjson": "orjson.py", "apsw": "apsw.py",
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

    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=s.project,
                                   env={**os.environ, **s.env})
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
        done = await anyio.to_thread.run_sync(lambda: subprocess.run(
            [ctl, "ctl", "status", "--json"], cwd=s.project, env={**os.environ, **s.env},
            capture_output=True, text=True, timeout=deadline(60)))
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
            return wait_until(lambda: contents(s, "%from the decoy project%"), timeout=COLD_START_S,
                              what="the hook's capture stored")
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
    assert seen["mcp_info"] == [{}]  # all four tools: nothing to note (serve --tools is test_front_serve's)
    results = seen["results"]
    assert set(results) >= seen["tools"], f"a tool was not called: {seen['tools'] - set(results)}"
    assert seen["failed"] == [], seen["failed"]
    assert "def greet" in results["read"][1] and "decoys-ok" in results["bash"][1]

    assert list(seen["hook"].values()) == [1]
    s.shutdown()

    assert set(os.listdir(marks)) == set()
    # Positive control: the decoys do bite a Python started in the project the usual way.
    done = subprocess.run([PYTHON, "-c", "import json"], cwd=s.project, capture_output=True, text=True, timeout=deadline(60))
    assert done.returncode == 1 and "decoy json.py from the project was imported" in done.stderr
    assert set(os.listdir(marks)) == {"json"}
