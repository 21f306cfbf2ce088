"""Claude Code Stop / SessionEnd hook: check the capture heartbeat.

Takes the ids of the Read/Grep/Bash calls completed in the session's
transcript and compares them with the calls whose capture-hook run memtree
accounted for
(memtree.capture.heartbeat.record_check). A gap goes to ``<store>/logs/hook.log``
and the heartbeat file, where ``memtree ctl status`` and ``memtree doctor``
show it. It never blocks the agent: it always exits 0 and never writes
stdout (a Stop hook's stdout could keep the agent going).
"""

import os
import sys


def run() -> None:
    import json

    from memtree import paths as mpaths
    from memtree.capture import heartbeat
    from memtree.hooks.post_tool_use import _log

    payload = json.loads(sys.stdin.buffer.read() or b"{}")
    if not isinstance(payload, dict):
        return
    sid, transcript = payload.get("session_id"), payload.get("transcript_path")
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and os.path.isabs(payload["cwd"]) else None
    if not isinstance(sid, str) or not isinstance(transcript, str):
        return
    paths = mpaths.paths_for_cwd(mpaths.start_dir(fallback=cwd))
    try:
        calls = heartbeat.transcript_ids(transcript)
    except OSError as e:
        _log(paths.log_dir, f"capture check: cannot read the transcript of session {sid[:12]}: {e.strerror}")
        return
    slot = heartbeat.record_check(paths.store_dir, sid, calls)
    if slot["gap"]:
        _log(paths.log_dir, "capture GAP: " + heartbeat.problems([slot])[0])


def main() -> int:
    from memtree.hooks import failsafe

    return failsafe.run(run, "stop hook")


if __name__ == "__main__":
    sys.exit(main())
