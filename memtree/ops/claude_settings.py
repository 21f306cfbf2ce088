"""Where Claude Code finds memtree: hook and MCP registrations in the files
Claude Code reads (project settings, user settings, ``~/.claude.json``, an
enabled memtree plugin). Read-only; ``memtree doctor`` reports from it.
"""

from __future__ import annotations

import glob
import json
import os
import shlex

from memtree.capture.claude_code import CAPTURE_EVENTS, MATCHER, SERVER_NAME, STOP_EVENT

PLUGIN_NAME = "memtree"


def is_ours(hook: dict) -> bool:
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
                    os.path.join(root, "memtree", "__init__.py")
                ):
                    return True
    return False


def config_dir() -> str:
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")


def user_config_file() -> str:
    """Where `claude mcp add` (local scope, its default) records a server:
    ``projects[<project>].mcpServers`` in ``$CLAUDE_CONFIG_DIR/.claude.json``,
    else ``~/.claude.json`` (checked with Claude Code 2.1.197)."""
    d = os.environ.get("CLAUDE_CONFIG_DIR")
    return os.path.join(d, ".claude.json") if d else os.path.join(os.path.expanduser("~"), ".claude.json")


def project_key(project: str) -> str:
    """The ``projects`` key Claude Code files a project under: its git root, else the directory."""
    from memtree.paths import find_git_root

    real = os.path.realpath(project)
    return find_git_root(real) or real


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def settings_files(project: str) -> list[str]:
    return [
        os.path.join(project, ".claude", "settings.json"),
        os.path.join(project, ".claude", "settings.local.json"),
        os.path.join(config_dir(), "settings.json"),
    ]


def enabled_plugin(project: str) -> str | None:
    """``memtree@<marketplace>`` when a settings file enables the plugin."""
    for path in settings_files(project):
        for key, on in (_load(path).get("enabledPlugins") or {}).items():
            if on and key.split("@", 1)[0] == PLUGIN_NAME:
                return key
    return None


def plugin_dirs(plugin_id: str) -> tuple[str | None, str]:
    """(installed plugin root, its data dir) for ``memtree@<marketplace>``."""
    name, _, market = plugin_id.partition("@")
    roots = sorted(
        glob.glob(
            os.path.join(
                glob.escape(config_dir()),
                "plugins",
                "cache",
                glob.escape(market),
                glob.escape(name),
                "*",
                ".claude-plugin",
                "plugin.json",
            )
        ),
        key=os.path.getmtime,
    )
    root = os.path.dirname(os.path.dirname(roots[-1])) if roots else None
    data = os.path.join(config_dir(), "plugins", "data", f"{name}-{market}")
    return root, data


def _expand(text: str, root: str | None, data: str) -> str:
    return text.replace("${CLAUDE_PLUGIN_ROOT}", root or "").replace("${CLAUDE_PLUGIN_DATA}", data)


def _argv(hook: dict) -> list[str]:
    try:
        argv = shlex.split(str(hook.get("command", "")))
    except ValueError:
        argv = [str(hook.get("command", ""))]
    return argv + [str(a) for a in hook.get("args") or []]


def hook_registrations(project: str) -> dict[str, list[tuple[str, list[str]]]]:
    """event -> [(where, argv)] for memtree's capture and Stop hooks."""
    found: dict[str, list[tuple[str, list[str]]]] = {e: [] for e in (*CAPTURE_EVENTS, STOP_EVENT)}
    sources = [(p, _load(p).get("hooks"), None, "") for p in settings_files(project)]
    plugin = enabled_plugin(project)
    if plugin:
        root, data = plugin_dirs(plugin)
        manifest = _load(os.path.join(root, ".claude-plugin", "plugin.json")) if root else {}
        sources.append((f"plugin {plugin}", manifest.get("hooks"), root, data))
    for where, hooks, root, data in sources:
        if not isinstance(hooks, dict):
            continue
        for event in found:
            for group in hooks.get(event) or []:
                if not isinstance(group, dict):
                    continue
                if event in CAPTURE_EVENTS and not set(MATCHER.split("|")) <= set(
                    str(group.get("matcher", "")).split("|")
                ):
                    continue
                for h in group.get("hooks") or []:
                    if isinstance(h, dict) and (where.startswith("plugin") or is_ours(h)):
                        found[event].append((where, [_expand(a, root, data) for a in _argv(h)]))
    return found


def mcp_registrations(project: str) -> list[tuple[str, dict]]:
    """[(where, server entry)] for the memtree MCP server, plugin paths expanded."""
    out = []
    entry = (_load(os.path.join(project, ".mcp.json")).get("mcpServers") or {}).get(SERVER_NAME)
    if isinstance(entry, dict):
        out.append((os.path.join(project, ".mcp.json"), entry))
    for path in (os.path.join(os.path.expanduser("~"), ".claude.json"), os.path.join(config_dir(), ".claude.json")):
        data = _load(path)
        projects = data.get("projects") or {}
        mine = projects.get(project_key(project)) or projects.get(project) or {}
        for servers in (data.get("mcpServers"), mine.get("mcpServers") if isinstance(mine, dict) else None):
            if isinstance(servers, dict) and isinstance(servers.get(SERVER_NAME), dict):
                out.append((path, servers[SERVER_NAME]))
    plugin = enabled_plugin(project)
    if plugin:
        root, data = plugin_dirs(plugin)
        manifest = _load(os.path.join(root, ".claude-plugin", "plugin.json")) if root else {}
        entry = (manifest.get("mcpServers") or {}).get(SERVER_NAME)
        if isinstance(entry, dict):
            expanded = json.loads(_expand(json.dumps(entry), root, data))
            out.append(
                (
                    f"plugin {plugin}",
                    {
                        **expanded,
                        "env": {
                            "CLAUDE_PLUGIN_ROOT": root or "",
                            "CLAUDE_PLUGIN_DATA": data,
                            **(expanded.get("env") or {}),
                        },
                    },
                )
            )
    return out


def listed_tools(entry: dict) -> tuple[tuple[str, ...], str | None]:
    """The tools the entry's ``serve --tools LIST`` lists (all without it), or why that is wrong."""
    from memtree.errors import BadRequest
    from memtree.front.tool_table import LISTED, parse_tools

    args = [str(a) for a in entry.get("args") or []]
    text = None
    for i, a in enumerate(args):
        if a == "--tools":
            text = args[i + 1] if i + 1 < len(args) else ""
        elif a.startswith("--tools="):
            text = a.split("=", 1)[1]
    try:
        return (LISTED if text is None else parse_tools(text)), None
    except BadRequest as e:
        return (), e.message


def registered_tools(project: str) -> tuple[str, ...] | None:
    """The tools the project's first memtree registration lists (what each
    request carries), or None when there is none or it cannot be read."""
    regs = mcp_registrations(project)
    if not regs:
        return None
    tools, why = listed_tools(regs[0][1])
    return None if why else tools
