"""Split a file into chunks (the nodes the read tool stores) and list its symbols.

Python files are cut by symbol with ``ast``: top-level functions, classes, and
the methods of a class as ``Class.method``; module-level code between symbols
and class-level code between methods become chunks too, so the chunks
partition the file: every line belongs to exactly one chunk. Comments and
blank lines above a symbol go with it. A file that does not parse, and any
other file, is cut into fixed windows. A symbol longer than one window is
split into window-sized parts that keep its name.

Pure functions, no I/O: the read tool runs them in a worker thread. The last
few Python texts chunked are remembered (``_Memo``): Claude Code reads a long
file in slices, and each slice is cut by the symbols of the whole file on
disk, which ``ast`` took 15-25 ms to parse at 50-70 KB, once per slice.
"""

from __future__ import annotations

import ast
import re
import threading
import warnings
from collections import OrderedDict

WINDOW_LINES = 200
# Python's own line ends; str.splitlines() also splits on \f, \x1c, U+2028 ...,
# which would shift line numbers away from what ast and editors report.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


class Symbol:
    """A named line range for the outline and for ``read(symbol=...)``."""

    __slots__ = ("name", "kind", "start", "end")

    def __init__(self, name: str, kind: str, start: int, end: int):
        self.name, self.kind, self.start, self.end = name, kind, start, end

    def __repr__(self) -> str:
        return f"Symbol({self.name!r}, {self.kind}, {self.start}-{self.end})"


class Chunked:
    """The result of chunking one file: chunks (PutFile dicts) and symbols."""

    __slots__ = ("language", "chunks", "symbols", "line_count", "parse_error")

    def __init__(
        self, language: str, chunks: list[dict], symbols: list[Symbol], line_count: int, parse_error: str | None = None
    ):
        self.language = language
        self.chunks = chunks
        self.symbols = symbols
        self.line_count = line_count
        self.parse_error = parse_error

    def find_symbol(self, name: str) -> Symbol | None:
        """By full name ("Class.method"), else by a bare method name when only
        one class has it (what a grep hit shows: ``def resolve_command(``)."""
        for sym in self.symbols:
            if sym.name == name:
                return sym
        tail = [sym for sym in self.symbols if sym.name.endswith("." + name)]
        return tail[0] if len(tail) == 1 else None


def split_lines(text: str) -> list[str]:
    """Lines with their endings, numbered as ast and editors number them."""
    return _LINE.findall(text)


def _chunk(lines: list[str], start: int, end: int, symbol: str | None, kind: str) -> dict:
    return {"start": start, "end": end, "symbol": symbol, "kind": kind, "content": "".join(lines[start - 1 : end])}


def _windowed(lines: list[str], start: int, end: int, symbol: str | None, kind: str) -> list[dict]:
    out = []
    for s in range(start, end + 1, WINDOW_LINES):
        out.append(_chunk(lines, s, min(end, s + WINDOW_LINES - 1), symbol, kind))
    return out


def chunk_windows(lines: list[str]) -> list[dict]:
    if not lines:
        return []
    return _windowed(lines, 1, len(lines), None, "window")


def _first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _units(
    body: list[ast.stmt], lo: int, hi: int, prefix: str, gap_symbol: str | None, gap_kind: str
) -> list[tuple[int, int, str | None, str, ast.stmt | None]]:
    """Cut lines lo..hi into (start, end, symbol, kind, node) units: one per
    def (or class at top level), one per run of other statements."""
    units: list[list] = []
    for stmt in body:
        is_def = isinstance(stmt, _DEFS) or (prefix == "" and isinstance(stmt, ast.ClassDef))
        if is_def:
            kind = "class" if isinstance(stmt, ast.ClassDef) else ("method" if prefix else "function")
            units.append([_first_line(stmt), stmt.end_lineno, prefix + stmt.name, kind, stmt])
        elif units and units[-1][4] is None:
            units[-1][1] = stmt.end_lineno  # extend the current run of plain statements
        else:
            units.append([_first_line(stmt), stmt.end_lineno, gap_symbol, gap_kind, None])
    if not units:
        return [(lo, hi, gap_symbol, gap_kind, None)] if lo <= hi else []
    # Give the lines between units (comments, blanks) to the unit below them,
    # and the lines after the last one to it, so the units tile lo..hi.
    units[0][0] = lo
    for prev, cur in zip(units, units[1:]):
        cur[0] = prev[1] + 1
    units[-1][1] = max(units[-1][1], hi)
    return [tuple(u) for u in units]


class _Memo:
    """Chunked results by their text, least recently used out first, holding at
    most ``max_chars`` characters of text (a big file is never kept)."""

    def __init__(self, max_chars: int):
        self.max_chars, self.held = max_chars, 0
        self.items: OrderedDict[str, Chunked] = OrderedDict()
        self.lock = threading.Lock()  # the front chunks in worker threads

    def get(self, text: str) -> Chunked | None:
        with self.lock:
            hit = self.items.get(text)
            if hit is None:
                return None
            self.items.move_to_end(text)
        # Fresh chunk dicts: a caller may add to its own.
        return Chunked(hit.language, [dict(c) for c in hit.chunks], list(hit.symbols), hit.line_count, hit.parse_error)

    def put(self, text: str, chunked: Chunked) -> None:
        if len(text) > self.max_chars // 4:
            return
        with self.lock:
            if text in self.items:
                return
            self.items[text] = chunked
            self.held += len(text)
            while self.held > self.max_chars:
                old, _ = self.items.popitem(last=False)
                self.held -= len(old)


_MEMO = _Memo(2_000_000)


def chunk_python(text: str, lines: list[str] | None = None) -> Chunked:
    hit = _MEMO.get(text)
    if hit is not None:
        return hit
    chunked = _chunk_python(text, split_lines(text) if lines is None else lines)
    _MEMO.put(text, chunked)
    return _MEMO.get(text) or chunked


def _chunk_python(text: str, lines: list[str]) -> Chunked:
    try:
        # The user's code is data here: its invalid escape sequences are not our warnings.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            tree = ast.parse(text)
    except (SyntaxError, ValueError) as e:  # ValueError: NUL bytes in source
        line = getattr(e, "lineno", None)
        where = f" at line {line}" if line else ""
        return Chunked(
            "text", chunk_windows(lines), [], len(lines), f"{type(e).__name__}{where}: {e.args[0] if e.args else e}"
        )
    except (RecursionError, MemoryError):  # a deeply nested expression overflows the parser's stack
        return Chunked("text", chunk_windows(lines), [], len(lines), "nested too deeply for the Python parser")
    n = len(lines)
    chunks: list[dict] = []
    symbols: list[Symbol] = []
    for start, end, symbol, kind, node in _units(tree.body, 1, n, "", None, "module"):
        if isinstance(node, ast.ClassDef):
            symbols.append(Symbol(node.name, "class", _first_line(node), node.end_lineno))
            chunks.extend(_class_chunks(node, lines, start, end, symbols))
        else:
            if node is not None:
                symbols.append(Symbol(symbol, kind, _first_line(node), node.end_lineno))
            chunks.extend(_windowed(lines, start, end, symbol, kind))
    return Chunked("python", chunks, symbols, n)


def _class_chunks(cls: ast.ClassDef, lines: list[str], start: int, end: int, symbols: list[Symbol]) -> list[dict]:
    """A class: its header (and class-level code) as ``Class`` chunks, each
    method as a ``Class.method`` chunk, together tiling start..end."""
    methods = [s for s in cls.body if isinstance(s, _DEFS)]
    if not methods:
        return _windowed(lines, start, end, cls.name, "class")
    header_end = _first_line(methods[0]) - 1
    # The header: the class line, its docstring and attributes up to the first method.
    header_stmts = [s for s in cls.body if s.end_lineno <= header_end]
    body_stmts = [s for s in cls.body if s.end_lineno > header_end]
    out: list[dict] = []
    if header_stmts:
        last_header = max(s.end_lineno for s in header_stmts)
    else:  # the header may span lines (bases, keywords); it ends above the first method
        last_header = max(cls.lineno, header_end)
    out.extend(_windowed(lines, start, last_header, cls.name, "class"))
    for u_start, u_end, symbol, kind, node in _units(
        body_stmts, last_header + 1, end, cls.name + ".", cls.name, "class"
    ):
        if node is not None:
            symbols.append(Symbol(symbol, kind, _first_line(node), node.end_lineno))
        out.extend(_windowed(lines, u_start, u_end, symbol, kind))
    return out


def chunk_text(path: str, text: str, lines: list[str] | None = None) -> Chunked:
    """Chunk ``text`` (the contents of ``path``) by symbol or by window."""
    lines = split_lines(text) if lines is None else lines
    if path.endswith((".py", ".pyi")):
        return chunk_python(text, lines)
    return Chunked("text", chunk_windows(lines), [], len(lines))


def _same_lines(a: list[str], b: list[str]) -> bool:
    return len(a) == len(b) and all(x.rstrip("\r\n") == y.rstrip("\r\n") for x, y in zip(a, b))


def chunk_read(
    path: str, content: str, start: int = 1, whole: str | None = None, min_bytes: int = 0, symbol_min_bytes: int = 0
) -> list[dict]:
    """The chunks of what a native Read returned: ``content`` is lines
    ``start``.. of ``path`` (a whole file, an offset/limit slice, or a prefix
    cut at a token cap), numbered from ``start``.

    Cut by the same rule as the whole file (``chunk_text``): by the file's own
    symbols when ``whole`` (the file as it is on disk) holds exactly these
    lines at ``start``, so a slice or a prefix that ends inside a function is
    still cut where that function starts and ends; otherwise by the symbols of
    ``content`` itself (windows when it does not parse). Contents are always
    the Read's own lines. A chunk under ``min_bytes`` (the filter drops those),
    or a symbol's chunk under ``symbol_min_bytes``, joins its neighbour, so the
    chunks keep tiling the lines read; a joined chunk names all its symbols.
    """
    lines = split_lines(content)
    if not lines:
        return []
    end = start + len(lines) - 1
    base, shift = None, start - 1
    if whole is not None:
        whole_lines = split_lines(whole)
        if len(whole_lines) >= end and _same_lines(whole_lines[start - 1 : end], lines):
            base, shift = chunk_text(path, whole, whole_lines).chunks, 0
    if base is None:
        base = chunk_text(path, content, lines).chunks
    out = []
    for c in base:
        s, e = max(c["start"] + shift, start), min(c["end"] + shift, end)
        if s <= e:
            out.append(
                {
                    "start": s,
                    "end": e,
                    "symbol": c["symbol"],
                    "kind": c["kind"],
                    "content": "".join(lines[s - start : e - start + 1]),
                }
            )
    return merge_small(out, min_bytes, symbol_min_bytes) if min_bytes > 0 or symbol_min_bytes > 0 else out


def merge_small(chunks: list[dict], min_bytes: int, symbol_min_bytes: int = 0) -> list[dict]:
    """Adjacent chunks with each one under ``min_bytes`` (a symbol's chunk:
    under ``symbol_min_bytes``) joined to the next (the last to the one
    before); the bigger part names the result."""
    out: list[dict] = []
    carry: dict | None = None
    for c in chunks:
        if carry is not None:
            c = _join(carry, c)
            carry = None
        floor = min_bytes if c["kind"] == "window" else max(min_bytes, symbol_min_bytes)
        if len(c["content"].encode("utf-8", "replace")) < floor:
            carry = c
        else:
            out.append(c)
    if carry is not None:
        out.append(_join(out.pop(), carry) if out else carry)
    return out


def _join(a: dict, b: dict) -> dict:
    named = a if len(a["content"]) > len(b["content"]) else b
    symbols = [x for c in (a, b) for x in c.get("symbols") or ([c["symbol"]] if c["symbol"] else [])]
    out = {
        "start": a["start"],
        "end": b["end"],
        "symbol": named["symbol"],
        "kind": named["kind"],
        "content": a["content"] + b["content"],
    }
    if symbols != [named["symbol"]] and symbols:
        out["symbols"] = symbols  # every definition the joined chunk holds (a symbol query finds each)
    return out
