"""The real Claude Code CLI for tests: installed from the npm registry at a
pinned version into a cache outside the repository (reused between runs),
driven in ``-p`` mode against the scripted fake model API (eval/context_ab/fake_api.py) on
127.0.0.1 with an isolated HOME. Process handling follows the shared
harness's run.sh; every process started here is reaped."""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import psutil

from memtree.eval.context_ab.cli import isolated_env, session_argv, start_api
from memtree.runtime.group import start_group
from tests.support import deadline, deadline_ms

VERSION = "2.1.197"
# One copy of the shared harness's fake API, kept in the eval package.
FAKE_API = importlib.util.find_spec("memtree.eval.context_ab.fake_api").origin
RUN_TIMEOUT_S = 600  # the plugin's first run installs its environment inside the session (used through deadline())


class RegistryUnreachable(Exception):
    pass


# npm's error codes for "could not reach the registry" (anything else is a failure, not a skip).
NETWORK_ERRORS = (
    "ECONNREFUSED",
    "ENOTFOUND",
    "ETIMEDOUT",
    "EAI_AGAIN",
    "ECONNRESET",
    "ENETUNREACH",
    "EHOSTUNREACH",
    "ERR_SOCKET_TIMEOUT",
    "network",
)


def cache_dir() -> str:
    base = os.environ.get("MEMTREE_TEST_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "memtree-claude-code"
    )
    return os.path.join(base, VERSION)


def _works(path: str) -> bool:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=deadline(60))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.startswith(VERSION)


def find_binary(prefix: str) -> str | None:
    """bin/claude, else the platform package's native binary (postinstall skipped)."""
    cands = [
        os.path.join(prefix, "node_modules", ".bin", "claude"),
        *glob.glob(os.path.join(prefix, "node_modules", "@anthropic-ai", "claude-code-linux-*", "claude")),
    ]
    return next((c for c in cands if os.path.isfile(c) and _works(c)), None)


def ensure_cli() -> str:
    """The pinned CLI, installed on first use. Raises RegistryUnreachable only
    when npm cannot reach its registry; any other failure is an error."""
    prefix = cache_dir()
    found = find_binary(prefix)
    if found:
        return found
    import shutil

    if shutil.which("npm") is None:
        raise RegistryUnreachable("npm is not installed, so the npm registry cannot be reached")
    ping = subprocess.run(
        ["npm", "view", f"@anthropic-ai/claude-code@{VERSION}", "version"],
        capture_output=True,
        text=True,
        timeout=deadline(300),
    )
    if ping.returncode != 0 or VERSION not in ping.stdout:
        errors = [ln for ln in ping.stderr.splitlines() if ln.startswith("npm error") and "complete log" not in ln]
        why = "; ".join(errors[:2]) or ping.stderr.strip()[-300:]
        if any(code in ping.stderr for code in NETWORK_ERRORS):
            raise RegistryUnreachable(f"`npm view @anthropic-ai/claude-code@{VERSION}`: {why}")
        raise AssertionError(f"npm reached no answer for @anthropic-ai/claude-code@{VERSION}: {why}")
    os.makedirs(prefix, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", prefix, f"@anthropic-ai/claude-code@{VERSION}"],
        capture_output=True,
        text=True,
        timeout=deadline(900),
    )
    assert done.returncode == 0, f"npm install failed:\n{done.stderr[-2000:]}"
    found = find_binary(prefix)
    assert found, f"npm installed @anthropic-ai/claude-code@{VERSION} but no working binary under {prefix}"
    return found


def base_env(home: str, extra: dict | None = None) -> dict:
    """The CLI's environment: isolated HOME and config dir, nothing inherited
    from an outer Claude Code session, all model traffic to 127.0.0.1."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE", "ANTHROPIC", "MEMTREE_", "MCP_")) and k != "VIRTUAL_ENV"
    }
    env.update(
        {
            **isolated_env(home),
            # -p waits this long for MCP servers before the first request (the plugin's
            # first run installs memtree's environment meanwhile).
            # MCP_TIMEOUT is how long a starting server may take (default 30 s).
            "MCP_CONNECT_TIMEOUT_MS": str(deadline_ms(RUN_TIMEOUT_S * 1000)),
            "MCP_TIMEOUT": str(deadline_ms(RUN_TIMEOUT_S * 1000)),
            # pip inside the plugin's first run reuses the developer's wheel cache.
            "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "pip"),
        }
    )
    env.update(extra or {})
    return env


class FakeApi:
    def __init__(self, script: dict, out_dir: str, project: str):
        os.makedirs(out_dir, exist_ok=True)
        self.log = os.path.join(out_dir, "api_log.jsonl")
        path = os.path.join(out_dir, "script.json")
        with open(path, "w") as f:
            json.dump(script, f)
        self.proc, self.url = start_api(path, self.log, project, program=(sys.executable, "-I", FAKE_API))

    def close(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=deadline(10))
        self.proc.stdout.close()

    def requests(self) -> list[dict]:
        with open(self.log) as f:
            return [json.loads(line) for line in f if line.strip()]


def plugin_market(repo: str, dest: str) -> str:
    """The repository as a clone would have it (tracked and new files, no .venv): a local marketplace."""
    import shutil

    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in files:
        if os.path.isfile(os.path.join(repo, rel)):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
            shutil.copy2(os.path.join(repo, rel), os.path.join(dest, rel))
    return dest


def claude(binary: str, args: list[str], env: dict, cwd: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [binary, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def install_plugin(binary: str, env: dict, cwd: str, market: str) -> float:
    """The plugin as a user adds it: ``claude plugin marketplace add`` of ``market``, then
    ``plugin install memtree@memtree``; the wall time the install began (readiness counts from it)."""
    added = claude(binary, ["plugin", "marketplace", "add", market], env, cwd)
    assert added.returncode == 0 and "Successfully added marketplace" in added.stdout + added.stderr, added
    began = time.time()
    inst = claude(binary, ["plugin", "install", "memtree@memtree"], env, cwd)
    assert inst.returncode == 0 and "Successfully installed plugin" in inst.stdout + inst.stderr, inst
    return began


def start_session(
    binary: str, env: dict, project: str, allowed: str, out_dir: str, args: list[str] | None = None
) -> subprocess.Popen:
    """``claude -p`` in ``project`` (its own process group); ``args`` replace ``-p "do the thing"``."""
    argv = session_argv(binary, args or ["-p", "do the thing"], allowed, out_dir)
    return start_group(argv, env=env, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_session(
    binary: str, env: dict, project: str, allowed: str, out_dir: str, args: list[str] | None = None
) -> dict:
    """A whole session; returns its JSON result (with session_id). Its process group is reaped."""
    proc = start_session(binary, env, project, allowed, out_dir, args)
    try:
        out, err = proc.communicate(timeout=deadline(RUN_TIMEOUT_S))
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert proc.returncode == 0, f"claude exited {proc.returncode}: {err[-2000:]}"
    return json.loads(out)


def transcript_path(env: dict, session_id: str) -> str:
    """The session's transcript (JSONL) under the CLI's config dir (``base_env``)."""
    return next(
        os.path.join(d, f)
        for d, _s, fs in os.walk(os.path.join(env["CLAUDE_CONFIG_DIR"], "projects"))
        for f in fs
        if f == f"{session_id}.jsonl"
    )


def tool_results(requests: list[dict]) -> dict[str, str]:
    """tool name -> the text of its tool_result in the last main-loop request."""
    msgs = None
    for r in reversed(requests):
        body = r.get("body") if isinstance(r.get("body"), dict) else None
        if body and body.get("messages") and body.get("tools"):
            msgs = body["messages"]
            break
    names, out = {}, {}
    for m in msgs or []:
        for c in m["content"] if isinstance(m.get("content"), list) else []:
            if c.get("type") == "tool_use":
                names[c["id"]] = c["name"]
            elif c.get("type") == "tool_result":
                body = (
                    c["content"]
                    if isinstance(c["content"], str)
                    else "\n".join(x.get("text", "") for x in c["content"])
                )
                out[names.get(c["tool_use_id"], "?")] = ("ERROR: " if c.get("is_error") else "") + body
    return out


def reap_leftovers(marker: str, timeout: float = 30.0) -> list[str]:
    """Wait for processes of this test (``marker`` in their command line or
    MEMTREE_HOME) to exit; kill what remains and return their descriptions."""

    def ours():
        found = []
        for p in psutil.process_iter(["pid", "cmdline"]):
            try:
                if p.pid == os.getpid():
                    continue
                if marker in " ".join(p.info["cmdline"] or []) or marker in p.environ().get("MEMTREE_HOME", ""):
                    if p.status() != psutil.STATUS_ZOMBIE:
                        found.append(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return found

    deadline = time.monotonic() + timeout
    left = ours()
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = ours()
    desc = []
    for p in left:
        try:
            desc.append(f"{p.pid} {' '.join(p.cmdline())[:200]}")
            p.kill()
        except psutil.NoSuchProcess:
            pass
    return desc
