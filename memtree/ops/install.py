"""``memtree install [--project DIR] [--shared] [--print]``: wire memtree into a project's Claude Code.

The hooks and the server entry hold this machine's absolute paths, so by
default they go where only this machine reads them: the hooks in
``.claude/settings.local.json`` (Claude Code keeps it out of git) and the
server in Claude Code's user config, local scope (``projects[<project>]`` in
``~/.claude.json``, where `claude mcp add` puts it). ``--shared`` writes the
committed files instead (``.claude/settings.json``, ``.mcp.json``). Our
entries found in the other place are removed, so nothing runs twice.

The hooks, merged with what is there:
- PostToolUse and PostToolUseFailure command hooks
  on ``Read|Grep|Bash`` running ``<abs python> -I -S <abs hook script>``
  (an absolute interpreter with -I -S starts in ~10 ms; a version-manager
  shim costs 90-130 ms on every tool call).
- the same, with ``stop``, as a Stop hook: the capture heartbeat's check
  (memtree.capture.heartbeat; it never blocks the agent).
- the same, with ``session-start``, as a SessionStart hook on
  ``startup|resume|compact``: the brief of what the store holds (memtree.recall.brief).
- the same, with ``post-compact`` and ``file-changed``, as PostCompact and
  FileChanged hooks (no matcher): the compaction summary kept as a node, and a
  watched file's chunks marked stale when it changes.
- the ``memtree`` stdio server (``memtree serve``; ``--tools LIST`` is passed
  on as ``memtree serve --tools LIST``: the MCP tools it lists, default all).

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

from memtree.capture.claude_code import (
    CAPTURE_EVENTS,
    COMPACT_EVENT,
    FILE_EVENT,
    MATCHER,
    SERVER_NAME,
    SESSION_EVENT,
    SESSION_MATCHER,
    STOP_EVENT,
)
from memtree.errors import ConfigError
from memtree.ops.claude_settings import is_ours, project_key, user_config_file

HOOK_TIMEOUT_S = 10


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


def server_entry(tools: tuple[str, ...] | None = None) -> dict:
    """``tools``: the MCP tools to list (None: all, and no flag)."""
    entry = fallback_server_entry()
    if tools is not None:
        entry["args"] += ["--tools", ",".join(tools)]
    return entry


def check_tools(text: str | None) -> tuple[str, ...] | None:
    """``--tools`` checked as serve checks it; None when it lists every tool."""
    if text is None:
        return None
    from memtree.errors import BadRequest
    from memtree.front.tool_table import LISTED, parse_tools

    try:
        tools = parse_tools(text)
    except BadRequest as e:
        raise ConfigError(e.message) from None
    return None if tools == LISTED else tools


def fallback_server_entry() -> dict:
    """The module, by absolute interpreter (not the `memtree` script, whose shebang
    takes no flags). Claude Code starts the server in the project, with the
    user's environment: -P keeps the cwd off sys.path, -E a PYTHONPATH that
    points into the project (memtree/runtime/pythonpath.py cleans it for the actors).
    -E only when memtree imports without PYTHONPATH (not a checkout run through it)."""
    from memtree.runtime.pythonpath import memtree_root, needs_pythonpath

    flags = ["-P"] if needs_pythonpath(memtree_root()) else ["-E", "-P"]
    return {"type": "stdio", "command": os.path.abspath(sys.executable), "args": [*flags, "-m", "memtree.cli", "serve"]}


def merge_settings(settings: dict, command: str, where: str) -> dict:
    out = dict(settings)
    hooks = out.get("hooks", {})
    if not isinstance(hooks, dict):
        raise ConfigError(f"{where}: 'hooks' must be an object")
    hooks = dict(hooks)
    wanted = {event: (MATCHER, command) for event in CAPTURE_EVENTS}
    wanted[STOP_EVENT] = (None, f"{command} stop")  # Stop takes no matcher
    wanted[SESSION_EVENT] = (SESSION_MATCHER, f"{command} session-start")
    wanted[COMPACT_EVENT] = (None, f"{command} post-compact")
    wanted[FILE_EVENT] = (None, f"{command} file-changed")
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
            if any(isinstance(h, dict) and is_ours(h) for h in inner):
                others = [h for h in inner if not (isinstance(h, dict) and is_ours(h))]
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


def drop_mcp(mcp: dict) -> dict:
    """``mcp`` without our server (it moved to the other scope)."""
    servers = mcp.get("mcpServers")
    if not isinstance(servers, dict) or SERVER_NAME not in servers:
        return mcp
    return {**mcp, "mcpServers": {k: v for k, v in servers.items() if k != SERVER_NAME}}


def merge_local_server(cfg: dict, key: str, entry: dict | None, where: str) -> dict:
    """Claude Code's user config with our server set (``entry``) or removed
    (None) under ``projects[key].mcpServers``, as `claude mcp add` files it."""
    projects = cfg.get("projects", {})
    if not isinstance(projects, dict) or not isinstance(projects.get(key, {}), dict):
        raise ConfigError(f"{where}: 'projects' must map project paths to objects")
    proj = dict(projects.get(key, {}))
    servers = proj.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{where}: 'projects[{key!r}].mcpServers' must be an object")
    if entry is None:
        if SERVER_NAME not in servers:
            return cfg
        servers = {k: v for k, v in servers.items() if k != SERVER_NAME}
    else:
        servers = {**servers, SERVER_NAME: entry}
    return {**cfg, "projects": {**projects, key: {**proj, "mcpServers": servers}}}


def strip_hooks(settings: dict) -> dict:
    """``settings`` without our hooks (they moved to the other settings file)."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return settings
    out = {}
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        kept = []
        for g in groups:
            inner = g.get("hooks") if isinstance(g, dict) else None
            if isinstance(inner, list) and any(isinstance(h, dict) and is_ours(h) for h in inner):
                others = [h for h in inner if not (isinstance(h, dict) and is_ours(h))]
                if others:
                    kept.append({**g, "hooks": others})
            else:
                kept.append(g)
        if kept:
            out[event] = kept
    return {**settings, "hooks": out} if out else {k: v for k, v in settings.items() if k != "hooks"}


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


def _write(path: str, data: dict, private: bool) -> None:
    """Atomically; an existing file keeps its mode, a new private one is 0600."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o600 if private else 0o666 & ~umask
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


class Change:
    """One file install touches: its content before and after, and what it is for."""

    def __init__(
        self,
        path: str,
        before: dict,
        after: dict,
        what: str,
        private: bool = False,
        cleanup: bool = False,
        slice_of=None,
    ):
        self.path, self.before, self.after, self.what = path, before, after, what
        self.private = private  # a new file is 0600: this machine's paths, not for the team
        self.cleanup = cleanup  # only removes an entry that moved; not mentioned when there is none
        self.slice_of = slice_of  # for a file not ours: what --print shows instead of all of it

    @property
    def changed(self) -> bool:
        return self.before != self.after


def plan_files(project: str, shared: bool = False, tools: tuple[str, ...] | None = None) -> list[Change]:
    """Every file to touch. Default: this machine only (the hook in
    .claude/settings.local.json, the server in Claude Code's user config,
    local scope). ``shared``: the committed .claude/settings.json and .mcp.json.
    Our entries in the other place are removed, so nothing runs twice."""

    local_settings = os.path.join(project, ".claude", "settings.local.json")
    shared_settings = os.path.join(project, ".claude", "settings.json")
    mcp_path, user_cfg, key = os.path.join(project, ".mcp.json"), user_config_file(), project_key(project)
    hook_at, hook_not = (shared_settings, local_settings) if shared else (local_settings, shared_settings)
    hooks_now, hooks_old = _load(hook_at), _load(hook_not)
    mcp, cfg = _load(mcp_path), _load(user_cfg)
    entry = server_entry(tools)
    local_slice = lambda d: {
        "projects": {
            key: {
                "mcpServers": {  # noqa: E731
                    k: v
                    for k, v in ((d.get("projects") or {}).get(key) or {}).get("mcpServers", {}).items()
                    if k == SERVER_NAME
                }
            }
        }
    }
    changes = [
        Change(
            hook_at,
            hooks_now,
            merge_settings(hooks_now, shlex.join(hook_argv()), hook_at),
            "capture hooks",
            private=not shared,
        ),
        Change(hook_not, hooks_old, strip_hooks(hooks_old), f"memtree hooks removed, now in {hook_at}", cleanup=True),
    ]

    def local(server: dict | None, note: str, **kw) -> Change:  # this project's entry in the user config
        return Change(user_cfg, cfg, merge_local_server(cfg, key, server, user_cfg), note, slice_of=local_slice, **kw)

    if shared:
        changes += [
            Change(mcp_path, mcp, merge_mcp(mcp, entry, mcp_path), "MCP server memtree, project scope"),
            local(None, f"MCP server memtree removed from local scope, now in {mcp_path}", cleanup=True),
        ]
    else:
        changes += [
            local(entry, f"MCP server memtree, local scope: {key}, this machine only", private=True),
            Change(mcp_path, mcp, drop_mcp(mcp), f"MCP server memtree removed, now in {user_cfg}", cleanup=True),
        ]
    return [c for c in changes if not c.cleanup or c.changed]


def keep_out_of_git(path: str) -> str | None:
    """Add ``path`` to the repository's .git/info/exclude (never a committed
    file) unless git already ignores it; the line to print, or None."""
    from memtree.paths import run_git

    d = os.path.dirname(path)
    while not os.path.isdir(d):
        d = os.path.dirname(d)
    ignored = run_git(d, "check-ignore", "-q", "--no-index", path, timeout=10)
    if ignored is None or ignored.returncode != 1:  # 0: ignored already; 128: not a repository (or no git)
        return None
    where = run_git(d, "rev-parse", "--show-toplevel", "--git-path", "info/exclude", timeout=10)
    if where is None or where.returncode != 0:
        return None
    top, exclude = where.stdout.splitlines()[:2]
    exclude = os.path.normpath(os.path.join(d, exclude))
    rel = "/" + os.path.relpath(os.path.realpath(path), os.path.realpath(top))
    os.makedirs(os.path.dirname(exclude), exist_ok=True)
    with open(exclude, "a", encoding="utf-8") as f:
        f.write(f"{rel}\n")
    return f"updated {exclude} (ignores {rel}: it holds this machine's paths)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="memtree install",
        description="Add memtree's capture hook and MCP server to a project's Claude Code. "
        "By default for this machine only: the hook in .claude/settings.local.json "
        "and the server in Claude Code's user config (local scope).",
    )
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument(
        "--shared",
        action="store_true",
        help="write the committed files instead: .claude/settings.json and .mcp.json (they hold this "
        "machine's absolute paths)",
    )
    p.add_argument("--print", action="store_true", dest="dry", help="show what would be written; write nothing")
    p.add_argument(
        "--tools",
        metavar="LIST",
        help="the MCP tools to list, comma-separated, of read,grep,bash,recall "
        "(default: all); e.g. --tools recall: capture, rewrite and recall only",
    )
    args = p.parse_args(argv)
    tools = check_tools(args.tools)
    project = os.path.abspath(args.project or os.getcwd())
    if not os.path.isdir(project):
        raise ConfigError(f"--project {project}: not a directory")
    for c in plan_files(project, shared=args.shared, tools=tools):
        if args.dry:
            print(f"# {c.path}: {c.what}{'' if c.changed else ' (unchanged)'}")
            print(json.dumps(c.slice_of(c.after) if c.slice_of else c.after, indent=2))
        elif not c.changed:
            print(f"unchanged {c.path} ({c.what})")
        else:
            verb = "updated" if os.path.exists(c.path) else "created"
            _write(c.path, c.after, c.private)
            print(f"{verb} {c.path} ({c.what})")
            if c.private and c.path.startswith(project + os.sep) and (note := keep_out_of_git(c.path)):
                print(note)
    if not args.dry:
        from memtree.ops import transcripts

        print(transcripts.notice([project], transcripts.import_command()))
    if tools is not None and "recall" not in tools:
        # Said once, after the files: the previews of large native outputs and the
        # session brief name recall calls, which this server will not list.
        print(
            "note: without recall, the agent cannot fetch what previews and the session brief point to "
            "(whole outputs stay in the store; `memtree install --tools ...,recall` lists it)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
