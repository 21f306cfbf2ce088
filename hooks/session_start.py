"""Claude Code SessionStart hook (``startup``, ``resume``, ``compact``): the session brief.

Runs as ``<python> -I -S hooks/launch.py session-start`` (what ``memtree
install`` registers). Reads the project's store read-only with the standard
library's sqlite3 (no supervisor, no writer, no socket), builds
memtree.recall.brief and prints it as ``additionalContext``. It must never
block a session from starting: a missing, locked or broken store means no
brief, and it always exits 0. Problems go to ``<store>/logs/hook.log``.
"""

import os
import sys

BUSY_TIMEOUT_S = 0.2  # a writer mid-checkpoint: wait this long, then no brief


def run() -> None:
    import json
    import time

    from memtree import paths as mpaths
    from memtree.recall import brief
    from memtree.store import recent_work

    try:
        payload = json.loads(sys.stdin.buffer.read() or b"{}")
    except ValueError:
        payload = {}
    payload = payload if isinstance(payload, dict) else {}
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and os.path.isabs(payload["cwd"]) else None
    sid = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    paths = mpaths.paths_for_cwd(mpaths.start_dir(fallback=cwd))
    if not os.path.isfile(paths.db):
        return
    conn = recent_work.open_snapshot(paths.db, BUSY_TIMEOUT_S)
    if conn is None:
        return
    try:
        text = brief.build(conn, int(time.time() * 1000), sid, root=paths.project_root)
    finally:
        conn.close()
    if text:
        from memtree.capture.claude_code import SESSION_EVENT, hook_output

        out = hook_output(SESSION_EVENT, additionalContext=text)
        sys.stdout.write(json.dumps(out))


def main() -> int:
    try:
        run()
    except BaseException as e:  # noqa: BLE001 - a hook never blocks the session
        try:
            from memtree import paths as mpaths
            from memtree.hooks.post_tool_use import _log

            _log(os.path.join(mpaths.memtree_home(), "logs"), f"session-start hook failed: {type(e).__name__}")
        except BaseException:  # noqa: BLE001
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
