"""The wrapped ``read`` tool: chunk a file into nodes, return a budgeted slice.

The file is chunked by symbol (memtree.text.chunking) and sent to the writer as one
``PutFile``; the writer reuses the chunks when the file's mtime is unchanged
and supersedes the old ones when it changed. The answer is the requested
lines numbered as native Read numbers them (``N\t``) with one trailer line
naming the file's node (chunk ids only with ``with_ids``),
or, with no lines/symbol, an outline plus the start of the file. When the
budget cuts it, the answer names the lines left out and the call that gets them.
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections import OrderedDict

import anyio

from memtree import protocol
from memtree.errors import BadRequest, NotFound
from memtree.store import reads
from memtree.text.chunking import Chunked, chunk_text, split_lines
from memtree.text.fit import clip_line, fit_rows
from memtree.tools import call_repr, check_budget, count, finish, resolve_path

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_LINE_CHARS = 1000  # one display line; a minified file must not eat the whole budget
OUTLINE_SHARE = 0.6  # of the budget, at most, for the outline when the file start follows
_LINES = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")
_SYMBOL = re.compile(r"[A-Za-z_][\w.]*")  # lines="Class.method" names a symbol (one argument fewer to pay for)


def parse_lines(lines) -> tuple[int, int] | None:
    """ "START-END" (1-based, inclusive) or "N" -> (start, end); None -> None."""
    if lines is None:
        return None
    if isinstance(lines, int) and not isinstance(lines, bool):
        lines = str(lines)
    m = _LINES.fullmatch(lines) if isinstance(lines, str) else None
    if not m:
        raise BadRequest(
            f'lines must look like "START-END" (1-based, inclusive, e.g. "10-42") or name a '
            f'symbol ("Class.method"), got {lines!r}'
        )
    start = int(m.group(1))
    end = int(m.group(2)) if m.group(2) is not None else start
    if start < 1:
        raise BadRequest(f"lines start at 1, got {lines!r}")
    if end < start:
        raise BadRequest(f"lines END must not be before START, got {lines!r}")
    return start, end


class Loaded:
    __slots__ = ("text", "mtime_ns", "size", "chunked", "lines")

    def __init__(self, text: str, mtime_ns: int, size: int, chunked: Chunked):
        self.text, self.mtime_ns, self.size, self.chunked = text, mtime_ns, size, chunked
        self.lines = split_lines(text)


class _Cache:
    """Recently chunked files by (path, mtime_ns, size): a re-read of an
    unchanged file costs a stat, not a read and a parse."""

    def __init__(self, max_files: int = 64, max_bytes: int = 32 * 1024 * 1024):
        self.items: OrderedDict[str, Loaded] = OrderedDict()
        self.max_files, self.max_bytes, self.bytes = max_files, max_bytes, 0
        self.lock = threading.Lock()

    def get(self, full: str, st: os.stat_result) -> Loaded | None:
        with self.lock:
            hit = self.items.get(full)
            if hit is None or (hit.mtime_ns, hit.size) != (st.st_mtime_ns, st.st_size):
                return None
            self.items.move_to_end(full)
            return hit

    def put(self, full: str, loaded: Loaded) -> None:
        with self.lock:
            old = self.items.pop(full, None)
            self.bytes += loaded.size - (old.size if old else 0)
            self.items[full] = loaded
            while self.items and (len(self.items) > self.max_files or self.bytes > self.max_bytes):
                _, dropped = self.items.popitem(last=False)
                self.bytes -= dropped.size


CACHE = _Cache()


def load_file(full: str, shown: str) -> Loaded:
    """Stat, read and chunk (blocking: runs in a worker thread)."""
    try:
        hit = CACHE.get(full, os.stat(full))
    except OSError:
        hit = None
    if hit is not None:
        return hit
    loaded = _load(full, shown)
    CACHE.put(full, loaded)
    return loaded


def _load(full: str, shown: str) -> Loaded:
    for _ in range(3):  # a file rewritten while we read it: read it again
        try:
            st = os.stat(full)
        except FileNotFoundError:
            raise NotFound(f"{shown}: no such file") from None
        except OSError as e:
            raise BadRequest(f"{shown}: cannot stat: {e.strerror}") from None
        if stat.S_ISDIR(st.st_mode):
            raise BadRequest(f"{shown} is a directory; read takes a file (list it with bash, e.g. ls {shown})")
        if not stat.S_ISREG(st.st_mode):  # a FIFO or device would block the read (or never end)
            raise BadRequest(f"{shown} is not a regular file (a FIFO, socket or device); read takes a file")
        if st.st_size > MAX_FILE_BYTES:
            raise BadRequest(
                f"{shown} is {st.st_size} bytes, over read's {MAX_FILE_BYTES} byte limit; "
                f"use grep or bash (e.g. head/sed -n) on it"
            )
        try:
            with open(full, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
        except OSError as e:
            raise BadRequest(f"{shown}: cannot read: {e.strerror}") from None
        st2 = os.stat(full)
        if (st2.st_mtime_ns, st2.st_size) == (st.st_mtime_ns, st.st_size):
            break
    if b"\x00" in data[:8192]:
        raise BadRequest(f"{shown} looks binary ({len(data)} bytes); read handles text (try bash: file {shown})")
    text = data.decode("utf-8", errors="replace")
    return Loaded(text, st.st_mtime_ns, len(data), chunk_text(full, text))


def _ids_by_start(svc, root_id, chunks: list[dict], ids: list[str]) -> list[str]:
    """Chunk ids in our chunk order, looked up by start line (a reused set the
    writer returned may lack a forgotten chunk)."""
    by_start = reads.chunk_ids_by_start(svc.db(), root_id)
    return [by_start.get(c["start"], "(not stored)") for c in chunks]


def _numbered(lines: list[str], start: int, end: int) -> list[str]:
    """Compact ``N\t`` numbers, as native Read prints them."""
    return [f"{i}\t{clip_line(lines[i - 1], MAX_LINE_CHARS)}" for i in range(start, end + 1)]


def _chunk_label(ch: dict) -> str:
    if ch["symbol"] is None:
        return "(module code)" if ch["kind"] == "module" else "(lines)"
    indent = "  " if ch["kind"] == "method" else ""
    word = {"function": "def ", "class": "class ", "method": "def "}.get(ch["kind"], "")
    return f"{indent}{word}{ch['symbol']}"


def _overlapping(chunks: list[dict], ids: list[str], lo: int, hi: int) -> list[str]:
    return [f"L{c['start']}-{c['end']} {i}" for c, i in zip(chunks, ids) if c["start"] <= hi and c["end"] >= lo]


def _symbols_in(chunked: Chunked, lo: int, hi: int, limit: int = 8) -> str:
    names = [s.name for s in chunked.symbols if s.start <= hi and s.end >= lo]
    if not names:
        return ""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return f" (symbols {', '.join(names[:limit])}{more})"


def _compose(header: list[str], body: list[str], footer_for, budget: int, fallback: str) -> str:
    """header + as many body lines as fit + footer_for(kept), within budget."""

    def build(k: int) -> str:
        return "\n".join(header + body[:k] + footer_for(k))

    text = build(len(body))
    if count(text) <= budget:
        return text
    reserve = count("\n".join(header) + "\n") + count("\n".join(footer_for(0)) + "\n")
    kept, _ = fit_rows(body, budget - reserve)
    k = len(kept)
    while k > 0 and count(build(k)) > budget:
        k -= 1
    text = build(k)
    if count(text) > budget:
        text = fallback
    return finish(text, budget)


async def read(svc, path, lines=None, symbol=None, with_ids=None, budget_tokens=None) -> str:
    budget = check_budget(budget_tokens)
    if symbol is None and isinstance(lines, str) and _SYMBOL.fullmatch(lines.strip()):
        lines, symbol = None, lines
    rng, asked = parse_lines(lines), None
    if symbol is not None and (not isinstance(symbol, str) or not symbol.strip()):
        raise BadRequest('symbol must be a name like "parse" or "Class.method"')
    if rng is not None and symbol is not None:
        raise BadRequest("give lines or symbol, not both")
    if with_ids is not None and not isinstance(with_ids, bool):
        raise BadRequest("with_ids must be true or false")
    full, shown = resolve_path(svc, path)
    loaded = await anyio.to_thread.run_sync(load_file, full, shown)
    chunked = loaded.chunked
    if symbol is not None:
        if chunked.language != "python":
            why = (
                f"it does not parse ({chunked.parse_error})"
                if chunked.parse_error
                else "symbols are found in Python files only"
            )
            raise BadRequest(f'{shown}: no symbols, {why}; use lines="START-END"')
        sym = chunked.find_symbol(symbol.strip())
        if sym is None:
            names = [s.name for s in chunked.symbols]
            listed = ", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else "")
            raise NotFound(f"{shown}: no symbol {symbol!r}; symbols: {listed or '(none)'}")
        rng, asked, symbol = (sym.start, sym.end), symbol.strip(), sym.name
    if not chunked.chunks:
        return finish(f"{shown}: empty file (0 bytes of text); nothing stored", budget)
    reply = await svc.call(
        protocol.PutFile(
            path=full,
            mtime=loaded.mtime_ns,
            size=loaded.size,
            chunks=chunked.chunks,
            session_id=svc.session_id,
        )
    )
    ids = [i or "(forgotten)" for i in reply.get("chunk_ids") or []]
    if len(ids) != len(chunked.chunks):  # reused chunks come back by start line; map them so
        ids = await svc.run_sync(_ids_by_start, svc, reply.get("root_id"), chunked.chunks, ids)
    view = View(shown, loaded, ids, reply, bool(with_ids), budget)
    if rng is not None:
        # The trailer names the symbol only when it says more than was asked
        # (a bare method name resolved to its class); its lines are on screen.
        return await svc.run_sync(_slice, view, rng, symbol, symbol if symbol and symbol != asked else "")
    return await svc.run_sync(_whole, view)


class View:
    """What one read answer is built from. Native Read shows numbered lines
    and nothing else; memtree adds one trailer line with the file's node id
    (a changed file says so), and chunk ids only when asked (with_ids)."""

    def __init__(self, shown: str, loaded: Loaded, ids: list[str], reply: dict, with_ids: bool, budget: int):
        self.shown, self.loaded, self.ids, self.with_ids, self.budget = shown, loaded, ids, with_ids, budget
        self.chunked, self.n, self.root = loaded.chunked, loaded.chunked.line_count, reply.get("root_id")
        old = len(reply.get("superseded") or [])
        self.changed = bool(old and reply.get("changed"))
        state = "unchanged, chunks reused" if reply.get("reused") else "chunks stored"
        if old:
            state = (
                f"changed since the last read, {old} old chunks superseded"
                if self.changed
                else f"{old} earlier capture(s) of this version superseded by these chunks"
            )
        parse = f" (does not parse: {self.chunked.parse_error})" if self.chunked.parse_error else ""
        self.head = (
            f"{shown}: {self.n} lines, {loaded.size} bytes, {self.chunked.language}{parse}; "
            f"file node {self.root}; {state}"
        )

    def trailer(self, what: str = "") -> str:
        """Only what the model cannot see in the numbered lines: the node id,
        and ``what`` (a resolved symbol name, where the file ends) when it says more."""
        notes = [
            w
            for w in (
                what,
                "changed since the last read" if self.changed else "",
                f"does not parse ({self.chunked.parse_error}), no symbols" if self.chunked.parse_error else "",
            )
            if w
        ]
        return f"[{'; '.join(notes + [f'memtree {self.root}'])}]"


def _slice(v: View, rng: tuple[int, int], symbol, resolved: str = "") -> str:
    lo, hi = rng
    if lo > v.n:
        raise BadRequest(f"{v.shown} has {v.n} lines; lines start at {lo}")
    hi = min(hi, v.n)
    what = f"symbol {symbol} " if symbol else ""
    # Past the file's end the model cannot tell from the numbers where it ends.
    note = "; ".join(w for w in (resolved, f"file ends at {v.n}" if rng[1] > v.n else "") if w)
    header = []
    if v.with_ids:
        header = [v.head, f"{what}lines {lo}-{hi}; chunks: {', '.join(_overlapping(v.chunked.chunks, v.ids, lo, hi))}"]
    body = _numbered(v.loaded.lines, lo, hi)

    def footer(k: int) -> list[str]:
        if k >= len(body):
            return [v.trailer(note)]
        a = lo + k
        return [
            f"[left out for budget_tokens={v.budget}: lines {a}-{hi}{_symbols_in(v.chunked, a, hi)}; "
            f"get them with {call_repr('read', path=v.shown, lines=f'{a}-{hi}')}]"
        ]

    fallback = f"[budget_tokens={v.budget} too small to show {v.shown} lines {lo}-{hi}; {call_repr('read', path=v.shown, lines=f'{lo}-{hi}', budget_tokens=2000)}]"
    return _compose(header, body, footer, v.budget, fallback)


def _whole(v: View) -> str:
    """The whole file as native Read shows it when it fits; else its outline
    (symbols with line ranges) and as much of its start as fits."""
    body = _numbered(v.loaded.lines, 1, v.n)
    if not v.with_ids:
        text = "\n".join(body + [v.trailer()])  # the numbers show it is whole
        if count(text) <= v.budget:
            return text
    return _outline(v, body)


def _outline(v: View, body: list[str]) -> str:
    chunked, n = v.chunked, v.n
    if v.with_ids:
        entries = [f"{c['start']}-{c['end']}\t{_chunk_label(c)}\t{i}" for c, i in zip(chunked.chunks, v.ids)]
        header = [v.head, f"outline ({len(entries)} chunks: lines, symbol, node id):"]
    else:
        entries = [f"{c['start']}-{c['end']}\t{_chunk_label(c)}" for c in chunked.chunks]
        parse = f", does not parse: {chunked.parse_error}" if chunked.parse_error else ""
        header = [f"{v.shown}: {n} lines, {chunked.language}{parse}; memtree {v.root}; outline (lines, symbol):"]
    fixed = count("\n".join(header) + "\n")
    share = int((v.budget - fixed) * OUTLINE_SHARE)
    shown_entries, _ = fit_rows(entries, max(0, share))
    if len(shown_entries) < len(entries):
        rest = chunked.chunks[len(shown_entries) :]
        shown_entries.append(
            f"[outline cut: {len(entries) - len(shown_entries)} more chunks, lines "
            f"{rest[0]['start']}-{n}{_symbols_in(chunked, rest[0]['start'], n, 4)}]"
        )
    header = header + shown_entries

    def footer(k: int) -> list[str]:
        if k >= len(body):
            return []
        a = k + 1
        return [
            f"[left out for budget_tokens={v.budget}: lines {a}-{n}{_symbols_in(chunked, a, n, 4)}; "
            f'get them with {call_repr("read", path=v.shown, lines=f"{a}-{n}")} or read(path=..., lines="<symbol>")]'
        ]

    fallback = f"[budget_tokens={v.budget} too small for the outline of {v.shown}; {call_repr('read', path=v.shown, budget_tokens=2000)}]"
    return _compose(header, body, footer, v.budget, fallback)
