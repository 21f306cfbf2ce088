"""`memtree install` as an operator runs it: merge, idempotence, --print, bad files."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

from memtree.install import hook_argv
from tests.support import PYTHON

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def install(project, *args) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "memtree.cli", "install", "--project", str(project), *args],
                          capture_output=True, text=True, timeout=60, cwd=REPO)


def load(path) -> dict:
    with open(path) as f:
        return json.load(f)


def test_install_writes_both_hooks_and_the_server_with_absolute_paths(tmp_path):
    done = install(tmp_path)
    assert done.returncode == 0, done.stderr
    settings = load(tmp_path / ".claude" / "settings.json")
    for event in ("PostToolUse", "PostToolUseFailure"):
        [group] = settings["hooks"][event]
        assert group["matcher"] == "Read|Grep|Bash"
        [hook] = group["hooks"]
        assert hook["type"] == "command" and hook["timeout"] == 10
        argv = shlex.split(hook["command"])
        assert argv == hook_argv() and argv[1:3] == ["-I", "-S"]
        assert os.path.isabs(argv[0]) and os.path.isfile(argv[3]) and argv[3].endswith(os.path.join("hooks", "launch.py"))
    [stop] = settings["hooks"]["Stop"]
    assert "matcher" not in stop and shlex.split(stop["hooks"][0]["command"]) == [*hook_argv(), "stop"]
    server = load(tmp_path / ".mcp.json")["mcpServers"]["memtree"]
    assert server["type"] == "stdio" and os.path.isabs(server["command"])
    assert server["args"] in (["serve"], ["-P", "-m", "memtree.cli", "serve"])


def test_the_installed_hook_command_runs_and_exits_zero_silently(tmp_path):
    install(tmp_path)
    cmd = load(tmp_path / ".claude" / "settings.json")["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    env = {**os.environ, "MEMTREE_HOME": str(tmp_path / "home")}
    done = subprocess.run(cmd, shell=True, input=b'{"cwd": "%s"}' % str(tmp_path).encode(), capture_output=True,
                          env=env, cwd=tmp_path, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"")


def test_install_keeps_other_hooks_and_servers_and_a_second_run_changes_nothing(tmp_path):
    (tmp_path / ".claude").mkdir()
    other_hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo other"}]}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"PostToolUse": [other_hook], "Stop": [{"hooks": [{"type": "command", "command": "x"}]}]},
         "permissions": {"allow": ["Bash"]}}))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "other-server"}}}))
    assert install(tmp_path).returncode == 0
    settings = load(tmp_path / ".claude" / "settings.json")
    assert settings["hooks"]["PostToolUse"][0] == other_hook and len(settings["hooks"]["PostToolUse"]) == 2
    assert settings["hooks"]["Stop"] and settings["permissions"] == {"allow": ["Bash"]}
    assert set(load(tmp_path / ".mcp.json")["mcpServers"]) == {"other", "memtree"}
    before = {p: (tmp_path / p).read_bytes() for p in (".claude/settings.json", ".mcp.json")}
    mtimes = {p: os.stat(tmp_path / p).st_mtime_ns for p in before}
    again = install(tmp_path)
    assert again.returncode == 0 and again.stdout.count("unchanged") == 2
    assert {p: (tmp_path / p).read_bytes() for p in before} == before
    assert {p: os.stat(tmp_path / p).st_mtime_ns for p in before} == mtimes


def test_an_earlier_memtree_hook_is_replaced_not_duplicated(tmp_path):
    (tmp_path / ".claude").mkdir()
    old = {"type": "command", "command": f"/old/python -I -S {REPO}/hooks/post_tool_use.py", "timeout": 5}
    keep = {"type": "command", "command": "echo keep"}
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(
        {"hooks": {"PostToolUse": [{"matcher": "Read|Grep|Bash", "hooks": [keep, old]}]}}))
    assert install(tmp_path).returncode == 0
    [group] = load(tmp_path / ".claude" / "settings.json")["hooks"]["PostToolUse"]
    assert group["hooks"][0] == keep and len(group["hooks"]) == 2
    assert shlex.split(group["hooks"][1]["command"]) == hook_argv()


def test_print_shows_the_result_and_writes_nothing(tmp_path):
    done = install(tmp_path, "--print")
    assert done.returncode == 0 and "launch.py" in done.stdout and '"memtree"' in done.stdout
    assert sorted(os.listdir(tmp_path)) == []


def test_a_broken_settings_file_is_an_error_naming_it_and_nothing_is_written(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    done = install(tmp_path)
    assert done.returncode == 2 and "settings.json" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{not json"
    assert not (tmp_path / ".mcp.json").exists()


def test_hook_argv_uses_the_running_interpreter():
    assert hook_argv()[0] == os.path.abspath(sys.executable)


def test_the_launcher_without_its_package_still_exits_zero_silently(tmp_path):
    import shutil

    lone = tmp_path / "somewhere" / "hooks"
    lone.mkdir(parents=True)
    shutil.copy(os.path.join(REPO, "hooks", "launch.py"), lone / "launch.py")
    done = subprocess.run([sys.executable, "-I", "-S", str(lone / "launch.py")], input=b'{"cwd": "/"}',
                          capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, b"")
    # positive control: the real launcher imports the hook and handles the same input
    real = subprocess.run(hook_argv(), input=b"not json", capture_output=True, timeout=60,
                          env={**os.environ, "MEMTREE_HOME": str(tmp_path / "home")}, cwd=str(tmp_path))
    assert (real.returncode, real.stdout) == (0, b"")
    assert os.listdir(tmp_path / "home")  # it ran far enough to resolve a store
