"""``memtree install [--project DIR] [--print]``: wire memtree into a project's Claude Code.

Writes two files under the project, merging with what is there:
- ``.claude/settings.json``: PostToolUse and PostToolUseFailure command hooks
  on ``Read|Grep|Bash`` running ``<abs python> -I -S <abs hook script>``
  (an absolute interpreter with -I -S starts in ~10 ms; a version-manager
  shim costs 90-130 ms on every tool call).
- the same, with ``stop``, as a Stop hook: the capture heartbeat's check
  (memtree.heartbeat; it never blocks the agent).
- the same, with ``session-start``, as a SessionStart hook on
  ``startup|resume|compact``: the brief of what the store holds (memtree.recall.brief).
- ``.mcp.json``: the ``memtree`` stdio server (``memtree serve``).

Other hooks and servers are kept; an earlier memtree entry is replaced in
place. Running it twice changes nothing the second time. ``--print`` shows
the resulting files and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

from memtree.errors import ConfigError

MATCHER = "Read|Grep|Bash"
EVENTS = ("PostToolUse", "PostToolUseFailure")
STOP_EVENT = "Stop"
SESSION_EVENT, SESSION_MATCHER = "SessionStart", "startup|resume|compact"
HOOK_TIMEOUT_S = 10
SERVER_NAME = "memtree"


def hook_script() -> str:
    """Absolute path of hooks/launch.py (memtree.hooks.launch), the tiny
    launcher of memtree.hooks.post_tool_use."""
    import importlib.util

    spec = importlib.util.find_spec("memtree.hooks.launch")
    if spec is None or not spec.origin:
        raise ConfigError("memtree.hooks.launch is missing from this installation")
    return os.path.abspath(spec.origin)


def hook_argv() -> list[str]:
    """The exact command the hook runs as (tests run the hook the same way)."""
    return [os.path.abspath(sys.executable), "-I", "-S", hook_script()]


def server_entry() -> dict:
    script = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "memtree")
    if os.path.isfile(script) and os.access(script, os.X_OK):
        return {"type": "stdio", "command": script, "args": ["serve"]}
    return fallback_server_entry()


def fallback_server_entry() -> dict:
    """No `memtree` script beside the interpreter: run the module. -P, because
    Claude Code starts the server in the project, which must not shadow our imports."""
    return {"type": "stdio", "command": os.path.abspath(sys.executable), "args": ["-P", "-m", "memtree.cli", "serve"]}


def _is_ours(hook: dict) -> bool:
    """A memtree capture hook from this or an earlier install (another interpreter or checkout)."""
    words = [str(hook.get("command", ""))] + [str(a) for a in hook.get("args") or []]
    try:
        words = [w for part in words for w in shlex.split(part)]
    except ValueError:
        pass
    for w in words:
        if os.path.basename(w) == "memtree-hook":
            return True
        for script in ("post_tool_use.py", "launch.py"):  # earlier installs registered the former
            if w.endswith(os.path.join("hooks", script)):
                root = os.path.dirname(os.path.dirname(w))
                if w.endswith(os.path.join("memtree", "hooks", script)) or os.path.isfile(
                        os.path.join(root, "memtree", "__init__.py")):
                    return True
    return False


def merge_settings(settings: dict, command: str, where: str) -> dict:
    out = dict(settings)
    hooks = out.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{where}: 'hooks' must be an object")
    hooks = dict(hooks)
    wanted = {event: (MATCHER, command) for event in EVENTS}
    wanted[STOP_EVENT] = (None, f"{command} stop")  # Stop takes no matcher
    wanted[SESSION_EVENT] = (SESSION_MATCHER, f"{command} session-start")
    for event, (matcher, cmd) in wanted.items():
        ours = {"type": "command", "command": cmd, "timeout": HOOK_TIMEOUT_S}
        groups = hooks.get(event, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise ConfigError(f"{where}: 'hooks.{event}' must be a list of objects")
        kept, placed = [], False
        for group in groups:
            inner = group.get("hooks", [])
            if not isinstance(inner, list):
                raise ConfigError(f"{where}: 'hooks.{event}[].hooks' must be a list")
            if any(isinstance(h, dict) and _is_ours(h) for h in inner):
                others = [h for h in inner if not (isinstance(h, dict) and _is_ours(h))]
                if not placed and group.get("matcher") == matcher:
                    kept.append({**group, "hooks": others + [ours]})
                    placed = True
                elif others:
                    kept.append({**group, "hooks": others})
            else:
                kept.append(group)
        if not placed:
            kept.append({"matcher": matcher, "hooks": [ours]} if matcher else {"hooks": [ours]})
        hooks[event] = kept
    out["hooks"] = hooks
    return out


def merge_mcp(mcp: dict, entry: dict, where: str) -> dict:
    out = dict(mcp)
    servers = out.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{where}: 'mcpServers' must be an object")
    out["mcpServers"] = {**servers, SERVER_NAME: entry}
    return out


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise ConfigError(f"{path}: not valid JSON ({e}); fix or remove it, nothing was written") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a JSON object; nothing was written")
    return data


def _write(path: str, data: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, path)


def plan_files(project: str) -> list[tuple[str, dict, dict]]:
    """(path, current content, merged content) for both files."""
    settings_path = os.path.join(project, ".claude", "settings.json")
    mcp_path = os.path.join(project, ".mcp.json")
    settings, mcp = _load(settings_path), _load(mcp_path)
    return [
        (settings_path, settings, merge_settings(settings, shlex.join(hook_argv()), settings_path)),
        (mcp_path, mcp, merge_mcp(mcp, server_entry(), mcp_path)),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="memtree install",
                                description="Add memtree's capture hook and MCP server to a project.")
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument("--print", action="store_true", dest="dry", help="show what would be written; write nothing")
    args = p.parse_args(argv)
    project = os.path.abspath(args.project or os.getcwd())
    if not os.path.isdir(project):
        raise ConfigError(f"--project {project}: not a directory")
    files = plan_files(project)
    for path, before, after in files:
        if args.dry:
            print(f"# {path}{'' if before != after else ' (unchanged)'}")
            print(json.dumps(after, indent=2))
        elif before == after:
            print(f"unchanged {path}")
        else:
            _write(path, after)
            print(f"updated {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
