"""`memtree install` as an operator runs it: merge, idempotence, --print, bad files."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from memtree.ops.install import hook_argv
from memtree.ops.transcripts import folder_name
from tests.support import PYTHON, REPO, deadline

REPO = REPO


def install(project, *args, home=None) -> subprocess.CompletedProcess:
    """`memtree install` with Claude Code's user config in ``home`` (default:
    beside the project), never the developer's own ~/.claude.json."""
    home = os.path.normpath(str(home or os.path.join(str(project), "..", "claude-home")))
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    return subprocess.run(
        [PYTHON, "-m", "memtree.cli", "install", "--project", str(project), *args],
        capture_output=True,
        text=True,
        timeout=deadline(60),
        cwd=REPO,
        env={**env, "HOME": home},
    )


def in_project(tmp_path):
    """tmp_path/project: the Claude Code user config the tests use sits beside it."""
    project = tmp_path / "project"
    project.mkdir()
    return project


def user_config(project) -> dict:
    path = os.path.join(str(project), "..", "claude-home", ".claude.json")
    return load(path) if os.path.exists(path) else {}


def local_server(project) -> dict | None:
    key = os.path.realpath(str(project))
    return ((user_config(project).get("projects") or {}).get(key) or {}).get("mcpServers", {}).get("memtree")


def load(path) -> dict:
    with open(path) as f:
        return json.load(f)


def _assert_our_hooks(settings: dict) -> None:
    for event in ("PostToolUse", "PostToolUseFailure"):
        [group] = settings["hooks"][event]
        assert group["matcher"] == "Read|Grep|Bash"
        [hook] = group["hooks"]
        assert hook["type"] == "command" and hook["timeout"] == 10
        argv = shlex.split(hook["command"])
        assert argv == hook_argv() and argv[1:3] == ["-I", "-S"]
        assert (
            os.path.isabs(argv[0]) and os.path.isfile(argv[3]) and argv[3].endswith(os.path.join("hooks", "launch.py"))
        )
    [stop] = settings["hooks"]["Stop"]
    assert "matcher" not in stop and shlex.split(stop["hooks"][0]["command"]) == [*hook_argv(), "stop"]
    for event, arg in (("PostCompact", "post-compact"), ("FileChanged", "file-changed")):
        [group] = settings["hooks"][event]
        assert "matcher" not in group and shlex.split(group["hooks"][0]["command"]) == [*hook_argv(), arg]


def _no_transcripts(project) -> str:
    folder = os.path.join(
        os.path.dirname(str(project)), "claude-home", ".claude", "projects", folder_name(os.path.realpath(project))
    )
    return f"memtree: no earlier Claude Code transcripts of this project (looked in {folder})"


def test_install_says_how_many_transcripts_claude_code_kept_and_how_to_import_them(tmp_path):
    project = in_project(tmp_path)
    folder = os.path.join(str(tmp_path), "claude-home", ".claude", "projects", folder_name(os.path.realpath(project)))
    os.makedirs(os.path.join(folder, "s1", "tool-results"))
    for name in ("s1.jsonl", "s2.jsonl", "notes.txt"):
        with open(os.path.join(folder, name), "w") as f:
            f.write("{}\n")
    done = install(project)
    assert done.returncode == 0, done.stderr
    [line] = [ln for ln in done.stdout.splitlines() if "transcript" in ln]
    assert line.startswith(f"memtree: 2 earlier Claude Code session transcripts of this project in {folder}; `")
    assert line.endswith(" import` stores their Read/Grep/Bash calls (not imported yet)")
    # nothing was imported: install starts no writer and creates no store
    assert not os.path.exists(os.path.join(str(tmp_path), "claude-home", ".memtree"))


def _assert_our_server(server: dict) -> None:
    assert server["type"] == "stdio" and os.path.isabs(server["command"])
    # -E: a PYTHONPATH into the project is ignored (tests/system/test_decoy_project.py); -P: so is the cwd.
    assert server["args"] == ["-E", "-P", "-m", "memtree.cli", "serve"]


def test_by_default_install_writes_only_where_this_machine_reads_and_says_so(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    done = install(project)
    assert done.returncode == 0, done.stderr
    local = project / ".claude" / "settings.local.json"
    cfg = os.path.normpath(os.path.join(str(project), "..", "claude-home", ".claude.json"))
    exclude = project / ".git" / "info" / "exclude"
    assert done.stdout.splitlines() == [
        f"created {local} (capture hooks)",
        f"updated {exclude} (ignores /.claude/settings.local.json: it holds this machine's paths)",
        f"created {cfg} (MCP server memtree, local scope: {os.path.realpath(project)}, this machine only)",
        _no_transcripts(project),
    ]
    _assert_our_hooks(load(local))
    _assert_our_server(local_server(project))
    # Nothing the team commits: no settings.json, no .mcp.json, and git ignores the local file.
    assert sorted(os.listdir(project)) == [".claude", ".git"] and os.listdir(project / ".claude") == [
        "settings.local.json"
    ]
    assert subprocess.run(["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True).stdout == ""
    assert {oct(os.stat(p).st_mode & 0o777) for p in (local, cfg)} == {"0o600"}
    again = install(project)
    assert again.stdout.splitlines() == [
        f"unchanged {local} (capture hooks)",
        f"unchanged {cfg} (MCP server memtree, local scope: {os.path.realpath(project)}, this machine only)",
        _no_transcripts(project),
    ]


def test_shared_writes_the_committed_files_and_moves_our_entries_out_of_the_local_ones(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "claude-home"
    home.mkdir()
    other = {"numStartups": 7, "projects": {"/elsewhere": {"mcpServers": {"x": {"command": "x"}}}}}
    (home / ".claude.json").write_text(json.dumps(other))
    os.chmod(home / ".claude.json", 0o600)
    assert install(project).returncode == 0
    assert local_server(project) is not None
    done = install(project, "--shared")
    assert done.returncode == 0, done.stderr
    settings, local = project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"
    assert done.stdout.splitlines() == [
        f"created {settings} (capture hooks)",
        f"updated {local} (memtree hooks removed, now in {settings})",
        f"created {project / '.mcp.json'} (MCP server memtree, project scope)",
        f"updated {home / '.claude.json'} (MCP server memtree removed from local scope, now in {project / '.mcp.json'})",
        _no_transcripts(project),
    ]
    _assert_our_hooks(load(settings))
    _assert_our_server(load(project / ".mcp.json")["mcpServers"]["memtree"])
    assert load(local) == {} and local_server(project) is None
    # Claude Code's own data in its config is kept as it was, mode included.
    cfg = load(home / ".claude.json")
    assert cfg["numStartups"] == 7 and cfg["projects"]["/elsewhere"] == other["projects"]["/elsewhere"]
    assert os.stat(home / ".claude.json").st_mode & 0o777 == 0o600


def test_the_readme_install_command_works_as_written_from_the_checkout(tmp_path):
    with open(os.path.join(REPO, "README.md")) as f:
        lines = [ln.strip().split("#")[0].strip() for ln in f if ln.strip().startswith(".venv/bin/memtree install")]
    assert len(lines) == 2 and all("--project /path/to/your/project" in ln for ln in lines), lines
    exe = os.path.join(REPO, ".venv", "bin", "memtree")
    if not os.path.exists(exe):
        pytest.skip("no .venv in this checkout (make setup creates it)")
    project = tmp_path / "project"
    project.mkdir()
    env = {**{k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}, "HOME": str(tmp_path / "claude-home")}
    for line in lines:
        done = subprocess.run(
            line.replace("/path/to/your/project", str(project)),
            shell=True,
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=deadline(60),
        )
        assert done.returncode == 0, (line, done.stderr)
    _assert_our_hooks(load(project / ".claude" / "settings.local.json"))
    _assert_our_server(local_server(project))


def test_the_installed_hook_command_runs_and_exits_zero_silently(tmp_path):
    tmp_path = in_project(tmp_path)
    install(tmp_path)
    cmd = load(tmp_path / ".claude" / "settings.local.json")["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        cmd,
        shell=True,
        input=b'{"cwd": "%s"}' % str(tmp_path).encode(),
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=deadline(60),
    )
    assert (done.returncode, done.stdout) == (0, b"")


def test_install_keeps_other_hooks_and_servers_and_a_second_run_changes_nothing(tmp_path):
    tmp_path = in_project(tmp_path)
    (tmp_path / ".claude").mkdir()
    other_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo other"}]}
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {"PostToolUse": [other_hook], "Stop": [{"hooks": [{"type": "command", "command": "x"}]}]},
                "permissions": {"allow": ["Bash"]},
            }
        )
    )
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "other-server"}}}))
    assert install(tmp_path, "--shared").returncode == 0
    settings = load(tmp_path / ".claude" / "settings.json")
    assert settings["hooks"]["PostToolUse"][0] == other_hook and len(settings["hooks"]["PostToolUse"]) == 2
    assert settings["hooks"]["Stop"] and settings["permissions"] == {"allow": ["Bash"]}
    assert set(load(tmp_path / ".mcp.json")["mcpServers"]) == {"other", "memtree"}
    before = {p: (tmp_path / p).read_bytes() for p in (".claude/settings.json", ".mcp.json")}
    mtimes = {p: os.stat(tmp_path / p).st_mtime_ns for p in before}
    again = install(tmp_path, "--shared")
    assert again.returncode == 0 and again.stdout.count("unchanged") == 2
    assert {p: (tmp_path / p).read_bytes() for p in before} == before
    assert {p: os.stat(tmp_path / p).st_mtime_ns for p in before} == mtimes


def test_an_earlier_memtree_hook_is_replaced_not_duplicated(tmp_path):
    tmp_path = in_project(tmp_path)
    (tmp_path / ".claude").mkdir()
    old = {"type": "command", "command": f"/old/python -I -S {REPO}/hooks/post_tool_use.py", "timeout": 5}
    keep = {"type": "command", "command": "echo keep"}
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps({"hooks": {"PostToolUse": [{"matcher": "Read|Grep|Bash", "hooks": [keep, old]}]}})
    )
    assert install(tmp_path, "--shared").returncode == 0
    [group] = load(tmp_path / ".claude" / "settings.json")["hooks"]["PostToolUse"]
    assert group["hooks"][0] == keep and len(group["hooks"]) == 2
    assert shlex.split(group["hooks"][1]["command"]) == hook_argv()
    # A default install moves it to the local file; the other hook stays where it was.
    assert install(tmp_path).returncode == 0
    assert load(tmp_path / ".claude" / "settings.json")["hooks"]["PostToolUse"] == [
        {"matcher": "Read|Grep|Bash", "hooks": [keep]}
    ]
    [group] = load(tmp_path / ".claude" / "settings.local.json")["hooks"]["PostToolUse"]
    assert [shlex.split(h["command"]) for h in group["hooks"]] == [hook_argv()]


def test_print_shows_the_result_and_writes_nothing(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    done = install(project, "--print")
    assert done.returncode == 0 and "launch.py" in done.stdout and '"memtree"' in done.stdout
    assert sorted(os.listdir(tmp_path)) == ["project"] and os.listdir(project) == []


def test_a_broken_settings_file_is_an_error_naming_it_and_nothing_is_written(tmp_path):
    tmp_path = in_project(tmp_path)
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    done = install(tmp_path)
    assert done.returncode == 2 and "settings.json" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{not json"
    assert os.listdir(tmp_path / ".claude") == ["settings.json"] and not (tmp_path / ".mcp.json").exists()
    assert user_config(tmp_path) == {}


def test_hook_argv_uses_the_running_interpreter():
    assert hook_argv()[0] == os.path.abspath(sys.executable)


def test_the_launcher_without_its_package_still_exits_zero_silently(tmp_path):
    import shutil

    lone = tmp_path / "somewhere" / "hooks"
    lone.mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "hooks", "launch.py"), lone / "launch.py")
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(lone / "launch.py")],
        input=b'{"cwd": "/"}',
        capture_output=True,
        timeout=deadline(60),
    )
    assert (done.returncode, done.stdout) == (0, b"")
    # positive control: the real launcher imports the hook and handles the same input
    real = subprocess.run(
        hook_argv(),
        input=b"not json",
        capture_output=True,
        timeout=deadline(60),
        env={**os.environ, "MEMTREE_HOME": str(tmp_path / "home")},
        cwd=str(tmp_path),
    )
    assert (real.returncode, real.stdout) == (0, b"")
    assert os.listdir(tmp_path / "home")  # it ran far enough to resolve a store


def test_tools_registers_serve_tools_and_an_unknown_name_is_one_line_that_writes_nothing(tmp_path):
    project = in_project(tmp_path)
    bad = install(project, "--tools", "recall,forget")  # forget is served by name, never listed
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr == (
        "memtree install: unknown tool 'forget' in --tools; memtree's tools are read, grep, bash, recall\n"
    )
    assert os.listdir(project) == [] and user_config(project) == {}
    done = install(project, "--tools", "recall")
    assert done.returncode == 0, done.stderr
    server = local_server(project)
    assert server["args"][-3:] == ["serve", "--tools", "recall"]
    assert "without recall" not in done.stdout
    # Positive control: all four (the default) registers no flag at all.
    install(project, "--tools", "bash,recall,read,grep")
    _assert_our_server(local_server(project))
    # Without recall the previews' and brief's pointers lead nowhere: said once, and written all the same.
    no_recall = install(project, "--tools", "read,grep")
    assert no_recall.returncode == 0 and local_server(project)["args"][-2:] == ["--tools", "read,grep"]
    assert [line for line in no_recall.stdout.splitlines() if "without recall" in line] == [
        "note: without recall, the agent cannot fetch what previews and the session brief point to (whole outputs "
        "stay in the store; `memtree install --tools ...,recall` lists it)"
    ]
