"""The capture heartbeat: fixed-size per-session counts from real hook runs,
and the Stop hook's transcript comparison that reveals a hook never run."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from memtree.capture import heartbeat
from memtree.ops.install import hook_argv
from tests.support import deadline
from tests.support.hook_support import bash_payload, hook_env, run_hook


def _transcript(path, calls: list[tuple[str, str, bool]]) -> str:
    """A Claude Code transcript: (tool name, tool_use id, is_error) per call."""
    with open(path, "w") as f:
        f.write(json.dumps({"type": "user", "message": {"role": "user", "content": "do the thing"}}) + "\n")
        for name, tid, err in calls:
            f.write(
                json.dumps(
                    {
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "content": [
                                {"type": "text", "text": "calling"},
                                {"type": "tool_use", "id": tid, "name": name, "input": {}},
                            ],
                        },
                    }
                )
                + "\n"
            )
            f.write(
                json.dumps(
                    {
                        "type": "user",
                        "message": {
                            "role": "user",
                            "content": [{"type": "tool_result", "tool_use_id": tid, "content": "x", "is_error": err}],
                        },
                    }
                )
                + "\n"
            )
        f.write('{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "cut')  # still being written
    return str(path)


def test_the_state_file_stays_fixed_size_and_keeps_the_most_recent_sessions(tmp_path):
    store = str(tmp_path / "store")
    for i in range(heartbeat.SLOTS + 36):
        heartbeat.count(store, f"session-{i:03d}", "stored")
    assert os.path.getsize(heartbeat.path_for(store)) == heartbeat.FILE_BYTES
    kept = {s["session"] for s in heartbeat.read_all(store)}
    assert kept == {f"session-{i:03d}" for i in range(36, heartbeat.SLOTS + 36)}  # the least recently used went


@pytest.mark.parametrize("clock", ["frozen", "stepped back"])
def test_the_least_recently_used_slot_goes_when_runs_share_a_millisecond(tmp_path, monkeypatch, clock):
    """Hooks of parallel calls run in the same millisecond, and a clock can step
    back: which slot is least recently used must not depend on the clock."""
    store = str(tmp_path / "store")
    now = [1_000_000]
    monkeypatch.setattr(heartbeat, "_now_ms", lambda: now[0])
    for i in range(heartbeat.SLOTS):
        heartbeat.count(store, f"s{i}", "stored")
    if clock == "stepped back":
        now[0] -= 60_000
    heartbeat.count(store, "s0", "stored")  # used again: now the most recent
    for i in range(heartbeat.SLOTS, heartbeat.SLOTS + 3):
        heartbeat.count(store, f"s{i}", "stored")
    kept = [s["session"] for s in heartbeat.read_all(store)]
    assert set(kept) == {"s0", *(f"s{i}" for i in range(4, heartbeat.SLOTS + 3))}  # s1, s2, s3 went
    assert kept[:4] == [f"s{heartbeat.SLOTS + 2}", f"s{heartbeat.SLOTS + 1}", f"s{heartbeat.SLOTS}", "s0"]


def test_each_outcome_is_counted_for_its_own_session(tmp_path):
    store = str(tmp_path / "store")
    for outcome in ("stored", "stored", "spooled", "refused", "failed"):
        heartbeat.count(store, "a", outcome)
    heartbeat.count(store, "b", "stored")
    by = {s["session"]: s for s in heartbeat.read_all(store)}
    assert {k: by["a"][k] for k in ("seen", *heartbeat.OUTCOMES)} == {
        "seen": 5,
        "stored": 2,
        "spooled": 1,
        "refused": 1,
        "failed": 1,
    }
    assert (by["b"]["seen"], by["b"]["stored"]) == (1, 1)


def test_concurrent_hook_processes_lose_no_count(tmp_path):
    store = str(tmp_path / "store")
    code = (
        "import sys; from memtree.capture import heartbeat\n"
        "for _ in range(25): heartbeat.count(sys.argv[1], 'same', 'stored')"
    )
    procs = [subprocess.Popen([hook_argv()[0], "-c", code, store]) for _ in range(8)]
    assert [p.wait(timeout=deadline(60)) for p in procs] == [0] * 8
    [slot] = heartbeat.read_all(store)
    assert (slot["seen"], slot["stored"]) == (200, 200)


def test_transcript_ids_are_the_completed_read_grep_bash_calls_only(tmp_path):
    path = _transcript(
        tmp_path / "t.jsonl",
        [
            ("Read", "t1", False),
            ("Grep", "t2", False),
            ("Bash", "t3", False),
            ("Bash", "t4", True),  # failed or denied: may fire no capture hook
            ("Edit", "t5", False),
            ("mcp__memtree__search", "t6", False),
        ],
    )
    assert heartbeat.transcript_ids(path) == {"t1", "t2", "t3"}


def test_the_real_hooks_count_outcomes_and_the_stop_hook_finds_no_gap(system, tmp_path):
    sid = "sess-heartbeat"
    for i in range(3):
        run_hook(system, bash_payload(system, i, session=sid))
    denied = bash_payload(system, 9, session=sid)
    denied["tool_input"]["command"] = "printenv"
    run_hook(system, denied)
    slot = _stop_sessions(system, tmp_path, {sid: [("Bash", f"toolu_{i}", False) for i in (0, 1, 2, 9)]})[sid]
    assert {k: slot[k] for k in ("seen", "stored", "refused", "spooled", "failed", "transcript_calls", "gap")} == {
        "seen": 4,
        "stored": 3,
        "refused": 1,
        "spooled": 0,
        "failed": 0,
        "transcript_calls": 4,
        "gap": 0,
    }
    status = system.ctl("status")
    assert status.returncode == 0 and "no gap" in status.stdout, status.stdout
    assert "bytes stored per byte captured" in status.stdout and "budget storage.maxBytes 1024 MiB" in status.stdout


def test_a_session_whose_hook_never_ran_shows_the_gap_in_ctl_status_and_the_log(system, tmp_path):
    ran, missed = "sess-with-hook", "sess-no-hook"
    run_hook(system, bash_payload(system, 1, session=ran))  # positive control
    slots = _stop_sessions(
        system,
        tmp_path,
        {
            ran: [("Bash", "toolu_1", False)],
            missed: [("Read", "r1", False), ("Grep", "g1", False), ("Bash", "b1", False)],
        },
    )
    assert {sid for sid, s in slots.items() if s["gap"]} == {missed}
    assert (slots[missed]["gap"], slots[missed]["seen"]) == (3, 0)
    status = system.ctl("status")
    assert status.returncode == 0 and "GAP" in status.stdout and "3 of 3" in status.stdout, status.stdout
    log = _hook_log(system)
    assert "capture GAP" in log and missed[:12] in log and ran[:12] not in log


def test_the_stop_hook_with_an_unreadable_transcript_exits_zero_silently(system):
    done = _run_stop(system, {"session_id": "s", "transcript_path": "/nonexistent/t.jsonl", "cwd": system.project})
    assert done.stderr == b""
    assert heartbeat.read_all(system.paths.store_dir) == []


def _run_stop(system, payload: dict) -> subprocess.CompletedProcess:
    """The Stop hook exactly as `memtree install` registers it: silent, exit 0."""
    done = subprocess.run(
        [*hook_argv(), "stop"],
        input=json.dumps(payload).encode(),
        cwd=system.project,
        env=hook_env(system),
        capture_output=True,
        timeout=deadline(60),
    )
    assert (done.returncode, done.stdout) == (0, b""), done.stderr[-500:]
    return done


def _stop_sessions(system, tmp_path, sessions: dict[str, list]) -> dict[str, dict]:
    """The Stop hook once per session, each with a transcript of its ``calls``; the heartbeat slots after."""
    for sid, calls in sessions.items():
        transcript = _transcript(tmp_path / f"{sid}.jsonl", calls)
        _run_stop(
            system, {"session_id": sid, "transcript_path": transcript, "cwd": system.project, "hook_event_name": "Stop"}
        )
    return {s["session"]: s for s in heartbeat.read_all(system.paths.store_dir)}


def _hook_log(system) -> str:
    with open(os.path.join(system.paths.log_dir, "hook.log")) as f:
        return f.read()


def _failed_bash(system, tid: str, session: str) -> dict:
    """A PostToolUseFailure payload as Claude Code sends it for a Bash that exited 1."""
    return {
        "session_id": session,
        "transcript_path": "/dev/null",
        "cwd": system.project,
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "ls /nonexistent-dir", "description": "list it"},
        "tool_use_id": tid,
        "error": "Exit code 2\nls: cannot access '/nonexistent-dir': No such file or directory",
        "is_interrupt": False,
        "duration_ms": 12,
    }


def test_the_gap_is_found_by_tool_use_id_not_by_count(system, tmp_path):
    """A session whose successful Bash was never captured, but whose failed Bash
    was, has one hook run for one completed call: equal counts, and a gap."""
    lost, whole = "sess-lost-ok", "sess-whole"
    run_hook(system, _failed_bash(system, "toolu_fail_a", lost))  # the failed call's hook ran; the good one's did not
    ok = bash_payload(system, 7, session=whole)
    run_hook(system, ok)  # positive control: both calls captured
    run_hook(system, _failed_bash(system, "toolu_fail_b", whole))
    slots = _stop_sessions(
        system,
        tmp_path,
        {
            lost: [("Bash", "toolu_ok_a", False), ("Bash", "toolu_fail_a", True)],
            whole: [("Bash", ok["tool_use_id"], False), ("Bash", "toolu_fail_b", True)],
        },
    )
    assert {sid for sid, s in slots.items() if s["gap"]} == {lost}
    assert {k: slots[lost][k] for k in ("seen", "transcript_calls", "gap")} == {
        "seen": 1,
        "transcript_calls": 1,
        "gap": 1,
    }
    assert (slots[whole]["seen"], slots[whole]["gap"]) == (2, 0)
    log = _hook_log(system)
    assert "capture GAP" in log and lost[:12] in log and whole[:12] not in log


def test_a_lost_hook_run_of_a_call_leaves_a_gap_and_a_later_session_in_its_slot_starts_clean(tmp_path):
    store = str(tmp_path / "store")
    heartbeat.count(store, "a", "stored", "toolu_1")
    heartbeat.count(store, "a", "failed", "toolu_2")  # the hook ran but lost it: not accounted
    path = _transcript(tmp_path / "a.jsonl", [("Bash", "toolu_1", False), ("Read", "toolu_2", False)])
    assert heartbeat.record_check(store, "a", heartbeat.transcript_ids(path))["gap"] == 1
    for i in range(heartbeat.SLOTS + 1):  # "a" is the least recently used: its slot goes to a new session
        heartbeat.count(store, f"other-{i}", "stored", f"toolu_o{i}")
    assert "a" not in {s["session"] for s in heartbeat.read_all(store)}
    heartbeat.count(store, "a", "stored", "toolu_3")
    path = _transcript(tmp_path / "a2.jsonl", [("Bash", "toolu_3", False), ("Bash", "toolu_1", False)])
    # toolu_1's old record went with the evicted slot: it is a gap now, not a stale "captured"
    assert heartbeat.record_check(store, "a", heartbeat.transcript_ids(path))["gap"] == 1
    assert os.path.getsize(heartbeat.path_for(store)) == heartbeat.FILE_BYTES
