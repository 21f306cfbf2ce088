"""A native Grep's plan: its output (a header naming the search, then the
result text) under the session, and the chunks its hits fall in.

In content mode each hit ("path:line:text"; paths relative to cwd or
tool_input.path, context lines and ``--`` parsed alike) is widened to the
chunk of its file that holds it, cut as a whole-file Read cuts the file
(docs/ARCHITECTURE.md "Ingest plan"); a file not on disk as the search
printed it keeps its hit lines. Lines of secret files, or of files outside
the project, are left out of both. Standard library only (the chunking is
imported when a file is widened: the hook never does).
"""

from __future__ import annotations

import os

from memtree.capture import settings
from memtree.capture.plans import Plan, field, mtime_ns
from memtree.errors import BadRequest
from memtree.store import uris
from memtree.text import grep_output

MAX_HITS = 500  # children per Grep result; the tool_output keeps every line
# A Grep hit is widened to the chunk of its file that holds it (read from disk
# and outlined inside the writer's batch, so bounded): this many files, each
# at most this big; hits in other files stay their own lines.
GREP_WIDEN_FILES = 8
GREP_WIDEN_BYTES = 512_000


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


def plan_grep(tool_input: dict, response: dict, sid: str, cwd: str, config, deny, project_root=None) -> Plan:
    pattern = field(tool_input, "pattern", str, "tool_input.")
    search_path = field(tool_input, "path", str, "tool_input.", required=False)
    glob = field(tool_input, "glob", str, "tool_input.", required=False)
    denied = deny(search_path) if search_path else deny(cwd, secret=False)  # no path: it searched the cwd
    if denied:
        return Plan(sid, [], denied)
    mode = field(
        response,
        "mode",
        str,
        "tool_response.",
        required=False,
        default=tool_input.get("output_mode")
        if isinstance(tool_input.get("output_mode"), str)
        else "files_with_matches",
    )
    filenames = field(response, "filenames", list, "tool_response.", required=False, default=[])
    if not all(isinstance(f, str) for f in filenames):
        raise BadRequest("Ingest payload: field tool_response.'filenames' must be a list of strings")
    text = field(response, "content", str, "tool_response.", required=False)
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
    # A whole-file Read's cut: the text is the file, so its own symbols (no copy on disk to compare with).
    chunks = chunk_read(
        full,
        whole,
        1,
        None,
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
    mtimes: dict[str, int] = {}  # one stat a file, not one a chunk
    for i, (full, c) in enumerate(chunks, 1):
        if full not in mtimes:
            mtimes[full] = mtime_ns(full)
        nodes.append(
            {
                "ref": f"n{i}",
                **({"parent": {"ref": "n0"}} if c["kind"] == "lines" else {"parent": {"file": full}, "with": "n0"}),
                "kind": "file_chunk",
                "content": c["content"],
                "source_uri": uris.file_uri(full, c["start"], c["end"]),
                "mtime": mtimes[full],
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
