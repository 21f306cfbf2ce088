"""Claude Code PostToolUse / PostToolUseFailure hook: hand the payload to memtree.

Runs as ``<python> -I -S hooks/launch.py`` (what ``memtree install`` registers;
the launcher imports this module so it loads from cached bytecode) on every
Read, Grep and Bash, synchronously: Claude Code waits for it. Running this
file directly still works (earlier installs registered it). So it
imports only cheap standard-library modules (``-X importtime`` shows each),
sends one ``Ingest`` call to the writer's ingest socket with the stdlib ZMTP
client, and waits ``capture.hookTimeoutMs`` (default 100 ms; env
MEMTREE_HOOK_TIMEOUT_MS wins) plus 4 ms per KB of payload for the acknowledgement, which the writer sends
after commit. Without one, the payload is planned, filtered and redacted as
the writer would (memtree.capture.ingest.sanitize, the only place ``re`` is loaded)
and appended to the store's spool for the writer to drain later; a denied
command or path spools nothing. A config file the hook cannot read or parse
fails closed (memtree.capture.settings): nothing is sent or spooled.

Always exits 0. Writes stdout only to replace a large Read/Grep/Bash output
with the preview the writer built after committing it (the
``updatedToolOutput`` in the ack), or, when the capture was spooled, the same
preview built here from the redacted spool entry. Problems
go to ``<store>/logs/hook.log`` as one line without any payload content.
Every run counts its outcome in the capture heartbeat (memtree.capture.heartbeat).
"""

import os
import sys

# The ack wait grows with the payload (the writer redacts and commits it
# first; redaction alone ran at ~0.7 KB/ms on a loaded 2-core box, and a large
# output is only rewritten once acked): an 80 KB Read gets up to ~420 ms;
# capped so a hook never stalls the agent long.
ACK_MS_PER_KB = 4.0
ACK_MAX_EXTRA_MS = 2000
# Writer replies that mean "will never work": spooling would only fail again.
NO_RETRY = ("bad_request", "refused", "unknown_type")
# A spooled string longer than this is cut before redaction (Claude Code caps
# Bash at ~30K chars and Read by tokens, so real payloads stay far below it).
SPOOL_MAX_CHARS = 1_000_000


def _add_package_root() -> None:
    """Put the directory holding the ``memtree`` package on sys.path (-I adds nothing).

    Source checkout or editable install: <repo>/hooks/post_tool_use.py, the
    package is <repo>/memtree. Installed: site-packages/memtree/hooks/..., the
    package is site-packages/memtree.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.dirname(here), os.path.dirname(os.path.dirname(here))):
        if os.path.isfile(os.path.join(cand, "memtree", "__init__.py")):
            if cand not in sys.path:
                sys.path.insert(0, cand)
            return


def _log(log_dir: str, message: str) -> None:
    import time

    try:
        from memtree.paths import makedirs_private

        makedirs_private(log_dir)  # MEMTREE_HOME too, 0700
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} hook[{os.getpid()}]: {message}\n"
        fd = os.open(os.path.join(log_dir, "hook.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except (OSError, ImportError):
        pass  # nowhere to report; never fail the tool call


def _read_stdin() -> bytes:
    """Claude Code's payload as valid UTF-8 bytes (invalid bytes become U+FFFD:
    store what is readable rather than lose the capture)."""
    data = sys.stdin.buffer.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        data = data.decode("utf-8", "replace").encode("utf-8")
    return data


def _top_level_str(data: bytes, key: bytes, at_end: bool = False):
    """A top-level string field (``cwd``, ``session_id``) without a JSON parser
    (``json`` imports ``re``, ~20 ms here). Claude Code writes them near the
    start (``tool_use_id`` near the end: ``at_end``), unescaped; anything
    unusual (escapes, not found) returns None and the caller parses properly."""
    quoted = b'"' + key + b'"'
    at = data.rfind(quoted, max(0, len(data) - 4096)) if at_end else data.find(quoted, 0, 4096)
    if at < 0:
        return None
    rest = data[at + len(quoted) : at + 4096].lstrip()
    if not rest.startswith(b":"):
        return None
    rest = rest[1:].lstrip()
    if not rest.startswith(b'"'):
        return None
    end = rest.find(b'"', 1)
    raw = rest[1:end] if end > 0 else b"\\"
    return None if b"\\" in raw else raw.decode("utf-8", "replace")


def _parse(data: bytes):
    import json

    try:
        return json.loads(data)
    except ValueError:
        return None


def ack_wait_ms(base_ms: float, payload_bytes: int) -> float:
    return base_ms + min(ACK_MAX_EXTRA_MS, payload_bytes / 1024 * ACK_MS_PER_KB)


def _send(paths, data: bytes, timeout_ms: float, received_at: int):
    """The writer's reply as a memtree.protocol.IngestReply (``error``
    "unreachable" when none came in time)."""
    from memtree import protocol
    from memtree.capture import zmtp

    rid, frame = protocol.encode_ingest_raw(data, src="hook", received_at=received_at, rewrite=True)
    try:
        frames = zmtp.request(paths.endpoint(protocol.SOCK_INGEST), [frame], timeout_ms / 1000, meanwhile=_preload)
    except zmtp.ZmtpError as e:
        return protocol.IngestReply(error="unreachable", detail=f"{type(e).__name__}: {e}")
    return protocol.parse_ingest_reply(frames[-1], rid)


def _preload() -> None:
    """Import what the run needs after the ack (the heartbeat count) while the
    writer works on the capture, instead of after its reply."""
    try:
        import fcntl  # noqa: F401 - memtree.capture.heartbeat locks with it

        from memtree.capture import heartbeat  # noqa: F401
    except ImportError:
        pass  # _count reports it


def _spool(paths, payload: dict, sections: dict, received_at: int) -> str:
    """Plan, filter and redact as the writer would, then append; return what happened (for the log)."""
    from memtree.capture import ingest, spool

    def cap(v):
        if isinstance(v, str):
            return v[:SPOOL_MAX_CHARS]
        if isinstance(v, dict):
            return {k: cap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [cap(x) for x in v]
        return v

    clean, what = ingest.sanitize(cap(payload), sections, paths.project_root)
    if clean is None:
        return f"not spooled: {what}"
    from memtree.paths import makedirs_private

    makedirs_private(paths.store_dir)
    spool.append(paths.spool, clean, ts=received_at)
    _rewrite_spooled(clean, sections)
    return "spooled"


def _rewrite_spooled(clean: dict, sections: dict) -> None:
    """Spooled is stored safely too: show the preview of a large output, built
    here from the redacted entry (the writer has not given it an id yet)."""
    import json

    from memtree.capture import rewrite

    updated = rewrite.updated_output(clean, None, rewrite.settings(sections))
    if updated is not None:
        sys.stdout.write(json.dumps(rewrite.hook_output(updated)))


def run(state: dict) -> str:
    """Hand the payload over; return the outcome for the capture heartbeat
    (memtree.capture.heartbeat.OUTCOMES). ``state`` gets the store paths and session."""
    import time

    received_at = int(time.time() * 1000)  # when it happened, also for a spooled copy
    _add_package_root()
    data = _read_stdin()
    from memtree import paths as mpaths

    cwd = _top_level_str(data, b"cwd")
    state["session"] = _top_level_str(data, b"session_id")
    state["tool_use_id"] = _top_level_str(data, b"tool_use_id", at_end=True)  # the heartbeat compares calls by id
    payload = None
    if cwd is None or state["session"] is None:
        payload = _parse(data)
        if isinstance(payload, dict):
            cwd = payload.get("cwd") if cwd is None else cwd
            state["session"] = payload.get("session_id") if isinstance(payload.get("session_id"), str) else "?"
            state["tool_use_id"] = state["tool_use_id"] or payload.get("tool_use_id")
    # The same rule as `memtree serve`: CLAUDE_PROJECT_DIR first, then the payload's cwd.
    payload_cwd = cwd if isinstance(cwd, str) and os.path.isabs(cwd) else None
    paths = state["paths"] = mpaths.paths_for_cwd(mpaths.start_dir(fallback=payload_cwd))
    from memtree.capture import settings

    texts, sig = settings.config_texts(paths.project_root, mpaths.memtree_home())
    if not settings.usable(paths, texts, sig, lambda msg: _log(paths.log_dir, msg)):
        return "refused"  # fail closed: the user's deny rules are unknown, so nothing is stored
    # Anything, even malformed, goes to the writer: it answers bad_request and counts it.
    reply = _send(paths, data, ack_wait_ms(settings.hook_timeout_ms(texts), len(data)), received_at)
    if reply.ok:
        if reply.hook_output:  # stored and committed: now the agent may see the preview instead
            sys.stdout.buffer.write(reply.hook_output)
        return "refused" if reply.skipped else "stored"
    if reply.error in NO_RETRY:
        _log(paths.log_dir, f"writer refused the payload ({reply.error}); not spooled")
        return "refused" if reply.error == "refused" else "failed"
    why = reply.detail if reply.error == "unreachable" else f"writer error {reply.error}"
    payload = payload if payload is not None else _parse(data)
    if not isinstance(payload, dict):
        _log(paths.log_dir, f"no ack from the writer ({why}); stdin is not a JSON object, not spooled")
        return "failed"
    done = _spool(paths, payload, settings.sections(texts), received_at)
    _log(paths.log_dir, f"no ack from the writer ({why}); {done}")
    return "spooled" if done == "spooled" else "refused"


def _count(state: dict, outcome: str) -> None:
    """One heartbeat count; it must never fail the hook either."""
    if state.get("paths") is None:
        return  # failed before the store was known: only hook.log can tell
    try:
        from memtree.capture import heartbeat

        heartbeat.count(state["paths"].store_dir, state.get("session") or "?", outcome, state.get("tool_use_id"))
    except OSError as e:
        _log(state["paths"].log_dir, f"heartbeat not counted: {type(e).__name__}")


def main() -> int:
    state: dict = {}
    try:
        outcome = run(state)
    except BaseException as e:  # noqa: BLE001 - a hook never fails the tool call
        outcome = "failed"
        try:
            from memtree import paths as mpaths

            log_dir = state["paths"].log_dir if state.get("paths") else os.path.join(mpaths.memtree_home(), "logs")
            _log(log_dir, f"hook failed: {type(e).__name__}")
        except BaseException:  # noqa: BLE001
            pass
    try:
        _count(state, outcome)
    except BaseException:  # noqa: BLE001
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
