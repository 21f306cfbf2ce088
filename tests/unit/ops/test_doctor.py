"""`memtree doctor` as an operator runs it, against real installs, a real
running system, a real MCP server spawn and real store damage."""

from __future__ import annotations

import json
import os
import stat
import subprocess

import apsw

from tests.support import PYTHON, deadline
from tests.support.hook_support import bash_payload, run_hook


def doctor(system, *args) -> tuple[int, dict]:
    done = subprocess.run(
        [PYTHON, "-m", "memtree.cli", "doctor", "--json", *args],
        cwd=system.project,
        env={**{k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}, **system.env, "HOME": system.home},
        capture_output=True,
        text=True,
        timeout=deadline(180),
    )
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    assert report["healthy"] == (done.returncode == 0), (done.returncode, report)
    return done.returncode, {r["check"]: r for r in report["checks"]}


def failing(checks: dict) -> set[str]:
    return {name for name, r in checks.items() if r["status"] == "FAIL"}


def install(system) -> None:
    # Claude Code's user config (where the server goes) in the test's home, as doctor reads it.
    done = subprocess.run(
        [PYTHON, "-m", "memtree.cli", "install"],
        cwd=system.project,
        env={**{k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}, **system.env, "HOME": system.home},
        capture_output=True,
        text=True,
        timeout=deadline(60),
    )
    assert done.returncode == 0, done.stderr


def test_an_installed_running_capturing_project_is_healthy_then_damage_is_found_and_fixed(system):
    install(system)
    run_hook(system, bash_payload(system, 1, extra="doctorword"))
    code, checks = doctor(system)
    assert code == 0 and failing(checks) == set(), checks
    assert checks["mcp"]["message"].endswith(" s; lists read, grep, bash, recall"), checks["mcp"]
    assert "answered initialize" in checks["mcp"]["message"]
    assert checks["actors"]["status"] == "ok" and checks["capture"]["status"] == "ok"

    # Damage: a searchable node drops out of the FTS index; the store file goes world-readable.
    db = apsw.Connection(system.paths.db)
    db.set_busy_timeout(5000)
    rowid, content, uri = db.execute(
        "SELECT rowid, content, source_uri FROM nodes WHERE content LIKE '%doctorword%'"
    ).fetchone()
    db.execute(
        "INSERT INTO nodes_fts(nodes_fts, rowid, content, source_uri) VALUES('delete', ?, ?, ?)", (rowid, content, uri)
    )
    db.close()
    os.chmod(system.paths.db, 0o644)
    code, checks = doctor(system)
    assert code == 1 and failing(checks) == {"store", "permissions"}, checks
    assert (
        "1 searchable nodes missing from the FTS index" in checks["store"]["message"]
        and "--fix" in checks["store"]["fix"]
    )
    assert "store.db is 0o644" in checks["permissions"]["message"]

    code, checks = doctor(system, "--fix")
    assert code == 0 and failing(checks) == set(), checks
    assert checks["store"]["message"].startswith("fixed (FTS rebuilt")
    assert stat.S_IMODE(os.stat(system.paths.db).st_mode) == 0o600
    db = apsw.Connection(system.paths.db, flags=apsw.SQLITE_OPEN_READONLY)
    assert db.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH 'doctorword'").fetchone()[0] == 1
    db.close()


def test_a_project_without_memtree_fails_each_missing_piece_with_a_fix(system_factory, tmp_path):
    s = system_factory
    code, checks = doctor(s)
    assert code == 1
    assert failing(checks) == {"hook.PostToolUse", "hook.PostToolUseFailure", "hook.Stop", "mcp"}, checks
    assert all(checks[c]["fix"] for c in failing(checks))
    assert checks["actors"]["status"] == "skip" and checks["config"]["status"] == "ok"

    # A hook whose interpreter is gone, and a session whose captures were never made.
    os.makedirs(os.path.join(s.project, ".claude"), exist_ok=True)
    with open(os.path.join(s.project, ".claude", "settings.json"), "w") as f:
        json.dump(
            {
                "hooks": {
                    "PostToolUse": [
                        {
                            "matcher": "Read|Grep|Bash",
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": f"/nonexistent/python -I -S {s.project}/memtree/hooks/launch.py",
                                }
                            ],
                        }
                    ]
                }
            },
            f,
        )
    os.makedirs(os.path.join(s.project, "memtree", "hooks"))
    open(os.path.join(s.project, "memtree", "__init__.py"), "w").close()
    from memtree.capture import heartbeat

    heartbeat.record_check(s.paths.store_dir, "sess-lost", {"r1", "g1", "b1", "b2"})
    _, checks = doctor(s)
    assert "interpreter /nonexistent/python is missing" in checks["hook.PostToolUse"]["message"]
    assert checks["capture"]["status"] == "FAIL" and "4 of 4" in checks["capture"]["message"]

    # A server entry whose --tools names no tool of memtree's: said before anything is spawned.
    with open(os.path.join(s.project, ".mcp.json"), "w") as f:
        json.dump(
            {
                "mcpServers": {
                    "memtree": {
                        "type": "stdio",
                        "command": PYTHON,
                        "args": ["-m", "memtree.cli", "serve", "--tools", "recal"],
                    }
                }
            },
            f,
        )
    _, checks = doctor(s)
    assert checks["mcp"]["status"] == "FAIL" and checks["mcp"]["message"].endswith(
        "unknown tool 'recal' in --tools; memtree's tools are read, grep, bash, recall"
    ), checks["mcp"]
    assert "--tools" in checks["mcp"]["fix"]


def test_bad_config_is_one_line_naming_the_key(system_factory):
    s = system_factory
    with open(os.path.join(s.project, ".memtree", "config.json"), "w") as f:
        json.dump({"storage": {"maxBytes": "lots"}}, f)
    _, checks = doctor(s)
    assert checks["config"]["status"] == "FAIL" and "storage.maxBytes" in checks["config"]["message"]
    done = subprocess.run(
        [PYTHON, "-m", "memtree.cli", "doctor", "--project", "/nonexistent"],
        capture_output=True,
        text=True,
        timeout=deadline(60),
    )
    assert done.returncode == 2 and done.stderr.strip() == "memtree doctor: --project /nonexistent: not a directory"


def test_an_actor_is_busy_only_while_it_still_spins_not_for_work_just_done():
    """The status rate covers the last second (a walker embedding a fresh capture):
    doctor measures a suspect again, so only the one still spinning fails."""
    from memtree.ops.doctor import _still_busy

    spinner = subprocess.Popen([PYTHON, "-c", "while True: pass"], start_new_session=True)
    idle = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        actors = [
            {"name": "walker.spin", "pid": spinner.pid, "cpu": 90.0},
            {"name": "walker.done", "pid": idle.pid, "cpu": 40.0},  # busy a moment ago, idle now
            {"name": "walker.calm", "pid": idle.pid, "cpu": 0.5},  # under the bound: not measured again
        ]
        assert [a["name"] for a, _ in _still_busy(actors)] == ["walker.spin"]
    finally:
        for p in (spinner, idle):
            p.kill()
            p.wait(timeout=deadline(10))
