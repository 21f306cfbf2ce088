"""The wrapped ``grep`` tool: ripgrep in the project, the whole result set
stored as one ``tool_output`` node with a child per hit, a bounded preview back.

Secret paths are kept out twice: ripgrep gets a ``--glob !<pattern>`` per
denylist entry so it never opens them, and every hit is checked again with
gate.path_denied before it is shown or stored.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys

import orjson

from memtree import gate, protocol
from memtree.errors import BadRequest, MemtreeError
from memtree.store import uris
from memtree.text import outline
from memtree.text.fit import clip_line, fit_rows
from memtree.tools import call_repr, check_budget, count, display_path, finish, resolve_path
from memtree.tools.read import load_file  # its cache: a file grepped then read is parsed once

TIMEOUT_S = 30.0
MAX_HITS = 1000  # ripgrep is stopped after this many matches
MAX_OUTPUT_BYTES = 16 * 1024 * 1024  # of ripgrep's JSON; stopped beyond it
MAX_LINE_BYTES = 1024 * 1024  # one JSON event (a hit's whole line); longer ones are left out and counted
MAX_CONTEXT = 10
SYMBOL = "symbol"  # context=symbol: each hit shown inside the definition around it (memtree.text.outline)
SYMBOL_MAX_LINES = 80  # a longer definition shows only the hit line, with the definition's name and range
CASES = {
    None: "--smart-case",
    "smart": "--smart-case",
    "sensitive": "--case-sensitive",
    "insensitive": "--ignore-case",
    True: "--case-sensitive",
    False: "--ignore-case",
}


def rg_binary() -> str:
    found = shutil.which("rg", path=os.path.dirname(sys.executable)) or shutil.which("rg")
    if not found:
        raise MemtreeError(
            "ripgrep (rg) is not installed next to the interpreter or on PATH; pip install ripgrep==14.1.0"
        )
    return found


def deny_globs(extra) -> list[str]:
    """ripgrep exclusions for the secret-path denylist (the gate's, then config path.deny)."""
    out = []
    for d in sorted(gate.paths.DENY_DIRS):
        out += ["--glob", f"!**/{d}/**"]
    for pat in list(gate.paths.DENY_NAMES) + ["credentials"] + list(extra or ()):
        out += ["--glob", f"!{pat}", "--glob", f"!**/{pat}"]
    return out


def _args(pattern, glob, case, context) -> tuple[list[str], list[str], int | str]:
    if not isinstance(pattern, str) or not pattern:
        raise BadRequest("pattern must be a non-empty string (a ripgrep regular expression)")
    if case not in CASES:
        raise BadRequest('case must be "smart" (the default), "sensitive" or "insensitive"')
    if context is None:
        context = 0
    if context == SYMBOL:
        return _flags(case, glob, 0) + (SYMBOL,)
    if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
        raise BadRequest(
            f'context must be an integer from 0 to {MAX_CONTEXT} (lines around each hit) or "symbol" '
            f"(the definition around each hit)"
        )
    return _flags(case, glob, context) + (context,)


def _flags(case, glob, context: int) -> tuple[list[str], list[str]]:
    globs = [glob] if isinstance(glob, str) else glob
    if globs is not None and (not isinstance(globs, list) or not all(isinstance(g, str) and g for g in globs)):
        raise BadRequest('glob must be a glob string like "*.py" or a list of them')
    flags = [CASES[case]] + (["--context", str(context)] if context else [])
    for g in globs or ():
        flags += ["--glob", g]
    return flags, globs or []


async def _json_lines(stream, max_line: int):
    """ripgrep's JSON lines, read in blocks; a line longer than ``max_line``
    (a minified file's 16 MB line) is skipped unread and yields None."""
    buf, skipping = bytearray(), False
    while chunk := await stream.read(1 << 16):
        start = 0
        while (nl := chunk.find(b"\n", start)) >= 0:
            if not skipping:
                buf += chunk[start : nl + 1]
            yield None if skipping or len(buf) > max_line else bytes(buf)
            buf.clear()
            skipping, start = False, nl + 1
        if not skipping:
            buf += chunk[start:]
            if len(buf) > max_line:
                buf.clear()
                skipping = True


async def _run_rg(argv: list[str], cwd: str) -> tuple[list[dict], str, int, bool, int]:
    """(JSON events, stderr, exit code, stopped early, lines too long to show) for one ripgrep run."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    events, matches, size, stopped, too_long = [], 0, 0, False, 0

    async def read_events() -> None:
        nonlocal matches, size, stopped, too_long
        async for line in _json_lines(proc.stdout, MAX_LINE_BYTES):
            if line is None:
                too_long += 1
                continue
            size += len(line)
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            events.append(ev)
            matches += ev.get("type") == "match"
            if matches >= MAX_HITS or size >= MAX_OUTPUT_BYTES:
                stopped = True
                return

    stderr_task = asyncio.ensure_future(_drain(proc.stderr, 64 * 1024))
    try:
        await asyncio.wait_for(read_events(), TIMEOUT_S)
    except TimeoutError:
        stopped = True
    finally:
        if stopped or proc.returncode is None:
            _kill(proc)
        await proc.wait()
    err = (await stderr_task).decode("utf-8", errors="replace")
    return events, err, proc.returncode, stopped, too_long


async def _drain(stream, cap: int) -> bytes:
    """Read ``stream`` to its end, keeping the first ``cap`` bytes."""
    kept = b""
    while chunk := await stream.read(65536):
        if len(kept) < cap:
            kept += chunk[: cap - len(kept)]
    return kept


def _kill(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _text(data: dict) -> str:
    if "text" in data:
        return data["text"]
    return "<binary or invalid UTF-8>"


def collect(events: list[dict], root: str, extra_deny, context: int = 0) -> tuple[dict, int]:
    """Hits grouped by file, in ripgrep's order: {abs path: [(line, text, context)]},
    and the number of hits withheld because their path is denied."""
    files: dict[str, list] = {}
    withheld = 0
    pending_ctx: list[tuple[int, str]] = []
    last_hit = None
    for ev in events:
        kind, data = ev.get("type"), ev.get("data") or {}
        if kind not in ("match", "context"):
            if kind == "begin":
                pending_ctx, last_hit = [], None
            continue
        rel = _text(data.get("path") or {})
        full = os.path.normpath(os.path.join(root, rel))
        if gate.path_denied(full, extra_deny, base_dir=root):
            withheld += kind == "match"
            continue
        line_no, text = data.get("line_number") or 0, _text(data.get("lines") or {})
        if kind == "context":
            if last_hit is not None and last_hit[0] < line_no <= last_hit[0] + context:
                last_hit[2].append((line_no, text))  # context after the previous hit
            else:
                pending_ctx.append((line_no, text))
            continue
        last_hit = (line_no, text, list(pending_ctx))
        pending_ctx = []
        files.setdefault(full, []).append(last_hit)
    # ripgrep searches in parallel; sorted, the same search stores the same text (dedup).
    return dict(sorted(files.items())), withheld


def _hit_text(rel: str, line_no: int, text: str, ctx: list) -> str:
    rows = sorted(ctx + [(line_no, text)])
    return "".join(
        f"{rel}:{n}{':' if n == line_no else '-'}{t if t.endswith(chr(10)) else t + chr(10)}" for n, t in rows
    )


async def grep(svc, pattern, path=None, glob=None, case=None, context=None, budget_tokens=None) -> str:
    budget = check_budget(budget_tokens)
    flags, globs, ctx_lines = _args(pattern, glob, case, context)
    root = svc.project_root
    extra = svc.config.path.deny
    target, shown_target = (root, ".") if path is None else resolve_path(svc, path)
    if path is not None and not os.path.exists(target):
        raise BadRequest(f"path {path!r} does not exist")
    argv = [
        rg_binary(),
        "--json",
        "--no-config",
        "--no-messages",
        *flags,
        *deny_globs(extra),
        "--regexp",
        pattern,
        "--",
        target,
    ]
    events, err, code, stopped, too_long = await _run_rg(argv, root)
    if code == 2 and not any(e.get("type") == "match" for e in events):
        msg = " ".join(line.strip() for line in err.splitlines() if line.strip()) or "ripgrep failed"
        raise BadRequest(f"grep: {msg}")
    files, withheld = await svc.run_sync(collect, events, root, extra, 0 if ctx_lines == SYMBOL else ctx_lines)
    hits = sum(len(v) for v in files.values())
    query = call_repr("grep", pattern=pattern, path=path, glob=glob, case=case, context=context)
    notes = []
    if stopped:
        notes.append(f"stopped after {hits} hits (limit {MAX_HITS}) or {TIMEOUT_S:.0f}s; narrow with path= or glob=")
    if withheld:
        notes.append(f"{withheld} hits in secret files withheld")
    if too_long:
        notes.append(f"{too_long} hits on lines over {MAX_LINE_BYTES // 1024} KB left out")
    if not hits:
        return finish(f"No matches for {query}{'; ' + '; '.join(notes) if notes else ''}", budget)
    node_id = await _store(svc, query, files, root, notes, pattern, shown_target, globs, case, ctx_lines, stopped)
    return await svc.run_sync(_preview, files, root, hits, node_id, query, notes, budget, ctx_lines == SYMBOL)


async def _store(svc, query, files, root, notes, pattern, target, globs, case, ctx_lines, stopped):
    children, lines = [], [query]
    for full, hits in files.items():
        rel = display_path(root, full)
        for line_no, text, ctx in hits:
            body = _hit_text(rel, line_no, text, ctx)
            lines.append(body.rstrip("\n"))
            children.append(
                {
                    "content": body,
                    "source_uri": uris.file_uri(full, line_no, line_no),
                    "metadata": {"path": full, "line": line_no},
                }
            )
    lines += notes
    meta = {
        "tool": "grep",
        "pattern": pattern,
        "path": target,
        "glob": globs,
        "case": case,
        "context": ctx_lines,
        "hits": len(children),
        "files": len(files),
        "truncated": stopped,
    }
    reply = await svc.call(
        protocol.PutToolOutput(
            tool="grep",
            content="\n".join(lines) + "\n",
            metadata=meta,
            children=children,
            session_id=svc.session_id,
        )
    )
    return reply.get("id")


def _plain_block(rel: str, file_hits) -> tuple[list[str], list[bool]]:
    block, is_hit = [], []
    for line_no, text, ctx in file_hits:
        for n, t in sorted(ctx + [(line_no, text)]):
            sep = ":" if n == line_no else "-"
            block.append(f"{rel}{sep}{n}{sep}{clip_line(t, 300)}")
            is_hit.append(n == line_no)
    return block, is_hit


def _symbol_block(full: str, rel: str, file_hits) -> tuple[list[str], list[bool]]:
    """Each hit inside the definition around it: a ``path name Lstart-end:``
    header, then the definition's lines numbered as native Read numbers them
    (so an Edit can be written from them), each definition once however many
    hits it holds. A hit at module level, or in a definition over
    SYMBOL_MAX_LINES, stays one ``path:N:text`` line naming what holds it."""
    try:
        loaded = load_file(full, rel)
    except MemtreeError:  # gone, binary, too big: the hits as ripgrep gave them
        return _plain_block(rel, file_hits)
    defs = outline.definitions(loaded.chunked, loaded.lines)
    block, is_hit, shown = [], [], []
    hit_lines = {line_no for line_no, _t, _c in file_hits}
    for line_no, text, _ctx in file_hits:
        if any(a <= line_no <= b for a, b in shown):
            continue  # on screen already, inside the definition an earlier hit opened
        around = outline.innermost(defs, line_no)
        if around is not None and around.size <= SYMBOL_MAX_LINES and around.end <= len(loaded.lines):
            shown.append((around.start, around.end))
            block.append(f"{rel} {around.name} L{around.start}-{around.end}:")
            is_hit.append(False)
            for n in range(around.start, around.end + 1):
                block.append(f"{n}\t{clip_line(loaded.lines[n - 1], 300)}")
                is_hit.append(n in hit_lines)
            continue
        where = f"  (in {around.name} L{around.start}-{around.end})" if around is not None else ""
        block.append(f"{rel}:{line_no}:{clip_line(text, 300)}{where}")
        is_hit.append(True)
    return block, is_hit


def _preview(files, root, hits, node_id, query, notes, budget, by_symbol: bool = False) -> str:
    """Hits as native Grep (ripgrep -n) prints them: ``path:N:text``, context
    ``path-N-text``; then one trailer line with the node id (the hits and
    their files are on screen), or, when the budget cuts it, what was left
    out and the call for it all (which names the id)."""
    extra = "".join(f"; {n}" for n in notes)
    everything = call_repr("recall", ids=node_id)
    cut_max = (
        f"[not shown: {hits} of {hits} hits in {len(files)} of {len(files)} files; all of them: "
        f"{everything} or grep with a narrower path={extra}]"
    )
    room = budget - count(cut_max) - 1
    body, shown_hits, shown_files = [], 0, 0
    for full, file_hits in files.items():
        rel = display_path(root, full)
        block, is_hit = _symbol_block(full, rel, file_hits) if by_symbol else _plain_block(rel, file_hits)
        kept, used = fit_rows(block, room)
        if not kept:
            break
        taken = sum(is_hit[: len(kept)])
        body += kept
        room -= used
        shown_hits += taken
        shown_files += 1
        if taken < len(file_hits):
            break
    if shown_hits < hits:
        body.append(
            f"[not shown: {hits - shown_hits} of {hits} hits in {len(files) - shown_files} of {len(files)} files"
            f" (partly shown files count as shown); all of them: {everything} or grep with a narrower path="
            f"{extra}]"
        )
    else:
        body.append(f"[{extra[2:]}; memtree {node_id}]" if extra else f"[memtree {node_id}]")
    return finish("\n".join(body), budget)
