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
- Grep: {mode, content?, filenames, numFiles, numLines?, numMatches?} -> a
  tool_output (a header line naming the search, then the result text) plus
  one file_chunk child per matching line ("path:line:text"; paths relative
  to cwd or tool_input.path). Lines in secret files are left out.
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

from memtree.capture import settings
from memtree.capture.claude_code import (
    CAPTURE_EVENTS,
    CAPTURED_TOOLS,
    COMPACT_EVENT,
    POST_TOOL_USE,
    POST_TOOL_USE_FAILURE,
)
from memtree.errors import BadRequest
from memtree.gate import (  # redact_value: the spool's own pass
    command_denied,
    path_denied,
    redact_value,
    refused_outside,
)
from memtree.store import uris
from memtree.text import grep_output

MAX_HITS = 500  # children per Grep result; the tool_output keeps every line
# A Grep hit is widened to the chunk of its file that holds it (read from disk
# and outlined inside the writer's batch, so bounded): this many files, each
# at most this big; hits in other files stay their own lines.
GREP_WIDEN_FILES = 8
GREP_WIDEN_BYTES = 512_000
MAX_READ_CHARS = 8 * 1024 * 1024  # of one Read chunked, as the wrapped read's file limit
_EXIT = re.compile(r"^Exit code (-?\d+)\s*$")


def _field(obj: dict, key: str, types, where: str, required: bool = True, default=None):
    if key not in obj or obj[key] is None:
        if required:
            raise BadRequest(f"Ingest payload: missing field {where}{key!r}")
        return default
    value = obj[key]
    if not isinstance(value, types) or (types is int and isinstance(value, bool)):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise BadRequest(f"Ingest payload: field {where}{key!r} must be {names}, not {type(value).__name__}")
    return value


SKIP_KINDS = ("unchanged", "denied", "outside", "unsupported", "off", "malformed")


class Skip:
    """Why a payload stores nothing. Code branches on ``kind`` (one of
    SKIP_KINDS); ``detail`` is for people (the audit row, the hook log)."""

    __slots__ = ("kind", "detail")

    def __init__(self, kind: str, detail: str):
        if kind not in SKIP_KINDS:
            raise ValueError(f"unknown skip kind {kind!r}")
        self.kind, self.detail = kind, detail

    def __eq__(self, other):
        return isinstance(other, Skip) and (self.kind, self.detail) == (other.kind, other.detail)

    def __repr__(self):
        return f"Skip({self.kind!r}, {self.detail!r})"


class Plan:
    """The nodes one payload becomes, or the Skip that says why none.

    ``nodes`` are dicts the writer stores in order (memtree.store.write.captures):
    ``ref``, ``parent`` ({"file"|"session"|"ref": ...}), ``kind``, ``content``,
    ``source_uri``, ``mtime``, ``metadata``, and ``with`` (a ref: stored only
    if that node is). Metadata is raw here: it is redacted once, at insert."""

    __slots__ = ("session_id", "nodes", "skip")

    def __init__(self, session_id: str, nodes: list, skip: Skip | None = None):
        self.session_id, self.nodes, self.skip = session_id, nodes, skip

    def __repr__(self):
        return f"Plan({self.session_id!r}, {len(self.nodes)} nodes, skip={self.skip!r})"


def _skipped(kind: str, detail: str, sid: str) -> Plan:
    return Plan(sid, [], Skip(kind, detail))


def plan(payload, config, project_root: str | None = None) -> Plan:
    """The node plan for one hook payload (see the module docstring)."""
    if not isinstance(payload, dict):
        raise BadRequest(f"Ingest payload must be a JSON object, not {type(payload).__name__}")
    sid = _field(payload, "session_id", str, "")
    event = _field(payload, "hook_event_name", str, "", required=False, default=POST_TOOL_USE)
    if event == COMPACT_EVENT:
        return _plan_compact(payload, sid)
    tool = _field(payload, "tool_name", str, "")
    cwd = _field(payload, "cwd", str, "")
    if not os.path.isabs(cwd):
        raise BadRequest("Ingest payload: field 'cwd' must be an absolute path")
    if event not in CAPTURE_EVENTS:
        return _skipped("unsupported", f"unsupported hook event {event[:40]!r}", sid)
    if tool not in CAPTURED_TOOLS:
        return _skipped("unsupported", f"unsupported tool {tool[:60]!r}", sid)
    tool_input = _field(payload, "tool_input", dict, "")
    failed = event == POST_TOOL_USE_FAILURE
    if tool == "Bash":
        return _plan_bash(payload, tool_input, sid, failed, config)
    if failed:
        _field(payload, "error", str, "", required=False)
        return _skipped("unsupported", f"{tool} failed: nothing was read", sid)
    response = _field(payload, "tool_response", dict, "")
    deny = _denier(config, cwd, project_root)
    if tool == "Read":
        return _plan_read(tool_input, response, sid, cwd, deny, config, project_root)
    return _plan_grep(tool_input, response, sid, cwd, config, deny, project_root)


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


def _mtime_ns(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except (OSError, ValueError):
        return 0


def _plan_read(
    tool_input: dict, response: dict, sid: str, cwd: str, deny, config=None, project_root: str | None = None
) -> Plan:
    path = _field(tool_input, "file_path", str, "tool_input.")
    denied = deny(path)
    if denied:
        return Plan(sid, [], denied)
    rtype = _field(response, "type", str, "tool_response.", required=False, default="text")
    file = _field(response, "file", dict, "tool_response.", required=rtype == "text", default={})
    if rtype == "file_unchanged":
        return _skipped("unchanged", "file unchanged since the last read (no content)", sid)
    if rtype != "text":
        return _skipped("unsupported", f"Read of type {rtype[:20]!r} has no text to store", sid)
    content = _field(file, "content", str, "tool_response.file.")
    full = _field(file, "filePath", str, "tool_response.file.", required=False, default=path)
    full = os.path.normpath(full if os.path.isabs(full) else os.path.join(cwd, full))
    if full != os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path)):
        denied = deny(full)
        if denied:
            return Plan(sid, [], denied)
    start = _field(file, "startLine", int, "tool_response.file.", required=False, default=1)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    num = _field(file, "numLines", int, "tool_response.file.", required=False, default=lines)
    total = _field(file, "totalLines", int, "tool_response.file.", required=False, default=start + num - 1)
    capped = _field(file, "truncatedByTokenCap", bool, "tool_response.file.", required=False, default=False)
    start = max(start, 1)
    if content.endswith("\n") and num == lines + 1:
        # Claude Code counts the empty string after a final newline as a line
        # (a 3-line file reads as numLines 4, totalLines 4): count the file's own lines.
        num -= 1
        total -= total == start + num
    end = max(start, start + num - 1)
    meta = {"tool": "Read", "path": full, "total_lines": total, "truncated_by_token_cap": capped, "origin": "hook"}
    nodes = read_nodes(full, content, start, end, meta, _mtime_ns(full), config, project_root)
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


# -- Grep ----------------------------------------------------------------------


def _resolver(cwd: str, search_path: str | None):
    """Grep prints paths relative to cwd (observed) or to its path argument;
    prefer the base under which the file exists."""
    bases = [cwd]
    if search_path:
        sp = search_path if os.path.isabs(search_path) else os.path.join(cwd, search_path)
        bases.append(sp if os.path.isdir(sp) else os.path.dirname(sp))
    cache: dict[str, str] = {}

    def resolve(p: str) -> str:
        if p in cache:
            return cache[p]
        if os.path.isabs(p):
            out = os.path.normpath(p)
        else:
            cands = [os.path.normpath(os.path.join(b, p)) for b in bases]
            out = next((c for c in cands if os.path.isfile(c)), cands[0])
        cache[p] = out
        return out

    return resolve


def _plan_grep(tool_input: dict, response: dict, sid: str, cwd: str, config, deny, project_root=None) -> Plan:
    pattern = _field(tool_input, "pattern", str, "tool_input.")
    search_path = _field(tool_input, "path", str, "tool_input.", required=False)
    glob = _field(tool_input, "glob", str, "tool_input.", required=False)
    denied = deny(search_path) if search_path else deny(cwd, secret=False)  # no path: it searched the cwd
    if denied:
        return Plan(sid, [], denied)
    mode = _field(
        response,
        "mode",
        str,
        "tool_response.",
        required=False,
        default=tool_input.get("output_mode")
        if isinstance(tool_input.get("output_mode"), str)
        else "files_with_matches",
    )
    filenames = _field(response, "filenames", list, "tool_response.", required=False, default=[])
    if not all(isinstance(f, str) for f in filenames):
        raise BadRequest("Ingest payload: field tool_response.'filenames' must be a list of strings")
    text = _field(response, "content", str, "tool_response.", required=False)
    if text is None:
        text = "\n".join(filenames)
    resolve = _resolver(cwd, search_path)
    single_file = (
        search_path
        if search_path and os.path.isfile(search_path if os.path.isabs(search_path) else os.path.join(cwd, search_path))
        else None
    )
    kept, hits, denied_lines = _grep_lines(text, mode, single_file, resolve, deny)
    # A header names the search: results alone ("big.txt") say little and
    # would dedupe across different searches.
    header = (
        f"Grep {pattern!r}"
        + (f" in {search_path}" if search_path else "")
        + (f" glob {glob}" if glob else "")
        + f" ({mode})"
    )
    text = header + "\n" + "\n".join(kept)
    counts = {
        k: response.get(k)
        for k in ("numFiles", "numLines", "numMatches", "appliedLimit")
        if isinstance(response.get(k), int) and not isinstance(response.get(k), bool)
    }
    meta = {
        "tool": "Grep",
        "pattern": pattern,
        "path": search_path,
        "glob": glob,
        "mode": mode,
        "type": tool_input.get("type") if isinstance(tool_input.get("type"), str) else None,
        "case_insensitive": tool_input.get("-i") is True,
        "hits": len(hits),
        "denied_lines": denied_lines,
        "origin": "hook",
        **counts,
    }
    return Plan(sid, _grep_nodes(sid, text, meta, _grep_chunks(hits, config, project_root), pattern))


def _grep_lines(text: str, mode: str, single_file, resolve, deny) -> tuple[list[str], list[tuple], int]:
    """(the lines kept, the match lines as (path, line, text) up to MAX_HITS,
    how many lines were dropped for naming a denied file)."""
    kept, hits, denied_lines, denied_cache = [], [], 0, {}
    for line in text.split("\n"):
        path, lineno, body, context = grep_output.parse_line(line, mode, single_file)
        if path is None and mode == "content" and _prefix_denied(line, resolve, deny, denied_cache):
            denied_lines += 1  # "path:text" (no -n) or "path-text" context line of a secret file
            continue
        if path is not None:
            full = resolve(path)
            if full not in denied_cache:
                denied_cache[full] = deny(full)
            if denied_cache[full]:
                denied_lines += 1  # a hit in a secret file or out of the project: neither stored nor kept
                continue
            if lineno is not None and not context and len(hits) < MAX_HITS:
                hits.append((full, lineno, body))
        kept.append(line)
    return kept, hits, denied_lines


def _grep_chunks(hits: list[tuple], config, project_root: str | None) -> list[tuple[str, dict]]:
    """(file, chunk) for the hits: each hit widened to the chunk of its file
    that holds it, cut as a whole-file Read cuts the file (its symbol, section
    or window), once however many hits it holds, so a hit names the function
    and the filter drops a chunk a Read already stored for this version. A
    file not on disk as the search saw it (changed, outside the project, too
    big, past GREP_WIDEN_FILES) keeps its hit lines, a chunk per run of
    adjacent lines (kind ``lines``: part of the search's output, not of a
    file version)."""
    by_file: dict[str, list[tuple[int, str]]] = {}
    for full, lineno, body in hits:
        by_file.setdefault(full, []).append((lineno, body))
    out = []
    for k, (full, lines) in enumerate(by_file.items()):
        chunks = _widened(full, lines, config, project_root) if k < GREP_WIDEN_FILES else None
        out += [(full, c) for c in (chunks if chunks is not None else _line_runs(lines))]
    return out


def _widened(full: str, lines: list[tuple[int, str]], config, project_root: str | None) -> list[dict] | None:
    """The chunks of ``full`` on disk that hold the hit ``lines``, or None when
    the file is not the version the search printed (a hit line differs)."""
    from memtree.capture import ondisk
    from memtree.text.chunking import chunk_read, split_lines

    whole = ondisk.project_file_text(full, project_root, GREP_WIDEN_BYTES)
    if not whole:
        return None
    file_lines = split_lines(whole)
    for lineno, body in lines:
        if not 1 <= lineno <= len(file_lines) or file_lines[lineno - 1].rstrip("\r\n") != body.rstrip("\r"):
            return None
    chunks = chunk_read(
        full,
        whole,
        1,
        whole,
        settings.get(config, "capture", "filterMinSize"),
        settings.get(config, "capture", "readSymbolMinBytes"),
    )
    wanted = {lineno for lineno, _ in lines}
    return [c for c in chunks if any(c["start"] <= n <= c["end"] for n in wanted)]


def _line_runs(lines: list[tuple[int, str]]) -> list[dict]:
    """The hit lines of one file, a chunk per run of adjacent line numbers."""
    runs: list[list[tuple[int, str]]] = []
    for lineno, body in sorted(set(lines)):
        if runs and lineno == runs[-1][-1][0] + 1:
            runs[-1].append((lineno, body))
        else:
            runs.append([(lineno, body)])
    return [
        {"start": r[0][0], "end": r[-1][0], "symbol": None, "kind": "lines", "content": "\n".join(b for _, b in r)}
        for r in runs
    ]


def _grep_nodes(sid: str, text: str, meta: dict, chunks: list[tuple[str, dict]], pattern: str) -> list[dict]:
    """The search's output under the session; the chunks its hits fall in
    under their files (stored only beside the output: a search repeated within
    the dedupe window stores none of it again), hit lines under the output."""
    nodes = [
        {
            "ref": "n0",
            "parent": {"session": sid},
            "kind": "tool_output",
            "content": text,
            "source_uri": uris.tool_uri("Grep"),
            "metadata": meta,
            "mtime": 0,
        }
    ]
    for i, (full, c) in enumerate(chunks, 1):
        nodes.append(
            {
                "ref": f"n{i}",
                **({"parent": {"ref": "n0"}} if c["kind"] == "lines" else {"parent": {"file": full}, "with": "n0"}),
                "kind": "file_chunk",
                "content": c["content"],
                "source_uri": uris.file_uri(full, c["start"], c["end"]),
                "mtime": _mtime_ns(full),
                "metadata": {
                    "tool": "Grep",
                    "path": full,
                    "start": c["start"],
                    "end": c["end"],
                    "symbol": c["symbol"],
                    **({"symbols": c["symbols"]} if c.get("symbols") else {}),
                    "chunk": c["kind"],
                    "pattern": pattern,
                    "origin": "hook",
                },
            }
        )
    return nodes


def _prefix_denied(line: str, resolve, deny, cache: dict) -> bool:
    """Whether a Grep line without a line number starts with a secret file's path.

    Without ``-n`` a hit is ``path:text`` and a context line ``path-text``; the
    text may hold more colons and dashes, so every such prefix is tried.
    """
    for i, c in enumerate(line[:4096]):
        if c in ":-" and i:
            full = resolve(line[:i])
            if full not in cache:
                cache[full] = deny(full)
            if cache[full]:
                return True
        elif c.isspace():
            return False
    return False


# -- Bash ----------------------------------------------------------------------


def _plan_bash(payload: dict, tool_input: dict, sid: str, failed: bool, config) -> dict:
    command = _field(tool_input, "command", str, "tool_input.")
    description = _field(tool_input, "description", str, "tool_input.", required=False, default="")
    if not settings.get(config, "capture", "bash"):
        return _skipped("off", "capture.bash is off for this project", sid)
    denied = command_denied(
        command, settings.get(config, "bash", "deny"), settings.get(config, "path", "deny"), payload.get("cwd")
    )
    if denied:
        return _skipped("denied", f"denied command: {denied}", sid)
    if failed:
        error = _field(payload, "error", str, "")
        interrupted = _field(payload, "is_interrupt", bool, "", required=False, default=False)
        first, _, rest = error.partition("\n")
        m = _EXIT.match(first)
        exit_code = int(m.group(1)) if m else None
        stdout, stderr = (rest if m else error), ""
    else:
        response = _field(payload, "tool_response", dict, "")
        stdout = _field(response, "stdout", str, "tool_response.", required=False, default="")
        stderr = _field(response, "stderr", str, "tool_response.", required=False, default="")
        interrupted = _field(response, "interrupted", bool, "tool_response.", required=False, default=False)
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
    summary = _field(payload, "compact_summary", str, "")
    trigger = _field(payload, "trigger", str, "", required=False, default="auto")
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
