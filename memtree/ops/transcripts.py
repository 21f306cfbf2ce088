"""Claude Code's session transcripts for a project, read as hook payloads.

Where they are (read from the 2.1.197 binary, checked against the folders the
real CLI wrote under the harness): ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``)
``/projects/<name>/<session id>.jsonl``, where ``<name>`` is the project's real
path with every character outside ``[a-zA-Z0-9]`` replaced by ``-``; a name
longer than 200 characters is cut to 200 and followed by ``-<hash>``. A Bash
output over 30,000 characters is cut in the transcript and kept whole in
``<name>/<session id>/tool-results/<id>.txt`` (``persistedOutputPath``).

Each tool call is an assistant ``tool_use`` block followed by a user entry
whose ``tool_result`` block names it and whose ``toolUseResult`` holds what a
PostToolUse hook gets as ``tool_response`` (for a failure, the result text is
the hook's ``error``). ``calls()`` rebuilds that payload, so the import goes
through the hook's own ingest plan. Lines are read one at a time, bounded; a
line that is not JSON (a session still writing it, a cut file) is counted and
skipped.

Standard library only (the SessionStart hook and the plugin's bootstrap count transcripts with it).
"""

from __future__ import annotations

import datetime
import json
import os
import re

from memtree.capture.claude_code import CAPTURED_TOOLS as TOOLS  # stdlib constants: the SessionStart hook loads this

NAME_MAX = 200
MAX_LINE_BYTES = 64 * 1024 * 1024  # a longer line is skipped unread, as the spool does
SPILL_MAX_BYTES = 16 * 1024 * 1024  # a spilled output is read up to this (capture.maxBytes cuts it again)
PENDING_MAX = 10_000  # tool_use blocks waiting for their result (parallel calls are a handful)
# memtree's own preview of a large output (memtree.capture.preview): when Claude Code accepts it, the
# transcript keeps the preview, not the output; the store has the original from the live capture.
_PREVIEW_LINE = re.compile(r"(?m)^\[memtree\] .*(?:memtree node |kept by memtree|whole: )")


def config_dir() -> str:
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return env if env else os.path.join(os.path.expanduser("~"), ".claude")


def _java_hash(text: str) -> int:
    """Claude Code's 32-bit string hash (over UTF-16 code units), for long folder names."""
    h = 0
    data = text.encode("utf-16-le")
    for i in range(0, len(data), 2):
        h = (h * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if not n:
            return out


def folder_name(project_path: str) -> str:
    """The folder name Claude Code gives a project path."""
    name = "".join(c if c.isascii() and c.isalnum() else "-" for c in project_path)
    if len(name) <= NAME_MAX:
        return name
    return f"{name[:NAME_MAX]}-{_base36(abs(_java_hash(project_path)))}"


def project_folders(project_dirs: list[str], base: str | None = None) -> list[str]:
    """The transcript folders that exist for these project paths (real paths, as Claude Code
    resolves them; a long name also matches its cut prefix, as the CLI's own lookup does)."""
    base = base or os.path.join(config_dir(), "projects")
    out: list[str] = []
    for path in project_dirs:
        real = os.path.realpath(path)
        name = folder_name(real)
        cands = [os.path.join(base, name)]
        if len(name) > NAME_MAX:
            try:
                cands += sorted(os.path.join(base, n) for n in os.listdir(base) if n.startswith(name[:NAME_MAX] + "-"))
            except OSError:
                pass
        out += [c for c in cands if os.path.isdir(c) and c not in out]
    return out


def session_files(folder: str) -> list[str]:
    """The session transcripts in a project folder (``<id>.jsonl``), oldest first."""
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".jsonl")]
    except OSError:
        return []
    files = [os.path.join(folder, n) for n in names if os.path.isfile(os.path.join(folder, n))]
    return sorted(files, key=lambda p: (os.stat(p).st_mtime_ns, p))


def parse_ts(value) -> int | None:
    """Epoch ms of a transcript timestamp (ISO 8601, ``Z``), or None."""
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=datetime.UTC)
    return int(dt.timestamp() * 1000)


class Session:
    """What one transcript holds: its id, when it began and ended, and counts."""

    def __init__(self, path: str):
        self.path = path
        self.session_id = os.path.basename(path)[: -len(".jsonl")]
        self.started_ms: int | None = None
        self.ended_ms: int | None = None
        self.lines = 0
        self.malformed = 0
        self.unanswered = 0  # tool_use blocks without a result (cut off, interrupted)

    def seen(self, ts: int | None) -> None:
        if ts is not None:
            self.started_ms = ts if self.started_ms is None else min(self.started_ms, ts)
            self.ended_ms = ts if self.ended_ms is None else max(self.ended_ms, ts)


def _lines(path: str, session: Session):
    """Each line as a dict; malformed or oversized lines counted, never raised."""
    with open(path, "rb") as f:
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):  # skip the rest of it unread
                    raw = f.readline(1 << 20)
                session.malformed += 1
                continue
            if not raw.strip():
                continue
            session.lines += 1
            try:
                entry = json.loads(raw)
            except ValueError:  # a line the session was still writing, or damage
                session.malformed += 1
                continue
            if isinstance(entry, dict):
                yield entry
            else:
                session.malformed += 1


def _text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _spilled(response: dict, folder: str, sid: str) -> str | None:
    """The whole output a cut Bash result points at: the path as written, else the same
    file name under the session's own tool-results/ (the folder was moved or copied)."""
    path = response.get("persistedOutputPath")
    if not isinstance(path, str) or not path:
        return None
    for cand in (path, os.path.join(folder, sid, "tool-results", os.path.basename(path))):
        try:
            with open(cand, "rb") as f:
                return f.read(SPILL_MAX_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
    return None


def _is_preview(response) -> bool:
    """Whether a result is memtree's preview of a large output rather than the output."""
    if not isinstance(response, dict):
        return False
    file = response.get("file") if isinstance(response.get("file"), dict) else {}
    texts = (file.get("content"), response.get("content"), response.get("stdout"))
    return any(isinstance(t, str) and "[memtree] " in t and _PREVIEW_LINE.search(t) for t in texts)


class Call:
    __slots__ = ("payload", "received_at", "tool_use_id", "rewritten", "spilled")

    def __init__(self, payload: dict, received_at: int, rewritten: bool, spilled: bool):
        self.payload, self.received_at = payload, received_at
        self.tool_use_id = payload["tool_use_id"]
        self.rewritten, self.spilled = rewritten, spilled


def calls(session: Session, since_ms: int | None = None, tools=TOOLS):
    """The session's Read/Grep/Bash calls as PostToolUse(Failure) payloads (``Call``),
    in transcript order, each dated by its result's timestamp."""
    folder = os.path.dirname(session.path)
    pending: dict[str, tuple[str, dict]] = {}
    for entry in _lines(session.path, session):
        ts = parse_ts(entry.get("timestamp"))
        session.seen(ts)
        msg = entry.get("message")
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") in tools and isinstance(block.get("id"), str):
                if len(pending) < PENDING_MAX and isinstance(block.get("input"), dict):
                    pending[block["id"]] = (block["name"], block["input"])
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in pending:
                tool, tool_input = pending.pop(block["tool_use_id"])
                if since_ms is not None and (ts is None or ts < since_ms):
                    continue
                call = _payload(entry, block, tool, tool_input, session, folder)
                if call is not None:
                    yield call
    session.unanswered = len(pending)


def _payload(entry: dict, block: dict, tool: str, tool_input: dict, session: Session, folder: str):
    cwd = entry.get("cwd")
    sid = entry.get("sessionId") if isinstance(entry.get("sessionId"), str) else session.session_id
    payload = {
        "session_id": sid,
        "transcript_path": session.path,
        "cwd": cwd,
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": block["tool_use_id"],
    }
    text = _text(block.get("content"))
    response = entry.get("toolUseResult")
    spilled = False
    if block.get("is_error"):
        payload.update(hook_event_name="PostToolUseFailure", error=text, is_interrupt=False)
    else:
        payload["hook_event_name"] = "PostToolUse"
        if isinstance(response, dict):
            response = dict(response)
            if tool == "Bash":
                whole = _spilled(response, folder, sid)
                if whole is not None:
                    response["stdout"], spilled = whole, True
        payload["tool_response"] = response
    rewritten = _is_preview(response)
    ts = parse_ts(entry.get("timestamp")) or 0
    return Call(payload, ts, rewritten, spilled)


def import_command() -> str:
    """How this environment's ``memtree import`` is run."""
    import shutil
    import sys

    here = os.path.join(os.path.dirname(sys.executable), "memtree")
    if shutil.which("memtree") and os.path.realpath(shutil.which("memtree")) == os.path.realpath(here):
        return "memtree import"
    return f"{here} import" if os.path.isfile(here) else f"{sys.executable} -m memtree.cli import"


def notice(project_dirs: list[str], command: str, exclude_session: str | None = None) -> str:
    """One line: how many earlier sessions Claude Code kept for the project, and the command
    that imports them (memtree never imports on its own)."""
    folders = project_folders(project_dirs)
    files = [f for d in folders for f in session_files(d) if os.path.basename(f) != f"{exclude_session}.jsonl"]
    if not files:
        where = (
            folders[0]
            if folders
            else os.path.join(config_dir(), "projects", folder_name(os.path.realpath(project_dirs[0])))
        )
        return f"memtree: no earlier Claude Code transcripts of this project (looked in {where})"
    return (
        f"memtree: {len(files)} earlier Claude Code session transcript{'s' if len(files) != 1 else ''} of this "
        f"project in {', '.join(folders)}; `{command}` stores their Read/Grep/Bash calls (not imported yet)"
    )
