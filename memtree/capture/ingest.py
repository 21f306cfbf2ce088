"""Ingest plan: a raw Claude Code PostToolUse payload -> the nodes to store.

``plan(payload, config)`` is pure apart from looking at files (a Read's mtime
and, inside the project, the file a Read returned lines of, for its symbols;
which of cwd / tool_input.path a Grep hit is relative to). The writer applies
the plan (memtree.store.write.captures.apply_plan); content passes the redaction
gate there, metadata included (once per field, at insert). The spool is the
exception: what the hook writes to disk is redacted by ``sanitize`` first.

Shapes handled (docs/ARCHITECTURE.md "Ingest plan", integration-facts §1):
- Read: tool_response {type:"text", file:{filePath, content, startLine,
  numLines, totalLines, truncatedByTokenCap?}} -> one file_chunk per symbol
  (or window) of the lines read, under the file's root (``read_nodes``).
  ``file_unchanged`` and non-text reads carry no text: skipped.
- Grep: {mode, content?, filenames, numFiles, numLines?, numMatches?} -> its
  output plus the chunks its hits fall in (memtree/capture/grep_plan.py).
- Bash: {stdout, stderr, interrupted} (PostToolUse has no exit code) and
  PostToolUseFailure {error: "Exit code N\\n<output>", is_interrupt}.

Given ``project_root``, Read/Grep of files outside the project (after
resolving symlinks) are skipped unless ``path.allowOutside`` names them: the
rule of memtree's own read/grep (memtree/gate/paths.py). A skipped capture is
counted as refused by the hook and its native output is left as it is.

A malformed payload raises BadRequest naming the field, never its content.
Standard library only.
"""

from __future__ import annotations

import os
import re

from memtree.capture import grep_plan, settings
from memtree.capture.claude_code import (
    CAPTURE_EVENTS,
    CAPTURED_TOOLS,
    COMPACT_EVENT,
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
)
from memtree.capture.plans import SKIP_KINDS, Plan, Skip, field, mtime_ns  # noqa: F401 - Skip, SKIP_KINDS: named here too
from memtree.errors import BadRequest
from memtree.gate import (  # redact_value: the spool's own pass
    command_denied,
    path_denied,
    redact_value,
    refused_outside,
)
from memtree.store import uris

MAX_READ_CHARS = 8 * 1024 * 1024  # of one Read chunked, as the wrapped read's file limit
_EXIT = re.compile(r"^Exit code (-?\d+)\s*$")


def _skipped(kind: str, detail: str, sid: str) -> Plan:
    return Plan(sid, [], Skip(kind, detail))


def plan(payload, config, project_root: str | None = None) -> Plan:
    """The node plan for one hook payload (see the module docstring)."""
    if not isinstance(payload, dict):
        raise BadRequest(f"Ingest payload must be a JSON object, not {type(payload).__name__}")
    sid = field(payload, "session_id", str, "")
    event = field(payload, "hook_event_name", str, "", required=False, default=POST_TOOL_USE)
    if event == COMPACT_EVENT:
        return _plan_compact(payload, sid)
    tool = field(payload, "tool_name", str, "")
    cwd = field(payload, "cwd", str, "")
    if not os.path.isabs(cwd):
        raise BadRequest("Ingest payload: field 'cwd' must be an absolute path")
    if event not in CAPTURE_EVENTS:
        return _skipped("unsupported", f"unsupported hook event {event[:40]!r}", sid)
    if tool not in CAPTURED_TOOLS:
        return _skipped("unsupported", f"unsupported tool {tool[:60]!r}", sid)
    tool_input = field(payload, "tool_input", dict, "")
    failed = event == POST_TOOL_USE_FAILURE
    if tool == "Bash":
        return _plan_bash(payload, tool_input, sid, failed, config)
    if failed:
        field(payload, "error", str, "", required=False)
        return _skipped("unsupported", f"{tool} failed: nothing was read", sid)
    response = field(payload, "tool_response", dict, "")
    deny = _denier(config, cwd, project_root)
    if tool == "Read":
        return _plan_read(tool_input, response, sid, cwd, deny, config, project_root)
    return grep_plan.plan_grep(tool_input, response, sid, cwd, config, deny, project_root)


def _denier(config, cwd: str, project_root: str | None):
    """``deny(path) -> Skip | None``: a secret file (path.deny), or one outside the project."""
    globs = settings.get(config, "path", "deny")
    allow = settings.get(config, "path", "allowOutside")

    def deny(path: str, secret: bool = True) -> str | None:
        why = path_denied(path, globs, cwd) if secret else None
        if why:
            return Skip("denied", f"denied path: {why}")
        why = refused_outside(path, project_root, allow, cwd) if project_root else None
        if why:
            return Skip("outside", why)
        return None

    return deny


# -- Read ----------------------------------------------------------------------


def _plan_read(
    tool_input: dict, response: dict, sid: str, cwd: str, deny, config=None, project_root: str | None = None
) -> Plan:
    path = field(tool_input, "file_path", str, "tool_input.")
    denied = deny(path)
    if denied:
        return Plan(sid, [], denied)
    rtype = field(response, "type", str, "tool_response.", required=False, default="text")
    file = field(response, "file", dict, "tool_response.", required=rtype == "text", default={})
    if rtype == "file_unchanged":
        return _skipped("unchanged", "file unchanged since the last read (no content)", sid)
    if rtype != "text":
        return _skipped("unsupported", f"Read of type {rtype[:20]!r} has no text to store", sid)
    content = field(file, "content", str, "tool_response.file.")
    full = field(file, "filePath", str, "tool_response.file.", required=False, default=path)
    full = os.path.normpath(full if os.path.isabs(full) else os.path.join(cwd, full))
    if full != os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path)):
        denied = deny(full)
        if denied:
            return Plan(sid, [], denied)
    start = field(file, "startLine", int, "tool_response.file.", required=False, default=1)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    num = field(file, "numLines", int, "tool_response.file.", required=False, default=lines)
    total = field(file, "totalLines", int, "tool_response.file.", required=False, default=start + num - 1)
    capped = field(file, "truncatedByTokenCap", bool, "tool_response.file.", required=False, default=False)
    start = max(start, 1)
    if content.endswith("\n") and num == lines + 1:
        # Claude Code counts the empty string after a final newline as a line
        # (a 3-line file reads as numLines 4, totalLines 4): count the file's own lines.
        num -= 1
        total -= total == start + num
    end = max(start, start + num - 1)
    meta = {"tool": "Read", "path": full, "total_lines": total, "truncated_by_token_cap": capped, "origin": "hook"}
    nodes = read_nodes(full, content, start, end, meta, mtime_ns(full), config, project_root)
    return Plan(sid, nodes)


def read_nodes(
    full: str, content: str, start: int, end: int, meta: dict, mtime: int, config=None, project_root: str | None = None
) -> list[dict]:
    """A Read's nodes: one file_chunk per symbol (or window) of the lines read,
    cut as the wrapped read cuts the file (memtree.text.chunking.chunk_read,
    lines numbered from the Read's start), each under the file's root. The
    file on disk, when it holds exactly these lines, gives the symbols of a
    slice or a capped prefix. ``read`` in each chunk's metadata is the range
    the Read returned, so the chunks of one Read can be put together again."""
    from memtree.capture import ondisk
    from memtree.text.chunking import chunk_read

    if len(content) > MAX_READ_CHARS:  # memory stays bounded: cut at a line end (each chunk is cut at maxBytes)
        cut = content.rfind("\n", 0, MAX_READ_CHARS)
        meta = {**meta, "cut_at_capture_from_chars": len(content)}
        content = content[: cut + 1] if cut >= 0 else content[:MAX_READ_CHARS]
    whole = ondisk.project_file_text(full, project_root) if content else None
    min_bytes = settings.get(config, "capture", "filterMinSize")
    # Small symbols join a neighbour (capture.readSymbolMinBytes): a file of many small functions stays tens
    # of chunks, so one Read's writer work (and every capture in its batch waits for it) stays bounded.
    chunks = chunk_read(full, content, start, whole, min_bytes, settings.get(config, "capture", "readSymbolMinBytes"))
    if not chunks:  # an empty Read: one empty chunk, as before (the filter drops it as too small)
        chunks = [{"start": start, "end": end, "symbol": None, "kind": "window", "content": content}]
    nodes = []
    for i, c in enumerate(chunks):
        nodes.append(
            {
                "ref": f"n{i}",
                "parent": {"file": full},
                "kind": "file_chunk",
                "content": c["content"],
                "source_uri": uris.file_uri(full, c["start"], c["end"]),
                "mtime": mtime,
                "metadata": {
                    **meta,
                    "start": c["start"],
                    "end": c["end"],
                    "symbol": c["symbol"],
                    **({"symbols": c["symbols"]} if c.get("symbols") else {}),
                    "chunk": c["kind"],
                    "read": [start, end],
                },
            }
        )
    return nodes


# -- Bash ----------------------------------------------------------------------


def _plan_bash(payload: dict, tool_input: dict, sid: str, failed: bool, config) -> Plan:
    command = field(tool_input, "command", str, "tool_input.")
    description = field(tool_input, "description", str, "tool_input.", required=False, default="")
    if not settings.get(config, "capture", "bash"):
        return _skipped("off", "capture.bash is off for this project", sid)
    denied = command_denied(
        command, settings.get(config, "bash", "deny"), settings.get(config, "path", "deny"), payload.get("cwd")
    )
    if denied:
        return _skipped("denied", f"denied command: {denied}", sid)
    if failed:
        error = field(payload, "error", str, "")
        interrupted = field(payload, "is_interrupt", bool, "", required=False, default=False)
        first, _, rest = error.partition("\n")
        m = _EXIT.match(first)
        exit_code = int(m.group(1)) if m else None
        stdout, stderr = (rest if m else error), ""
    else:
        response = field(payload, "tool_response", dict, "")
        stdout = field(response, "stdout", str, "tool_response.", required=False, default="")
        stderr = field(response, "stderr", str, "tool_response.", required=False, default="")
        interrupted = field(response, "interrupted", bool, "tool_response.", required=False, default=False)
        exit_code = None
    status = "interrupted" if interrupted else ("unknown" if exit_code is None else str(exit_code))
    parts = [f"$ {command}", f"exit: {status}"]
    if stdout:
        parts += ["--- output ---" if failed else "--- stdout ---", stdout]
    if stderr:
        parts += ["--- stderr ---", stderr]
    content = "\n".join(parts)
    meta = {
        "tool": "Bash",
        "command": command,
        "exit": exit_code,
        "interrupted": interrupted,
        "description": description,
        "origin": "hook",
    }
    if not failed:
        for k in ("persistedOutputPath", "persistedOutputSize"):
            v = payload["tool_response"].get(k)
            if isinstance(v, (str, int)) and not isinstance(v, bool):
                meta["persisted_output_path" if k.endswith("Path") else "persisted_output_size"] = v
    node = {
        "ref": "n0",
        "parent": {"session": sid},
        "kind": "tool_output",
        "content": content,
        "source_uri": uris.tool_uri("Bash"),
        "metadata": meta,
        "mtime": 0,
    }
    return Plan(sid, [node])


# -- PostCompact -------------------------------------------------------------------


def _plan_compact(payload: dict, sid: str) -> Plan:
    """Claude Code's compaction summary (verified on 2.1.197: {trigger: manual|auto,
    compact_summary}) as an observation of the session; the content is redacted by
    the writer's gate, and cut to capture.maxBytes like any capture."""
    summary = field(payload, "compact_summary", str, "")
    trigger = field(payload, "trigger", str, "", required=False, default="auto")
    if not summary.strip():
        return _skipped("unsupported", "empty compaction summary", sid)
    node = {
        "ref": "n0",
        "parent": {"session": sid},
        "kind": "observation",
        "content": f"Compaction summary ({trigger[:20]}):\n{summary}",
        "source_uri": f"compact:{sid[:200]}",
        "metadata": {"origin": "compact", "trigger": trigger[:20]},
        "mtime": 0,
    }
    return Plan(sid, [node])


# -- spool ---------------------------------------------------------------------


def sanitize(payload: dict, config, project_root: str | None = None) -> tuple[dict | None, str]:
    """The payload as the hook may spool it and "spooled", or (None, the Skip kind).

    The same plan the writer makes decides (one deny implementation for hook,
    spool and writer): a skipped plan spools nothing, a Grep keeps only the
    lines the plan kept (no hit of a secret file), and every string is
    redacted. The writer plans the spooled payload again when it drains it.
    """
    try:
        planned = plan(payload, config, project_root)
    except BadRequest:
        return None, "malformed"
    if planned.skip:
        return None, planned.skip.kind
    out = dict(payload)
    if payload.get("tool_name") == "Grep":
        kept = planned.nodes[0]["content"].split("\n", 1)
        response = dict(payload["tool_response"])
        response["content"] = kept[1] if len(kept) > 1 else ""
        deny = _denier(config, payload["cwd"], project_root)
        response["filenames"] = [f for f in response.get("filenames") or [] if isinstance(f, str) and not deny(f)]
        if (
            response.get("mode", "files_with_matches") == "files_with_matches"
            and "content" not in payload["tool_response"]
        ):
            response.pop("content")
        out["tool_response"] = response
    return redact_value(out)[0], "spooled"
