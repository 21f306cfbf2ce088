"""Claude Code PostCompact hook: keep the compaction summary as a node of the session.

Runs as ``<python> -I -S hooks/launch.py post-compact`` (registered by
``memtree install``). The payload (2.1.197: ``trigger``, ``compact_summary``;
it fires after the SessionStart ``compact`` hook) goes to the writer like a
capture: one ``Ingest`` over the ingest socket, planned by
memtree.capture.ingest (an ``observation`` under the session root), redacted
by the writer's gate; without an ack it is redacted and spooled. PostCompact
cannot block compaction and prints nothing; the ack wait is the capture
hook's, so it is bounded. Always exits 0; problems go to ``logs/hook.log``.
It is not counted in the capture heartbeat (the Stop check compares
Read/Grep/Bash calls only).
"""

import os
import sys


def run() -> str:
    import time

    from memtree.hooks import post_tool_use as capture

    received_at = int(time.time() * 1000)
    data = capture._read_stdin()
    payload = capture._parse(data)
    if not isinstance(payload, dict):
        return "not a JSON object"
    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) and os.path.isabs(payload["cwd"]) else None
    from memtree import paths as mpaths
    from memtree.capture import settings

    paths = mpaths.paths_for_cwd(mpaths.start_dir(fallback=cwd))
    texts, sig = settings.config_texts(paths.project_root, mpaths.memtree_home())
    if not settings.usable(paths, texts, sig, lambda msg: capture._log(paths.log_dir, msg)):
        return "config unreadable"
    reply = capture._send(paths, data, capture.ack_wait_ms(settings.hook_timeout_ms(texts), len(data)), received_at)
    if reply.ok or reply.error in capture.NO_RETRY:
        return "stored" if reply.ok else f"writer refused ({reply.error})"
    done = capture._spool(paths, payload, settings.sections(texts), received_at)
    capture._log(paths.log_dir, f"compaction summary: no ack from the writer ({reply.detail or reply.error}); {done}")
    return done


def main() -> int:
    from memtree.hooks import failsafe

    return failsafe.run(run, "post-compact hook")


if __name__ == "__main__":
    sys.exit(main())
