"""Run the real Claude Code CLI (``claude -p``) against the scripted fake API.

The CLI (npm ``@anthropic-ai/claude-code``, pinned) is installed once into a
cache outside the repository (``$MEMTREE_CC_CACHE``, default
``~/.cache/memtree-claude-code/<version>``; ``CLAUDE_BIN`` overrides). Each
session gets an isolated HOME, talks only to 127.0.0.1, and everything it
starts (the fake API, the CLI, MCP servers, hooks) is reaped by process group.
Same environment as ../shared/claude-code/harness/run.sh.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

from memtree.runtime.group import start_group

VERSION = os.environ.get("CLAUDE_CODE_VERSION", "2.1.197")


def session_argv(binary: str, args: list[str], allowed: str, out_dir: str) -> list[str]:
    """A headless session (``args``: ``-p <prompt>``, ``--continue`` ...) whose
    result is JSON on stdout, with its debug log kept in ``out_dir``."""
    return [
        binary,
        *args,
        "--output-format",
        "json",
        "--permission-mode",
        "default",
        "--allowedTools",
        allowed,
        "--debug-file",
        os.path.join(out_dir, "claude_debug.log"),
    ]


def cache_dir() -> str:
    return os.environ.get("MEMTREE_CC_CACHE") or os.path.expanduser(f"~/.cache/memtree-claude-code/{VERSION}")


def _works(path: str) -> bool:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and VERSION in done.stdout


def find_claude(install: bool = True) -> tuple[str | None, str]:
    """(path of a working ``claude`` of VERSION, or None with why not)."""
    root = cache_dir()
    cands = [
        os.environ.get("CLAUDE_BIN") or "",
        os.path.join(root, "node_modules", ".bin", "claude"),
        os.path.join(root, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"),
    ]
    for c in cands:
        if c and os.path.isfile(c) and _works(c):
            return c, ""
    if not install:
        return None, f"no claude {VERSION} under {root}"
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not installed"
    os.makedirs(root, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, "install", "--prefix", root, "--no-audit", "--no-fund", f"@anthropic-ai/claude-code@{VERSION}"],
            capture_output=True,
            text=True,
            timeout=600,
        )
    except subprocess.TimeoutExpired:
        return None, "npm install timed out after 600 s (registry unreachable?)"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["?"]
        return None, f"npm install @anthropic-ai/claude-code@{VERSION} failed: {tail[0][:200]}"
    for c in cands[1:]:
        if os.path.isfile(c) and _works(c):
            return c, ""
    return None, f"npm installed @anthropic-ai/claude-code@{VERSION} but no working binary under {root}"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


SCRIPTED_API = (sys.executable, "-P", "-m", "memtree.eval.context_ab.scripted_api")


def isolated_env(home: str) -> dict:
    """What every harness here gives the CLI (and tests/support/claude_code):
    its HOME and config dir, its temp dirs under HOME (created; not left in
    /tmp/claude-<uid>), no telemetry, updater or other outbound traffic, and
    the MCP servers awaited before the first request."""
    os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
    return {
        "HOME": home,
        "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        "CLAUDE_CODE_TMPDIR": os.path.join(home, "tmp"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MCP_CONNECTION_NONBLOCKING": "0",
    }


def start_api(script_path: str, log_path: str, proj: str, program=SCRIPTED_API) -> tuple[subprocess.Popen, str]:
    """The stand-in Anthropic API (``program``: the scripted one by default) on a free port,
    answering from ``script_path`` and logging each request to ``log_path``: (process, its URL)."""
    argv = [*program, "--port", "0", "--script", script_path, "--log", log_path, "--var", f"PROJ={proj}"]
    proc = start_group(argv, stdin=None, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30  # a cold interpreter on a loaded box
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "listening on " in line:
            return proc, line.split("listening on ", 1)[1].strip()
        if not line and proc.poll() is not None:
            break
    _kill_group(proc)
    raise RuntimeError("the fake API did not start")


def run(
    claude: str,
    proj: str,
    script: dict,
    out_dir: str,
    *,
    allowed: str = "Read Grep Bash Edit",
    env: dict | None = None,
    prompt: str = "do the thing",
    timeout: float = 240,
) -> list[dict]:
    """One ``claude -p`` session in ``proj``; the fake API's log entries."""
    os.makedirs(out_dir, exist_ok=True)
    home = os.path.join(out_dir, "home")
    os.makedirs(os.path.join(home, ".claude"), exist_ok=True)
    script_path, log_path = os.path.join(out_dir, "script.json"), os.path.join(out_dir, "api_log.jsonl")
    with open(script_path, "w") as f:
        json.dump(script, f)
    if os.path.exists(log_path):
        os.unlink(log_path)
    api, url = start_api(script_path, log_path, proj)
    try:
        full_env = {k: v for k, v in os.environ.items() if k not in ("CLAUDECODE", "CLAUDE_PROJECT_DIR")}
        full_env.update(
            {
                **isolated_env(home),
                "ANTHROPIC_BASE_URL": url,
                "ANTHROPIC_API_KEY": "sk-ant-dummy",
                "MCP_CONNECT_TIMEOUT_MS": "15000",
            }
        )
        for k, v in (env or {}).items():  # None unsets: e.g. the CLI's own default MCP wait
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
        with (
            open(os.path.join(out_dir, "claude_stdout.json"), "w") as out,
            open(os.path.join(out_dir, "claude_stderr.txt"), "w") as err,
        ):
            proc = subprocess.Popen(
                session_argv(claude, ["-p", prompt], allowed, out_dir),
                cwd=proj,
                env=full_env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass
            finally:
                _kill_group(proc)  # the CLI and anything it left in its group (MCP server, hooks)
    finally:
        _kill_group(api)
    with open(log_path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main_requests(log: list[dict]) -> list[dict]:
    """Bodies of the main-loop /v1/messages requests (the fake API answered them from the script)."""
    decisions = {e["seq"]: e.get("decision") for e in log if e.get("kind") == "response"}
    return [
        e["body"]
        for e in log
        if e.get("kind") == "request"
        and e.get("method") == "POST"
        and e["path"].split("?")[0].endswith("/v1/messages")
        and decisions.get(e["seq"]) == "main"
    ]


def tool_results(body: dict) -> list[tuple[str, str, bool]]:
    """(tool name, text shown to the model, is_error) of every tool result in a request, in order."""
    names = {}
    out = []
    for m in body.get("messages") or []:
        for b in m.get("content") if isinstance(m.get("content"), list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                names[b.get("id")] = b.get("name")
            elif b.get("type") == "tool_result":
                c = b.get("content")
                text = c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c or [] if isinstance(x, dict))
                out.append((names.get(b.get("tool_use_id"), "?"), text, bool(b.get("is_error"))))
    return out


__all__ = ["find_claude", "run", "main_requests", "tool_results", "cache_dir", "VERSION"]
