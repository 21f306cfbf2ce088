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

DEFAULT_TIMEOUT_MS = 100
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


def _timeout_ms(texts: list[str]) -> float:
    """MEMTREE_HOOK_TIMEOUT_MS, else capture.hookTimeoutMs (project over global),
    found without a JSON parser (the key name is unique in the schema)."""
    candidates = [os.environ.get("MEMTREE_HOOK_TIMEOUT_MS")]
    for text in reversed([t for t in texts if t]):
        at = text.find('"hookTimeoutMs"')
        if at >= 0:
            rest = text[at + len('"hookTimeoutMs"'):].lstrip()
            if rest.startswith(":"):
                rest = rest[1:].lstrip()
                n = 0
                while n < len(rest) and (rest[n].isdigit() or rest[n] == "."):
                    n += 1
                candidates.append(rest[:n])
    for value in candidates:
        try:
            if value and float(value) > 0:
                return float(value)
        except ValueError:
            pass
    return DEFAULT_TIMEOUT_MS


def _settings(texts: list[str]) -> dict:
    """capture/bash/path sections merged (project over global); spool path only.
    The files were checked by settings.usable before."""
    import json

    merged: dict = {}
    for text in [t for t in texts if t]:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict):
            for section in ("capture", "bash", "path"):
                if isinstance(data.get(section), dict):
                    merged.setdefault(section, {}).update(data[section])
    return merged


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
    rest = data[at + len(quoted):at + 4096].lstrip()
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
    """The writer's reply: (ok, error code or None, why-not text or, when ok, the
    hook output to print: a replacement of a large output, memtree.capture.rewrite).
    An ok reply whose plan was skipped by the gate has code "skipped"."""
    from memtree import protocol
    from memtree.capture import zmtp

    rid, frame = protocol.encode_ingest_raw(data, src="hook", received_at=received_at, rewrite=True)
    try:
        frames = zmtp.request(paths.endpoint(protocol.SOCK_INGEST), [frame], timeout_ms / 1000,
                              meanwhile=_preload)
    except zmtp.ZmtpError as e:
        return False, None, f"{type(e).__name__}: {e}"
    if protocol.reply_is_ok(frames[-1], rid):
        return (True, (None if b'"skipped":null' in frames[-1] else "skipped"),
                protocol.reply_hook_output(frames[-1], rid))
    try:  # not the plain ok reply: decode it properly (slow path)
        env = protocol.decode(frames[-1])
    except protocol.ProtocolError as e:
        return False, None, f"undecodable reply ({e.code})"
    if env.kind != "reply" or env.id != rid:
        return False, None, "reply to another request"
    if env.body.get("ok"):
        skipped = (env.body.get("result") or {}).get("skipped") if isinstance(env.body.get("result"), dict) else None
        return True, ("skipped" if skipped else None), None
    return False, str((env.body.get("error") or {}).get("code", "?")), "writer error"


def _preload() -> None:
    """Import what the run needs after the ack (the heartbeat count) while the
    writer works on the capture, instead of after its reply."""
    try:
        import fcntl  # noqa: F401 - memtree.capture.heartbeat locks with it

        from memtree.capture import heartbeat  # noqa: F401
    except ImportError:
        pass  # _count reports it


def _spool(paths, payload: dict, settings: dict, received_at: int) -> str:
    """Plan, filter and redact as the writer would, then append; return what happened (for the log)."""
    from memtree.capture import ingest
    from memtree.capture import spool

    def cap(v):
        if isinstance(v, str):
            return v[:SPOOL_MAX_CHARS]
        if isinstance(v, dict):
            return {k: cap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [cap(x) for x in v]
        return v

    clean, what = ingest.sanitize(cap(payload), settings, paths.project_root)
    if clean is None:
        return f"not spooled: {what}"
    from memtree.paths import makedirs_private

    makedirs_private(paths.store_dir)
    spool.append(paths.spool, clean, ts=received_at)
    _rewrite_spooled(clean, settings)
    return "spooled"


def _rewrite_spooled(clean: dict, settings: dict) -> None:
    """Spooled is stored safely too: show the preview of a large output, built
    here from the redacted entry (the writer has not given it an id yet)."""
    import json

    from memtree.capture import rewrite

    updated = rewrite.updated_output(clean, None, rewrite.settings({"capture": settings.get("capture") or {}}))
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
    ok, code, why = _send(paths, data, ack_wait_ms(_timeout_ms(texts), len(data)), received_at)
    if ok:
        if why:  # stored and committed: now the agent may see the preview instead
            sys.stdout.buffer.write(why)
        return "refused" if code == "skipped" else "stored"
    if code in NO_RETRY:
        _log(paths.log_dir, f"writer refused the payload ({code}); not spooled")
        return "refused" if code == "refused" else "failed"
    if code:
        why = f"writer error {code}"
    payload = payload if payload is not None else _parse(data)
    if not isinstance(payload, dict):
        _log(paths.log_dir, f"no ack from the writer ({why}); stdin is not a JSON object, not spooled")
        return "failed"
    done = _spool(paths, payload, _settings(texts), received_at)
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
