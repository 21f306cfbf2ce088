"""`memtree import` against a real running system (supervisor, writer, walkers), from the
transcript fixture: real CLI sessions plus secrets, forgotten content, a cut last line,
a line that is not JSON and a spilled Bash output."""

from __future__ import annotations

import datetime
import glob
import json
import os
import re

from memtree.ops import transcripts
from tests.fixtures.transcripts import extend
from tests.support import deadline, deadline_ms, wait_until
from tests.support import transcript_fixture as fx
from tests.support.actor_procs import rows

RAW_SECRETS = (
    "AKIAQWERTYUIOPASDF7K",
    "Zx9vB2mQ7rT4yU1iO8pL3kJ6hG5fD0sA2wE9qR7t",
    "sk-ant-api03-Qm7Xv2Lr9Tz4Kp8Wn3Bc6Hy1Jd5Fs0Ga",
    "hunter2-Lobster-Quartz-91",
)


def _setup(system, tmp_path, copies: int = 1):
    fx.write_files(system.project)
    config_dir = str(tmp_path / "claude")
    folder = fx.place(system.project, config_dir, copies)
    env = {**os.environ, **system.env, "CLAUDE_CONFIG_DIR": config_dir}
    return folder, env


def _summary(stdout: str) -> dict:
    line = stdout.strip().splitlines()[-1]
    out = {k: int(v) for v, k in re.findall(r"(\d+) (sessions|malformed)", line)}
    for key in ("stored", "would store", "refused", "marked stale", "spooled"):
        m = re.search(rf"{key} (\d+)", line)
        out[key] = int(m.group(1)) if m else 0
    m = re.search(r"skipped (\d+)(?: \(([^)]*)\))?", line)
    out["skipped"] = int(m.group(1))
    out["why"] = dict((r.rsplit(" ", 1)[0], int(r.rsplit(" ", 1)[1])) for r in (m.group(2) or "").split(", ") if r)
    return out


def _captures(system) -> dict[str, tuple]:
    """source_uri -> (kind, status, session_id, created_at, content) of every capture node."""
    return {
        r[0]: r[1:]
        for r in rows(
            system.paths,
            "SELECT source_uri, kind, status, session_id, created_at, content"
            " FROM nodes WHERE kind IN ('file_chunk', 'tool_output')",
        )
    }


def _ms(iso: str) -> int:
    return int(datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def test_folder_name_is_the_one_the_real_cli_wrote():
    with open(os.path.join(fx.FIXTURE, "real", "FOLDER")) as f:
        folder, path = f.read().split()
    assert transcripts.folder_name(path) == folder == "-tmp-mt-transcripts-zimg5zl7-proj"
    assert transcripts.folder_name("/a/b.c_d é") == "-a-b-c-d--"
    long = "/" + "x" * 250
    name = transcripts.folder_name(long)  # cut at 200, then the CLI's 32-bit hash in base 36
    assert name.startswith("-" + "x" * 199 + "-") and len(name) > 201 and name != transcripts.folder_name(long + "y")


def test_import_stores_each_call_once_dated_redacted_and_refuses_forgotten(system, tmp_path):
    folder, env = _setup(system, tmp_path)
    # A file changed since the sessions read it: its old text must not look current.
    with open(os.path.join(system.project, "src", "app.py"), "w") as f:
        f.write(fx.FILES["src/app.py"].replace("hello", "hi"))
    fx.forget_notes(system.paths, system.project, deadline_ms(10000))
    calls = fx.transcript_calls(folder)
    assert len(calls) == 15 and len({c["session"] for c in calls.values()}) == 5  # positive control on the fixture

    done = fx.run_import(system.project, env)
    assert done.returncode == 0, done.stderr
    assert folder in done.stdout and "Traceback" not in done.stderr
    first = _summary(done.stdout)
    assert first["sessions"] == 5 and first["malformed"] == 2, done.stdout  # the non-JSON line and the cut last line
    assert first["refused"] == 1 and first["marked stale"] == 1, done.stdout
    assert first["why"] == {"Read failed": 1, "same output stored within capture.dedupeWindowS": 3}, done.stdout
    assert first["stored"] == 10 and first["stored"] + first["skipped"] + first["refused"] == 15, done.stdout

    caps = _captures(system)
    real = os.path.realpath(system.project)
    # (the chunk ranges are the content's own lines: Claude Code's numLines also counts the empty line after a final newline)
    readme = caps[f"file://{real}/README.md#L1-2"]
    # dated when the session read it, under the session's id
    [(rid, when)] = [(k, c) for k, c in calls.items() if c["tool"] == "Read" and c["session"].startswith("3c3e")]
    assert readme[2] == calls[rid]["session"] and readme[3] == _ms(when["ts"]) and "heronbay" in readme[4]
    # every session stored something under its own id, but the one whose new calls were all
    # refused or already stored (its Grep and Bash repeat the first session's)
    assert {c[2] for c in caps.values() if c[1] != "forgotten"} == {c["session"] for c in calls.values()} - {
        fx.FORGOTTEN_SESSION
    }
    # the spilled output is stored from tool-results/, past what the transcript itself kept
    [seq] = [c for c in caps.values() if c[4].startswith("$ seq 1 40000")]
    assert "\n15000\n" in seq[4]
    with open(os.path.join(folder, f"{fx.SPILLED_SESSION}.jsonl")) as f:
        assert "\\n15000\\n" not in f.read()
    # the forgotten notes were refused, the other Read of that session kept
    assert not any("vault combination" in c[4] for c in caps.values())
    # the edited file's chunk is stale, the unchanged README's is not
    app = caps[f"file://{real}/src/app.py#L1-6"]
    assert app[1] == "stale" and readme[1] in ("pending", "live")
    # secrets: redacted before storing (the settings' harmless line is kept), none on disk
    settings = caps[f"file://{real}/{extend.SECRET_FILE}#L1-4"]
    assert "pelicanroad" in settings[4] and "[REDACTED" in settings[4]
    for path in glob.glob(os.path.join(system.paths.store_dir, "**", "*"), recursive=True):
        if os.path.isfile(path):
            with open(path, "rb") as f:
                data = f.read()
            assert not [s for s in RAW_SECRETS if s.encode() in data], path

    again = fx.run_import(system.project, env)
    assert again.returncode == 0, again.stderr
    second = _summary(again.stdout)
    assert (second["stored"], second["refused"]) == (0, 0), again.stdout
    assert second["why"]["already captured"] == 14, again.stdout
    assert set(_captures(system)) == set(caps)  # nothing new


def _recall_over_mcp(system, query: str) -> str:
    """memtree's recall tool, through a real `memtree serve` front over stdio (the MCP SDK client)."""
    from anyio.from_thread import start_blocking_portal
    from mcp import Client, StdioServerParameters

    from tests.support import COLD_START_S, PYTHON

    env = {**os.environ, **system.env}
    params = StdioServerParameters(command=PYTHON, args=["-m", "memtree.cli", "serve"], env=env, cwd=system.project)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=COLD_START_S * 3)) as client:
            res = portal.call(client.call_tool, "recall", {"query": query})
    assert not res.is_error, res
    return "\n".join(c.text for c in res.content if getattr(c, "type", "") == "text")


def test_a_fact_known_only_from_an_imported_session_is_found(system, tmp_path):
    from memtree.recall import search
    from memtree.store.db import open_read

    _folder, env = _setup(system, tmp_path)
    os.remove(os.path.join(system.project, "README.md"))  # the fact is nowhere on disk now
    before = _recall_over_mcp(system, "heronbay codename")  # negative control: before the import
    assert "0 result(s)" in before and "the codename is heronbay" not in before, before
    done = fx.run_import(system.project, env)
    assert done.returncode == 0, done.stderr
    conn = open_read(system.paths.db)
    try:  # the filter walker makes the imported capture live
        wait_until(lambda: search.keyword(conn, "heronbay", {}, 5), timeout=deadline(30), what="heronbay live")
    finally:
        conn.close()
    answer = _recall_over_mcp(system, "heronbay codename")
    assert "the codename is heronbay" in answer and "README.md" in answer, answer


def test_dry_run_stores_nothing_and_counts_what_would_be_stored(system, tmp_path):
    _folder, env = _setup(system, tmp_path)
    done = fx.run_import(system.project, env, "--dry-run")
    assert done.returncode == 0, done.stderr
    dry = _summary(done.stdout)
    assert dry["would store"] == 14 and dry["why"] == {"Read failed": 1}, done.stdout
    assert rows(system.paths, "SELECT count(*) FROM nodes") == [(0,)]
    since = fx.run_import(system.project, env, "--dry-run", "--since", "2099-01-01")
    assert _summary(since.stdout)["would store"] == 0 and "5 sessions before --since" in since.stdout
    bad = fx.run_import(system.project, env, "--since", "last tuesday")
    assert bad.returncode == 2 and "--since 'last tuesday'" in bad.stderr and "Traceback" not in bad.stderr


def test_without_a_writer_the_calls_are_spooled_and_stored_when_memtree_runs(system_factory, tmp_path):
    system = system_factory
    system.write_config()
    _folder, env = _setup(system, tmp_path)
    done = fx.run_import(system.project, env)
    assert done.returncode == 0, done.stderr
    assert _summary(done.stdout)["spooled"] == 14 and "no writer is running" in done.stderr
    with open(system.paths.spool, "rb") as f:
        spooled = f.read()
    assert b"heronbay" in spooled and not [s for s in RAW_SECRETS if s.encode() in spooled]
    system.serve()
    system.wait_running()
    wait_until(
        lambda: any("heronbay" in c[4] for c in _captures(system).values()),
        timeout=deadline(60),
        what="spooled import drained",
    )


def test_no_transcripts_says_where_it_looked(system, tmp_path):
    env = {**os.environ, **system.env, "CLAUDE_CONFIG_DIR": str(tmp_path / "none")}
    done = fx.run_import(system.project, env)
    assert done.returncode == 0 and "no Claude Code transcripts" in done.stdout
    assert transcripts.folder_name(os.path.realpath(system.project)) in done.stdout
    assert json.dumps(done.stdout)  # one plain line


def test_the_progress_bar_goes_to_a_terminal_only(system, tmp_path):
    import pty
    import subprocess

    from tests.support import PYTHON

    _folder, env = _setup(system, tmp_path)
    piped = fx.run_import(system.project, env, "--dry-run")
    assert "sessions," not in piped.stderr and "[" not in piped.stderr  # negative: stderr is a pipe here
    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [PYTHON, "-m", "memtree.cli", "import", "--dry-run"],
            cwd=system.project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            timeout=deadline(300),
        )
        os.close(slave)
        slave = None
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO once the writer side is closed and drained
                break
            if not chunk:
                break
            out += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert done.returncode == 0 and _summary(done.stdout)["would store"] == 14
    assert b"\r[##############################] 5/5 sessions, 15 calls" in out, out
