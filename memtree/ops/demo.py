"""`memtree demo`: the main job on an embedded default, narrated.

Creates a throwaway project and store, starts `memtree serve` exactly as
Claude Code would (the MCP SDK's stdio client), writes and recalls notes,
shows `memtree ctl status`, restarts the filter walker through `memtree ctl`,
and shuts down by closing stdin, checking that no process is left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from memtree.runtime.polling import poll_until

NOTES = [
    "The billing service retries failed Stripe webhooks with exponential backoff, capped at 10 minutes.",
    "Database migrations live in db/migrations and run at deploy time via `make migrate`.",
    "The flaky test test_export_csv fails when TZ is not UTC; set TZ=UTC in CI.",
]
TOO_SMALL = "ok"


def say(msg: str) -> None:
    print(f"[demo] {msg}", flush=True)


def _memtree_cmd() -> list[str]:
    exe = shutil.which("memtree", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-P", "-m", "memtree.cli"]  # -P: never import from the cwd


def _ctl(project: str, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_memtree_cmd(), "ctl", *args], cwd=project, env=env, capture_output=True, text=True, timeout=30
    )


def _status(project: str, env: dict) -> dict[str, dict]:
    out = _ctl(project, env, "status", "--json")
    if out.returncode != 0:
        return {}
    return {a["name"]: a for a in json.loads(out.stdout)["actors"]}


def _text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def _wait(pred, timeout: float, what: str):
    value = poll_until(pred, timeout)
    if value is None:
        raise SystemExit(f"[demo] gave up waiting for {what} after {timeout:.0f}s")
    return value


async def _drive(project: str, env: dict) -> list[int]:
    from mcp import Client, StdioServerParameters

    cmd = _memtree_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "serve"], cwd=project, env=env)
    say(f"starting `{' '.join(cmd)} serve` over stdio, as Claude Code would")
    t0 = time.monotonic()
    async with Client(params, read_timeout_seconds=60) as client:
        say(f"MCP initialize answered in {time.monotonic() - t0:.2f}s")
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        say(f"tools: {', '.join(tools)}")

        ids = []
        for text in NOTES + [NOTES[0], TOO_SMALL]:
            res = await client.call_tool("recall", {"note": text})
            say(f"recall(note={text[:40]!r}...) -> {_text(res).splitlines()[0]}")
            ids.append(_text(res))

        say("waiting for the filter walker to promote the notes (the duplicate and the tiny one are dropped)")

        async def hits(query: str) -> str:
            return _text(await client.call_tool("recall", {"query": query, "opts": "mode=keyword"}))

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "Stripe webhooks" not in await hits("stripe webhooks"):
            import anyio

            await anyio.sleep(0.2)
        found = await hits("stripe webhooks")
        say("recall(query='stripe webhooks'):\n" + found)
        say("recall(query='migrations deploy'):\n" + await hits("migrations deploy"))

        # The default mode is hybrid: the bundled embedding model (no download) beside keyword search.
        question = "which unit test breaks depending on the time zone"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "TZ=UTC" not in _text(
            await client.call_tool("recall", {"query": question, "mode": "semantic"})
        ):
            import anyio

            await anyio.sleep(0.2)
        say(
            f"recall(query={question!r}) (hybrid, the default):\n"
            + _text(await client.call_tool("recall", {"query": question}))
        )

        first_id = next((tok for tok in found.split() if len(tok) == 26 and tok.isalnum()), None)
        if first_id:
            say(f"recall(ids={first_id}):\n" + _text(await client.call_tool("recall", {"ids": first_id})))

        status = _ctl(project, env, "status")
        say("memtree ctl status:\n" + status.stdout + status.stderr)
        before = _status(project, env)
        old_pid = before.get("walker.filter", {}).get("pid")
        say(f"restarting the filter walker (pid {old_pid}) with `memtree ctl restart filter`")
        out = _ctl(project, env, "restart", "filter")
        say((out.stdout + out.stderr).strip())
        after = _wait(
            lambda: (
                (s := _status(project, env)).get("walker.filter", {}).get("state") == "RUNNING"
                and s["walker.filter"].get("pid") != old_pid
                and s
            ),
            30,
            "the filter walker to return",
        )
        say(f"filter walker is back: pid {old_pid} -> {after['walker.filter']['pid']}")
        res = await client.call_tool(
            "recall", {"note": "Written after the filter restart: the walker still promotes notes."}
        )
        say(f"recall(note=...) after restart -> {_text(res).splitlines()[0]}")
        pids = [a["pid"] for a in after.values() if a.get("pid")]
        say("closing stdin (what Claude Code does when it exits)")
    return pids


def main(argv: list[str] | None = None) -> int:
    import argparse

    argparse.ArgumentParser(prog="memtree demo", description=" ".join(__doc__.split("\n\n")[1].split())).parse_args(
        argv
    )  # --help explains instead of running the demo
    import anyio
    import psutil

    workdir = tempfile.mkdtemp(prefix="memtree-demo-")
    project = os.path.join(workdir, "project")
    os.makedirs(project)
    with open(os.path.join(project, "README.md"), "w") as f:
        f.write("# demo project\n")
    env = {"MEMTREE_HOME": os.path.join(workdir, "home"), "PATH": os.environ.get("PATH", "")}
    say(f"throwaway project {project}, store under {env['MEMTREE_HOME']}")
    try:
        pids = anyio.run(_drive, project, {**os.environ, **env})

        def alive() -> list[int]:
            return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]

        _wait(lambda: not alive(), 15, "every actor to exit")
        say(f"shut down cleanly: all {len(pids)} actor processes exited")
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
