"""The memtree plugin's first run and launcher (standard library only).

Claude Code installs a plugin as a copy of this repository at
``${CLAUDE_PLUGIN_ROOT}`` (a new path on every update) and gives it
``${CLAUDE_PLUGIN_DATA}`` for state that survives updates. memtree's Python
environment lives there: ``venv/`` (memtree installed from the plugin root,
not editable), ``lib`` (a link to its site-packages, so the capture hook's
path does not depend on the Python version) and ``installed.manifest`` (what
was installed). An install runs when the bundled manifest (pyproject.toml)
differs from the installed one, the pattern Claude Code documents for
plugin dependencies.

  session-start   SessionStart hook: ready -> memtree's own SessionStart
                  hook (the session brief), as `memtree install` registers
                  it; else start the install in the background and say so
                  (never blocks a turn)
  serve           MCP server: ready -> exec ``memtree serve``; else start the
                  install and, once its first step (the MCP SDK) is in the
                  environment, exec plugin/waiting_server.py, which answers
                  Claude Code with no tools and hands the connection over to
                  ``memtree serve`` (tools/list_changed) when the rest is in
  install         install now (under a lock; a second one waits, then sees it done)
  hook [ARG]      a capture hook (PostToolUse/Failure; ARG post-compact, file-changed)
                  while the environment is not ready: the hooks are standard
                  library only, so this interpreter runs them from the plugin
                  root; with no writer yet the capture is redacted and spooled,
                  and the writer drains it once the environment exists
                  (plugin.json runs the environment's Python directly once ready)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVE_WAIT_S = 900


def data_dir() -> str:
    d = os.environ.get("CLAUDE_PLUGIN_DATA")
    if not d:
        sys.exit("memtree plugin: CLAUDE_PLUGIN_DATA is not set (run by Claude Code as a plugin)")
    return d


def manifest() -> str:
    """What an install is made from: the project file and the package version."""
    h = hashlib.sha256()
    for rel in ("pyproject.toml", os.path.join("memtree", "__init__.py")):
        with open(os.path.join(ROOT, rel), "rb") as f:
            h.update(f.read())
    return f"{h.hexdigest()} python{sys.version_info[0]}.{sys.version_info[1]}\n"


def _paths(data: str) -> dict:
    return {
        "venv": os.path.join(data, "venv"),
        "lib": os.path.join(data, "lib"),
        "stamp": os.path.join(data, "installed.manifest"),
        "sdk_stamp": os.path.join(data, "sdk.manifest"),  # the first step: the MCP SDK is in the venv
        "python": os.path.join(data, "venv", "bin", "python"),
        "log": os.path.join(data, "install.log"),
        "failed": os.path.join(data, "install.failed"),
        "lock": os.path.join(data, "install.lock"),
        "memtree": os.path.join(data, "venv", "bin", "memtree"),
    }


def _stamped(path: str) -> bool:
    """The stamp at ``path`` holds this plugin's manifest (a step finished for this version)."""
    try:
        with open(path, encoding="utf-8") as f:
            stamped = f.read()
    except OSError:
        return False
    return stamped == manifest()


def ready(data: str) -> bool:
    p = _paths(data)
    return _stamped(p["stamp"]) and os.access(p["memtree"], os.X_OK) and os.path.isdir(p["lib"])


def sdk_ready(data: str) -> bool:
    """The environment has the MCP SDK (the install's first step): the waiting server can run."""
    p = _paths(data)
    return _stamped(p["sdk_stamp"]) and os.access(p["python"], os.X_OK)


def sdk_requirement() -> str:
    """pyproject's requirement on the MCP SDK (one place for its version range)."""
    import re
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    return next(d for d in deps if re.split(r"[<>=!~\[;\s]", d, maxsplit=1)[0] == "mcp")


def _log(data: str, line: str) -> None:
    with open(_paths(data)["log"], "a", encoding="utf-8") as f:
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")


def install(data: str) -> None:
    """Create the environment unless it is current; one installer at a time."""
    import fcntl

    os.makedirs(data, mode=0o700, exist_ok=True)
    p = _paths(data)
    with open(p["lock"], "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second caller waits here, then finds it ready
        if ready(data):
            return
        _log(data, f"installing memtree from {ROOT} into {p['venv']}")
        t0 = time.monotonic()
        if os.path.exists(p["sdk_stamp"]):  # the venv is about to be cleared under it
            os.unlink(p["sdk_stamp"])
        try:
            py = p["python"]
            pip = [py, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
            # The SDK first, on its own: the MCP server can answer Claude Code (with no tools
            # yet) long before the whole environment is in, and offer the tools once it is.
            # Claude Code waits for a starting server MCP_TIMEOUT (30 s by default) and at most
            # 60 s (its initialize request's timeout), so this step is kept short: this
            # Python's own pip when it has one (no pip installed into the venv first) and no
            # bytecode compiled ahead (it is compiled as it is imported).
            if _has_pip_python_option():
                _run(data, [sys.executable, "-m", "venv", "--clear", "--without-pip", p["venv"]])
                sdk = [sys.executable, "-m", "pip", "--python", py, "install", "--disable-pip-version-check", "-q"]
                _run(data, [*sdk, "--no-compile", sdk_requirement()])
            else:
                _run(data, [sys.executable, "-m", "venv", "--clear", p["venv"]])
                _run(data, [*pip, "--no-compile", sdk_requirement()])
            with open(p["sdk_stamp"], "w", encoding="utf-8") as f:
                f.write(manifest())
            _log(data, f"MCP SDK in after {time.monotonic() - t0:.1f} s")
            if not os.path.exists(os.path.join(p["venv"], "bin", "pip")):
                _run(data, [py, "-m", "ensurepip", "--default-pip"])  # the venv as `python -m venv` makes it
            _run(data, [*pip, ROOT])
            site = subprocess.run(
                [py, "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            tmp = p["lib"] + ".tmp"
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(site, tmp)
            os.replace(tmp, p["lib"])
        except (OSError, subprocess.CalledProcessError) as e:
            with open(p["failed"], "w", encoding="utf-8") as f:
                f.write(f"{e}\n")
            _log(data, f"install FAILED: {e}")
            raise
        with open(p["stamp"], "w", encoding="utf-8") as f:
            f.write(manifest())
        if os.path.exists(p["failed"]):
            os.unlink(p["failed"])
        _log(data, f"installed in {time.monotonic() - t0:.1f} s")


def _has_pip_python_option() -> bool:
    """This Python has pip 22.3 or newer, which installs into another environment (--python)."""
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.split()
        major, minor = (int(x) for x in out[1].split(".")[:2])
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return False
    return (major, minor) >= (22, 3)


def _run(data: str, argv: list[str]) -> None:
    with open(_paths(data)["log"], "a", encoding="utf-8") as log:
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, check=True, cwd=data)


def _install_in_background(data: str) -> None:
    """A detached installer: it outlives a session that ends (or an MCP start
    Claude Code gives up on) meanwhile. A second one waits on the lock, then
    finds the environment ready."""
    os.makedirs(data, mode=0o700, exist_ok=True)
    with open(_paths(data)["log"], "a") as log:
        subprocess.Popen(
            [sys.executable, "-I", os.path.abspath(__file__), "install"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            cwd=data,
        )


def _import_offer(memtree_bin: str) -> str | None:
    """How many earlier transcripts Claude Code kept for the project, and the command that
    imports them once the environment is ready (memtree.ops.transcripts: standard library)."""
    try:
        if ROOT not in sys.path:
            sys.path.insert(0, ROOT)
        from memtree.ops import transcripts

        project = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
        return transcripts.notice([project], f"{memtree_bin} import")
    except Exception:  # noqa: BLE001 - the first session's message must go out regardless
        return None


def session_start(data: str) -> int:
    """Never blocks: ready -> the brief hook (stdin passed on); else the install goes to the background."""
    if ready(data):
        p = _paths(data)
        py = os.path.join(p["venv"], "bin", "python")
        os.execv(py, [py, "-I", "-S", os.path.join(p["lib"], "memtree", "hooks", "launch.py"), "session-start"])
    p = _paths(data)
    _install_in_background(data)
    why = ""
    if os.path.exists(p["failed"]):
        why = " The last attempt failed; retrying."
    msg = (
        f"memtree: setting up its Python environment in {p['venv']} (first run or update, about a minute; "
        f"log: {p['log']}).{why} This session's Read/Grep/Bash calls are kept meanwhile (spooled by this "
        f"Python, stored once memtree runs). memtree's tools join this session when the setup is done: its "
        f"server answers Claude Code with no tools once the setup's first step (the MCP SDK) is in, then "
        f"offers them (tools/list_changed); if that first step takes longer than Claude Code waits for a "
        f"starting server (MCP_TIMEOUT, 30 s by default, at most 60 s), they come with the next session."
    )
    offer = _import_offer(p["memtree"])
    if offer:
        msg += "\n" + offer
    print(json.dumps({"systemMessage": msg}))
    return 0


def hook(data: str, args: list[str]) -> int:
    """The first session's captures land: run memtree's stdlib hook with this interpreter."""
    p = _paths(data)
    if ready(data):
        py = os.path.join(p["venv"], "bin", "python")
        os.execv(py, [py, "-I", "-S", os.path.join(p["lib"], "memtree", "hooks", "launch.py"), *args])
    launch = os.path.join(ROOT, "hooks", "launch.py")
    os.execv(sys.executable, [sys.executable, "-I", "-S", launch, *args])
    return 0  # not reached


def serve(data: str) -> int:
    """Be ``memtree serve`` once the environment is ready; before that, as soon as its
    first step (the MCP SDK) is in, the waiting server (plugin/waiting_server.py), which
    answers Claude Code with no tools and becomes ``memtree serve`` when the rest is in.
    Claude Code gives a starting MCP server MCP_TIMEOUT (30 s by default): a first
    step longer than that makes this session go without memtree's tools."""
    p = _paths(data)
    if not ready(data):
        started = time.time()
        _install_in_background(data)
        while not ready(data):
            if sdk_ready(data):
                waiting = os.path.join(ROOT, "plugin", "waiting_server.py")
                os.execv(p["python"], [p["python"], "-I", waiting])
            try:
                if os.path.getmtime(p["failed"]) >= started:
                    print(f"memtree plugin: could not install its environment; see {p['log']}", file=sys.stderr)
                    return 1
            except OSError:
                pass
            if time.time() - started > SERVE_WAIT_S:
                print(f"memtree plugin: its environment is still installing; see {p['log']}", file=sys.stderr)
                return 1
            time.sleep(0.5)  # waiting on another process's install; nothing to poll but the files
    return exec_memtree_serve(data)


def exec_memtree_serve(data: str, env: dict | None = None) -> int:
    py = _paths(data)["python"]
    # -E: a PYTHONPATH pointing into the project must not shadow memtree's imports (-P: nor the cwd).
    argv = [py, "-E", "-P", "-m", "memtree.cli", "serve"]
    if env is None:
        os.execv(py, argv)
    os.execve(py, argv, env)
    return 1  # not reached


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else ""
    data = data_dir()
    if cmd == "session-start":
        return session_start(data)
    if cmd == "serve":
        return serve(data)
    if cmd == "hook":
        return hook(data, argv[1:])
    if cmd == "install":
        try:
            install(data)
        except (OSError, subprocess.CalledProcessError):
            return 1
        return 0
    print("usage: bootstrap.py session-start|serve|install", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
