"""Claude Code FileChanged hook: a captured file changed, so its chunks stop being current now.

Runs as ``<python> -I -S hooks/launch.py file-changed`` (registered by
``memtree install``, no matcher). Claude Code 2.1.197 watches the paths a
SessionStart or FileChanged hook returned as ``watchPaths`` (chokidar, a write
counts once it has been stable 500 ms; verified in -p mode) and runs this with
``{file_path, event: change|add|unlink}``. The hook reads the store read-only,
sends the writer ``SetStatus(stale, expect=[live, pending])`` for the file's chunks
whose mtime no longer matches (the reason names the new mtime), and answers
with the refreshed ``watchPaths`` (memtree.hooks.session_start.watch_paths,
read before the change is applied: the file just edited stays watched, as it
is likely read again; 2.1.197 replaces its watch list with the answer).
No writer running: nothing is marked; the answer-time freshness check and
the staleness walker catch up, as they do for edits made with no session
running. It runs beside the agent, not inside a tool call; always exits 0.
"""

import os
import sys


def _stale_ids(conn, path: str) -> tuple[list[str], str]:
    from memtree.recall import freshness
    from memtree.store import watched

    chunks = watched.live_chunks(conn, path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return [c[0] for c in chunks], freshness.GONE
    except OSError:
        return [], ""
    ids = [cid for cid, mtime, created in chunks if freshness.mtime_changed(mtime, created, st)]
    return ids, f"{freshness.REASON} (FileChanged: mtime {st.st_mtime_ns})"


def run() -> None:
    import json

    from memtree import paths as mpaths
    from memtree import protocol
    from memtree.capture import zmtp
    from memtree.hooks import session_start

    payload = json.loads(sys.stdin.buffer.read() or b"{}")
    if not isinstance(payload, dict) or not isinstance(payload.get("file_path"), str):
        return
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and os.path.isabs(payload["cwd"]) else None
    paths = mpaths.paths_for_cwd(mpaths.start_dir(fallback=cwd))
    from memtree.store import recent_work

    conn = recent_work.open_snapshot(paths.db, session_start.BUSY_TIMEOUT_S) if os.path.isfile(paths.db) else None
    if conn is None:
        return
    try:
        ids, reason = _stale_ids(conn, os.path.normpath(payload["file_path"]))
        watch = session_start.watch_paths(conn, paths.project_root)
    finally:
        conn.close()
    if ids:
        rid, frame = protocol.encode_call(
            protocol.SetStatus(ids=ids, status="stale", reason=reason, expect=["live", "pending"]), src="file-changed"
        )
        try:
            zmtp.request(paths.endpoint(protocol.SOCK_WRITE), [frame], 2.0)
        except zmtp.ZmtpError:
            pass  # no writer: the freshness check and the staleness walker catch up
    if watch:
        from memtree.capture.claude_code import FILE_EVENT, hook_output

        sys.stdout.write(json.dumps(hook_output(FILE_EVENT, watchPaths=watch)))


def main() -> int:
    from memtree.hooks import failsafe

    return failsafe.run(run, "file-changed hook")


if __name__ == "__main__":
    sys.exit(main())
