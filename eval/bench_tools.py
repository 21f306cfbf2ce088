"""Wrapped-tool figures (issue 4): round trips over real stdio and what stays
out of the context window.

    .venv/bin/python -m memtree.eval.bench_tools [--n 100]

Runs `memtree serve` on a copy of the installed `mcp` package source (a real
repository-sized tree) and prints, in one run on one server:
- `get` of a missing id (the cheapest tool: a baseline for the MCP path),
  `read` of a cached chunk, `grep`, `bash` round trips (median, p95);
- a scripted exploration (outlines, symbols, greps, shell commands): tokens
  the tools returned vs tokens of the full outputs they stand for.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

from memtree import tokens
from memtree.eval.stats import fmt_ms, summary


def _memtree() -> list[str]:
    exe = shutil.which("memtree", path=os.path.dirname(sys.executable))
    return [exe] if exe else [sys.executable, "-P", "-m", "memtree.cli"]


def _text(res) -> str:
    return "\n".join(c.text for c in res.content if getattr(c, "type", "") == "text")


def _full_read(root: str, path: str, lines: tuple[int, int] | None = None) -> str:
    """What a plain read would return: the file (or slice) with cat -n numbers."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        all_lines = f.read().split("\n")
    lo, hi = lines or (1, len(all_lines))
    return "\n".join(f"{i:>6}\t{all_lines[i - 1]}" for i in range(lo, min(hi, len(all_lines)) + 1))


def _full_shell(root: str, argv: list[str]) -> str:
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, errors="replace")
    return out.stdout + out.stderr


def _symbol_lines(root: str, path: str, name: str) -> tuple[int, int]:
    from memtree.text.chunking import chunk_text

    with open(os.path.join(root, path), encoding="utf-8") as f:
        sym = chunk_text(path, f.read()).find_symbol(name)
    return sym.start, sym.end


def _rg() -> str:
    return shutil.which("rg", path=os.path.dirname(sys.executable)) or "rg"


# (tool, arguments, how to get the full output it stands for)
def script(root: str) -> list[tuple[str, dict, str]]:
    steps = []
    for path in ("mcp/client/session.py", "mcp/server/lowlevel/server.py", "mcp/shared/session.py", "mcp/types.py"):
        if os.path.exists(os.path.join(root, path)):
            steps.append(("read", {"path": path}, _full_read(root, path)))
    steps.append(
        (
            "read",
            {"path": "mcp/client/session.py", "symbol": "ClientSession"},
            _full_read(root, "mcp/client/session.py", _symbol_lines(root, "mcp/client/session.py", "ClientSession")),
        )
    )
    for pattern in ("def send_request", "class .*Error", "async def ", "import anyio"):
        steps.append(("grep", {"pattern": pattern}, _full_shell(root, [_rg(), "-n", pattern, "."])))
    for cmd in (
        "find . -name '*.py' | sort",
        "wc -l $(find . -name '*.py' | sort)",
        "grep -rn TODO . || true",
        "cat mcp/client/session.py",
    ):
        steps.append(("bash", {"command": cmd}, _full_shell(root, ["bash", "-c", cmd])))
    return steps


async def _session(project: str, env: dict, n: int) -> dict:
    from mcp import Client, StdioServerParameters

    cmd = _memtree()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "serve"], cwd=project, env=env)
    figures: dict = {}
    async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
        # Warm up: the front builds its services and the writer its store on first use.
        await client.call_tool("read", {"path": "mcp/client/session.py", "symbol": "ClientSession"})

        async def timed(name: str, args: dict) -> list[float]:
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                res = await client.call_tool(name, args)
                out.append(time.perf_counter() - t0)
            assert not res.is_error, f"{name}{args}: {_text(res)}"
            return out

        figures["get (missing id, baseline)"] = await _timed_error_ok(client, n)
        figures["read (cached chunk, symbol)"] = await timed(
            "read", {"path": "mcp/client/session.py", "symbol": "ClientSession.initialize"}
        )
        figures["read (cached, lines 1-40)"] = await timed("read", {"path": "mcp/client/session.py", "lines": "1-40"})
        figures["grep (whole tree)"] = await timed("grep", {"pattern": "def send_request"})
        figures["bash (echo)"] = await timed("bash", {"command": "echo hello"})

        returned = full = 0
        rows = []
        for tool, args, whole in script(project):
            res = await client.call_tool(tool, args)
            got = tokens.count(_text(res))
            want = tokens.count(whole)
            rows.append((tool, args, got, want))
            returned += got
            full += max(want, got)
        figures["exploration"] = (rows, returned, full)
    return figures


async def _timed_error_ok(client, n: int) -> list[float]:
    """`get` of a missing id answers with an error: the cheapest full round trip."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await client.call_tool("recall", {"ids": ["01AAAAAAAAAAAAAAAAAAAAAAAA"]})
        out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    import anyio
    import mcp

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100, help="calls per round-trip figure")
    args = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="memtree-bench-tools-")
    try:
        project = os.path.join(work, "project")
        shutil.copytree(
            os.path.dirname(os.path.dirname(mcp.__file__)) + "/mcp",
            os.path.join(project, "mcp"),
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        env = {**os.environ, "MEMTREE_HOME": os.path.join(work, "home")}
        figures = anyio.run(_session, project, env, args.n)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"round trips over real stdio (memtree serve, mcp {mcp.__version__ if hasattr(mcp, '__version__') else ''}):")
    for name, samples in figures.items():
        if name != "exploration":
            print(f"  {name:32s} {fmt_ms(summary(samples))}")
    rows, returned, full = figures["exploration"]
    print("scripted exploration of the mcp package source (tokens returned / tokens of the full output):")
    for tool, a, got, want in rows:
        label = f"{tool}({', '.join(f'{k}={v!r}' for k, v in a.items())})"
        print(f"  {label[:70]:70s} {got:7d} / {want:8d}")
    kept_out = 1 - returned / full if full else 0.0
    print(f"  total {returned} / {full} tokens: {kept_out:.1%} stayed out of the context window")
    return 0


if __name__ == "__main__":
    sys.exit(main())
