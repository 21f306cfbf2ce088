"""The PostCompact and FileChanged hooks, as `memtree install` registers them, into a real
running system; the SessionStart brief after a compaction or a resume."""

from __future__ import annotations

import json
import os
import subprocess

from memtree.eval import payloads
from memtree.ops.install import hook_argv
from tests.support import COLD_START_S, deadline, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import bash_payload, hook_env, run_hook

SLOW = {"MEMTREE_HOOK_TIMEOUT_MS": "10000"}
SID = "sess-compacted"
SUMMARY = (
    "The user is fixing refund rounding in billing.py; charge_7 must round half-even. "
    "Deploy key AKIAQWERTYUIOPASDF7K was pasted by mistake."
)


def _hook(system, arg: str, payload: dict, **env) -> subprocess.CompletedProcess:
    done = subprocess.run(
        hook_argv() + [arg],
        input=json.dumps(payload).encode(),
        cwd=system.project,
        env=hook_env(system, **{**SLOW, **env}),
        capture_output=True,
        timeout=deadline(60),
    )
    assert done.returncode == 0 and done.stderr == b"", done.stderr[-400:]
    return done


def _read(system, path: str, session: str = SID) -> dict:
    with open(path) as f:
        content = f.read()
    return payloads.read(path, content, system.project, session, f"toolu_{os.path.basename(path)}")


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _event(system, name: str, transcript: str = "/dev/null", **fields) -> dict:
    """A hook payload for hook event ``name`` as Claude Code sends it in session SID."""
    return {"session_id": SID, "transcript_path": transcript, "cwd": system.project, "hook_event_name": name, **fields}


def _start(system, source: str, transcript: str = "/dev/null") -> dict:
    done = _hook(system, "session-start", _event(system, "SessionStart", transcript, source=source))
    return json.loads(done.stdout)["hookSpecificOutput"] if done.stdout else {}


def _post_compact(system, trigger: str) -> dict:
    """PostCompact, with SUMMARY as the compaction summary."""
    return _event(system, "PostCompact", trigger=trigger, compact_summary=SUMMARY)


def _file_changed(system, path: str) -> dict:
    """FileChanged, for an edit of ``path``."""
    return _event(system, "FileChanged", file_path=path, event="change")


def _settled(system) -> None:
    wait_until(
        lambda: rows(system.paths, "SELECT count(*) FROM nodes WHERE status = 'pending'") == [(0,)],
        timeout=COLD_START_S,
        what="the filter settled every capture",
    )


def test_the_compaction_summary_is_kept_redacted_and_leads_the_brief_after_compact_and_resume(system, tmp_path):
    billing = os.path.join(system.project, "billing.py")
    _write(billing, "".join(f"def charge_{i}(amount):\n    return amount * {i}\n\n" for i in range(30)))
    run_hook(system, bash_payload(system, 1, session=SID), **SLOW)  # before the Read's 30 symbol chunks
    run_hook(system, _read(system, billing), **SLOW)
    tax = os.path.join(system.project, "tax.py")
    _write(tax, "".join(f"def tax_{i}(amount):\n    return amount * {i} / 100\n\n" for i in range(30)))
    grep = {
        **bash_payload(system, 2, session=SID),
        "tool_name": "Grep",
        "tool_input": {"pattern": "tax_7", "path": tax, "output_mode": "content", "-n": True},
        "tool_response": {"mode": "content", "numFiles": 1, "filenames": [], "content": "22:def tax_7(amount):"},
        "tool_use_id": "toolu_grep_tax_7",
    }
    run_hook(system, grep, **SLOW)  # its hit widens to a chunk of tax.py, never read: listed as a search, not a read
    done = _hook(system, "post-compact", _post_compact(system, "auto"))
    assert done.stdout == b""  # PostCompact shows nothing and cannot block
    _settled(system)
    [(content, status, meta)] = rows(
        system.paths,
        "SELECT content, status, metadata FROM nodes WHERE kind = 'observation' AND session_id = ?",
        (SID,),
    )
    assert status == "live" and json.loads(meta)["origin"] == "compact" and json.loads(meta)["trigger"] == "auto"
    assert "charge_7 must round half-even" in content and "AKIAQWERTYUIOPASDF7K" not in content

    # resume: nothing in the transcript, so the store's copy leads
    resumed = _start(system, "resume")["additionalContext"]
    assert resumed.startswith('<memtree:recalled kind="compaction">') and "charge_7 must round half-even" in resumed
    assert "read billing.py L1-90" in resumed and "AKIAQWERTYUIOPASDF7K" not in resumed
    lead = resumed.split('kind="session-brief"')[0]
    assert lead.count("read billing.py") == 1 and lead.count("searched 'tax_7'") == 1 and "tax.py" not in lead, lead
    [(grep_chunk, grep_status)] = rows(
        system.paths,
        "SELECT source_uri, status FROM nodes WHERE kind = 'file_chunk' AND json_extract(metadata, '$.tool') = 'Grep'",
    )
    assert grep_chunk.startswith(f"file://{tax}#L") and grep_status == "live"  # positive control: it is stored
    # one line per Read in the compaction block: its 30 chunks do not use up the list of what was touched
    assert "ran `echo capture-1`" in resumed.split('kind="session-brief"')[0]
    assert resumed.index('kind="compaction"') < resumed.index('kind="session-brief"')

    # compact: SessionStart runs before PostCompact (2.1.197), so the newest summary is the transcript's
    transcript = str(tmp_path / "t.jsonl")
    with open(transcript, "w") as f:
        f.write(
            json.dumps(
                {
                    "type": "user",
                    "isCompactSummary": True,
                    "timestamp": "2026-12-01T10:00:00Z",
                    "message": {"role": "user", "content": "NEWER summary: refunds are done; next is tax."},
                }
            )
            + "\n"
            + '{"type":"user","isCompactSummary":true,"message":{"content":"cut'
        )
    compacted = _start(system, "compact", transcript)["additionalContext"]
    assert (
        "NEWER summary: refunds are done" in compacted
        and "charge_7 must round" not in compacted.split('kind="session-brief"')[0]
    )
    # startup: no compaction block
    assert 'kind="compaction"' not in _start(system, "startup").get("additionalContext", "")


def test_post_compact_without_a_writer_is_spooled_redacted(system_factory):
    system = system_factory
    system.write_config()
    _hook(system, "post-compact", _post_compact(system, "manual"), MEMTREE_HOOK_TIMEOUT_MS="200")
    with open(system.paths.spool, "rb") as f:
        spooled = f.read()
    assert b"charge_7 must round half-even" in spooled and b"AKIAQWERTYUIOPASDF7K" not in spooled


def test_file_changed_marks_the_changed_file_stale_at_once_and_returns_the_watch_list(system):
    a, b = os.path.join(system.project, "src", "a.py"), os.path.join(system.project, "src", "b.py")
    _write(a, "def alpha():\n    return 'a' * 40\n" * 20)
    _write(b, "def beta():\n    return 'b' * 40\n" * 20)
    run_hook(system, _read(system, a), **SLOW)
    run_hook(system, _read(system, b), **SLOW)
    _settled(system)
    real_a, real_b = os.path.realpath(a), os.path.realpath(b)
    watch = _start(system, "startup")["watchPaths"]
    assert sorted(watch) == sorted([real_a, real_b])

    def live():
        return {
            r[0]
            for r in rows(system.paths, "SELECT source_uri FROM nodes WHERE kind = 'file_chunk' AND status = 'live'")
        }

    assert {u.split("#")[0] for u in live()} == {f"file://{real_a}", f"file://{real_b}"}
    _write(a, "def alpha():\n    return 'edited'\n")
    st = os.stat(a)
    out = _hook(
        system,
        "file-changed",
        _file_changed(system, real_a),
    )
    # marked before the hook returned: the writer answered the SetStatus
    assert {u.split("#")[0] for u in live()} == {f"file://{real_b}"}
    [(reason,)] = rows(system.paths, "SELECT reason FROM audit WHERE action = 'status' AND to_status = 'stale'")
    assert reason.endswith(f"(FileChanged: mtime {st.st_mtime_ns})")
    # still watched: the list is read before the change is applied, and a file just edited is likely read again
    assert sorted(json.loads(out.stdout)["hookSpecificOutput"]["watchPaths"]) == sorted([real_a, real_b])
    # an event for a file whose chunks still match changes nothing
    _hook(
        system,
        "file-changed",
        _file_changed(system, real_b),
    )
    assert {u.split("#")[0] for u in live()} == {f"file://{real_b}"}
