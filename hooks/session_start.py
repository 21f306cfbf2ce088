"""Claude Code SessionStart hook (``startup``, ``resume``, ``compact``): the session brief.

Runs as ``<python> -I -S hooks/launch.py session-start`` (what ``memtree
install`` registers). Reads the project's store read-only with the standard
library's sqlite3 (no supervisor, no writer, no socket), builds
memtree.recall.brief and prints it as ``additionalContext``. It must never
block a session from starting: a missing, locked or broken store means no
brief, and it always exits 0. Problems go to ``<store>/logs/hook.log``.

The first session memtree sees in a project also says, in one line shown to
the user (``systemMessage``), how many earlier transcripts Claude Code kept
and the command that imports them; memtree never imports on its own. A
marker in the store folder keeps it to once.
"""

import os
import sys

BUSY_TIMEOUT_S = 0.2  # a writer mid-checkpoint: wait this long, then no brief


WATCH_MAX = 200  # watchPaths: the files of the newest live chunks, at most this many

OFFERED = "import-offered"  # in the store folder: the import was offered once


def watch_paths(conn, root: str) -> list[str]:
    """The files Claude Code should watch for the FileChanged hook: those memtree holds live
    chunks of (newest first, bounded), that still exist (a watch on a missing path is useless)."""
    from memtree.store import watched

    return [p for p in watched.live_files(conn, root, WATCH_MAX) if os.path.isfile(p)]


def _import_offer(paths, sid) -> str | None:
    """The one-line import notice, the first time only (memtree.ops.transcripts.notice)."""
    marker = os.path.join(paths.store_dir, OFFERED)
    if os.path.exists(marker):
        return None
    from memtree.ops import transcripts
    from memtree.paths import makedirs_private

    dirs = list(dict.fromkeys([paths.project_root, os.environ.get("CLAUDE_PROJECT_DIR") or paths.project_root]))
    text = transcripts.notice(dirs, transcripts.import_command(), exclude_session=sid)
    makedirs_private(paths.store_dir)
    with open(marker, "w") as f:
        f.write(text + "\n")
    return text


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
    offer = _import_offer(paths, sid) if payload.get("source", "startup") == "startup" else None
    now = int(time.time() * 1000)
    text, watch, first = None, [], None
    conn = recent_work.open_snapshot(paths.db, BUSY_TIMEOUT_S) if os.path.isfile(paths.db) else None
    try:
        if payload.get("source") in ("compact", "resume"):
            from memtree.recall import compaction

            first = compaction.lead(
                conn,
                sid,
                payload.get("transcript_path"),
                now,
                root=paths.project_root,
                compacting=payload.get("source") == "compact",
            )
        if conn is not None:
            text = brief.build(conn, now, sid, root=paths.project_root)
            watch = watch_paths(conn, paths.project_root)
    finally:
        if conn is not None:
            conn.close()
    text = "\n".join(t for t in (first, text) if t) or None
    out, specific = {}, {}
    if offer:
        out["systemMessage"] = offer
    if watch:
        specific["watchPaths"] = watch
    if text:
        specific["additionalContext"] = text
    if specific:
        from memtree.capture.claude_code import SESSION_EVENT, hook_output

        out.update(hook_output(SESSION_EVENT, **specific))
    if out:
        sys.stdout.write(json.dumps(out))


def main() -> int:
    from memtree.hooks import failsafe

    return failsafe.run(run, "session-start hook")


if __name__ == "__main__":
    sys.exit(main())
