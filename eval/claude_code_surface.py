"""What memtree costs on every request, and whether it is ready for the first one.

Under the real Claude Code CLI (pinned, eval/context_ab/cli.py) against the
scripted fake API, with the CLI's own default MCP settings in ``-p`` mode
(no MCP_CONNECTION_NONBLOCKING / MCP_CONNECT_TIMEOUT_MS: it waits ~2 s):
- from the first main-loop request body: memtree's tool definitions, any
  server instructions, and the resource tools the CLI adds when a server
  declares resources, counted with memtree.tokens; and the whole body beside
  a bare session's first request (no memtree installed);
- whether memtree's tools were in that first request, N of M runs;
- spawn -> initialize answered for ``memtree serve`` beside
  ``python -c "import mcp"``, in the same run.

    python -m memtree.eval.claude_code_surface [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from memtree import tokens
from memtree.eval.context_ab import cli

RESOURCE_TOOLS = ("ListMcpResourcesTool", "ReadMcpResourceTool", "ReadMcpResourceDirTool")
SCRIPT = {"side_text": "ok", "turns": [{"tool_use": {"name": "mcp__memtree__recall", "input": {}}}, {"text": "done"}]}
BARE_SCRIPT = {"side_text": "ok", "turns": [{"text": "done"}]}


def _compact(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def make_project(root: str, with_memtree: bool, home: str) -> str:
    proj = os.path.join(root, "proj")
    os.makedirs(proj, exist_ok=True)
    with open(os.path.join(proj, "app.py"), "w") as f:
        f.write("def greet(name):\n    return f'hello {name}'\n")
    subprocess.run(["git", "init", "-q"], cwd=proj, check=True)
    if with_memtree:
        # The session's isolated HOME and config dir (as cli.run sets them): install
        # writes the MCP entry to $CLAUDE_CONFIG_DIR/.claude.json.
        os.makedirs(home, exist_ok=True)
        env = {
            **os.environ,
            "HOME": home,
            "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
            "MEMTREE_HOME": os.path.join(home, ".memtree"),
        }
        subprocess.run(
            [sys.executable, "-P", "-m", "memtree.cli", "install"],
            cwd=proj,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    return proj


def first_request(log: list[dict]) -> dict | None:
    """The first model request of the main loop: the one offering the built-in tools."""
    for e in log:
        body = e.get("body") if e.get("kind") == "request" and e.get("method") == "POST" else None
        if isinstance(body, dict) and any(t.get("name") == "Bash" for t in body.get("tools") or []):
            return body
    return None


def instructions_text(body: dict) -> str:
    """memtree's part of the '# MCP Server Instructions' section, if any."""
    text = _compact(body.get("messages") or [])
    m = re.search(r"## memtree\\n(.*?)(?:\\n\\n|$)", text)
    return m.group(1) if m else ""


def surface(body: dict) -> dict:
    tools = body.get("tools") or []
    ours = [t for t in tools if t.get("name", "").startswith("mcp__memtree__")]
    res = [t for t in tools if t.get("name") in RESOURCE_TOOLS]
    chars = sum(len(_compact(t)) for t in ours)
    res_chars = sum(len(_compact(t)) for t in res)
    instr = instructions_text(body)
    added = "".join(_compact(t) for t in ours + res) + instr
    return {
        "tools": sorted(t["name"][len("mcp__memtree__") :] for t in ours),
        "tool_chars": chars,
        "resource_tools": len(res),
        "resource_chars": res_chars,
        "instruction_chars": len(instr),
        "added_chars": len(added),
        "added_tokens": tokens.count(added),
        "body_tokens": tokens.count(_compact(body)),
    }


def connect_ms(debug_log: str) -> float | None:
    try:
        with open(debug_log, encoding="utf-8", errors="replace") as f:
            m = re.search(r'MCP server "memtree": Successfully connected.*? in (\d+)ms', f.read())
    except OSError:
        return None
    return float(m.group(1)) if m else None


def cli_runs(claude: str, runs: int, work: str) -> None:
    default_mcp = {"MCP_CONNECTION_NONBLOCKING": None, "MCP_CONNECT_TIMEOUT_MS": None}
    allowed = "Read Grep Bash Edit mcp__memtree"
    bare_dir = os.path.join(work, "bare")
    bare_proj = make_project(bare_dir, False, os.path.join(bare_dir, "out", "home"))
    bare = first_request(
        cli.run(claude, bare_proj, BARE_SCRIPT, os.path.join(bare_dir, "out"), allowed=allowed, env=default_mcp)
    )
    bare_tokens = tokens.count(_compact(bare)) if bare else None
    hits, rows = 0, []
    for i in range(runs):
        d = os.path.join(work, f"run{i}")
        out = os.path.join(d, "out")
        proj = make_project(d, True, os.path.join(out, "home"))
        body = first_request(cli.run(claude, proj, SCRIPT, out, allowed=allowed, env=default_mcp))
        s = surface(body) if body else {}
        ready = bool(s.get("tools"))
        hits += ready
        rows.append(s)
        print(
            f"run {i + 1}: memtree tools in the first request: {'yes' if ready else 'NO'}; "
            f"CLI connect {connect_ms(os.path.join(out, 'claude_debug.log'))} ms; "
            f"{s.get('tool_chars', 0)} chars of tool definitions ({len(s.get('tools', []))} tools), "
            f"resource tools {s.get('resource_tools', 0)}, instructions {s.get('instruction_chars', 0)} chars; "
            f"first request {s.get('body_tokens')} tokens vs bare {bare_tokens}"
        )
    print(f"memtree tools in the first -p request (CLI default MCP wait): {hits} of {runs} runs")
    ready_rows = [r for r in rows if r.get("tools")]
    if not ready_rows:  # measure the surface anyway, with the CLI told to wait for MCP servers
        d = os.path.join(work, "waited")
        out = os.path.join(d, "out")
        proj = make_project(d, True, os.path.join(out, "home"))
        body = first_request(cli.run(claude, proj, SCRIPT, out, allowed=allowed))
        if body and surface(body).get("tools"):
            ready_rows = [surface(body)]
            print("(surface measured from a run with MCP_CONNECTION_NONBLOCKING=0: no default run was ready)")
    if ready_rows:
        r = ready_rows[0]
        print(
            f"per-request surface: tools {r['tools']}; {r['added_chars']} chars = {r['added_tokens']} tokens "
            f"(memtree.tokens) of tool definitions + instructions + resource tools"
        )
        if bare_tokens:
            delta = statistics.median(x["body_tokens"] for x in ready_rows) - bare_tokens
            print(
                f"whole first request beside a bare session: +{delta:.0f} tokens (median over ready runs; "
                f"includes anything else memtree adds, e.g. a SessionStart brief)"
            )


def _median_ms(samples: list[float]) -> str:
    s = sorted(samples)
    return f"median {statistics.median(s) * 1000:.0f} ms, min {s[0] * 1000:.0f}, max {s[-1] * 1000:.0f}"


def spawn_to_initialize(runs: int, work: str) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    async def once(proj: str, env: dict) -> float:
        params = StdioServerParameters(
            command=sys.executable, args=["-P", "-m", "memtree.cli", "serve"], cwd=proj, env=env
        )
        with open(os.devnull, "w") as errlog:
            t0 = time.monotonic()
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    took = time.monotonic() - t0
        return took

    serve, imp = [], []
    for i in range(runs):
        d = os.path.join(work, f"init{i}")
        proj = make_project(d, False, d)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
        env["MEMTREE_HOME"] = os.path.join(d, "home")
        serve.append(anyio.run(once, proj, env))
        t0 = time.monotonic()
        subprocess.run([sys.executable, "-P", "-c", "import mcp"], check=True)
        imp.append(time.monotonic() - t0)
    print(f"memtree serve spawn -> initialize answered: {_median_ms(serve)} ({runs} runs)")
    print(f"python -c 'import mcp' (same interpreter, same run): {_median_ms(imp)}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--no-cli", action="store_true", help="only the spawn -> initialize figures")
    p.add_argument("--no-init", action="store_true", help="only the Claude Code runs")
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep the runs' logs there")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memtree-surface-") as tmp:
        work = args.keep or tmp
        if not args.no_init:
            spawn_to_initialize(args.runs, work)
        if not args.no_cli:
            claude, why = cli.find_claude()
            if claude is None:
                print(f"Claude Code CLI not available: {why}")
                return 1
            cli_runs(claude, args.runs, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
