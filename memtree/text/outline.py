"""Symbol outlines, from one place: the definitions of a file with their line
ranges. Python files use the ``ast`` symbols of memtree.text.chunking
(``Class.method``, exact ranges); any other file a line scan that knows the
usual definition keywords of indented and brace languages (``outline``), and
documents their headings (``headings``). The rewrite previews, the wrapped
tools and ``grep opts="context=symbol"`` all read them here.
"""

from __future__ import annotations

import re

from memtree.text.chunking import Chunked
from memtree.text.fit import clip_line

# Definition keywords by how a line starts (after indentation). Order matters:
# longer prefixes first.
_DEF_PREFIXES = (
    "async def ",
    "def ",
    "class ",  # Python
    "export default function ",
    "export async function ",
    "export function ",
    "async function ",
    "function ",
    "export default class ",
    "export abstract class ",
    "export class ",
    "abstract class ",
    "export interface ",
    "interface ",
    "export type ",
    "export enum ",
    "enum ",  # JS / TS
    "func ",  # Go
    "pub(crate) fn ",
    "pub async fn ",
    "pub fn ",
    "async fn ",
    "fn ",
    "pub struct ",
    "struct ",
    "pub enum ",
    "pub trait ",
    "trait ",
    "impl ",
    "pub mod ",
    "mod ",  # Rust
    "module ",
    "defmodule ",
    "defp ",  # Ruby / Elixir
)
_FIRST_WORDS = frozenset(p.split(" ", 1)[0] for p in _DEF_PREFIXES)  # cheap test before the prefixes
_UNDERLINES = frozenset("=-~^\"'`#*+:._")
_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.<>:")


def _name(rest: str) -> str:
    n = 0
    while n < len(rest) and rest[n] in _IDENT:
        n += 1
    return rest[:n].rstrip(":.")


def _declares(after: str) -> bool:
    """What follows a definition's name in code (``(``, ``:``, ``{``, ``extends`` ...),
    unlike prose in a docstring ("class is used ...")."""
    if after[:1] in ("(", ":", "<", "[", "{", ""):
        return True
    return after[:1] == " " and after.lstrip().startswith(
        ("{", "(", "extends", "implements", "=", "where", "for ", "struct", "interface", "do")
    )


def outline(lines: list[str]) -> list[tuple[int, str, int, int]]:
    """(indent, "keyword name", first line, last line) of each definition, 1-based.

    A definition ends before the next line of equal or lesser indentation that
    is not blank, a comment or a closing bracket (trailing blank
    lines trimmed); that covers indented and brace languages written the usual way.
    """
    found = []
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped or stripped.split(" ", 1)[0] not in _FIRST_WORDS:
            continue
        for prefix in _DEF_PREFIXES:
            if stripped.startswith(prefix):
                rest = stripped[len(prefix) :].lstrip()
                name = _name(rest)
                if name and _declares(rest[len(name) :]):
                    found.append((len(line) - len(stripped), clip_line(stripped.rstrip("{: "), 90), i))
                break
    out = []
    for indent, label, start in found:
        end = len(lines) - 1
        for j in range(start + 1, len(lines)):
            s = lines[j].lstrip()
            if s and len(lines[j]) - len(s) <= indent and not s.startswith(("#", "//", ")", "]", "}", "*")):
                end = j - 1
                break
        while end > start and not lines[end].strip():
            end -= 1
        out.append((indent, label, start + 1, end + 1))
    return out


def _underlined(lines: list[str]) -> list[tuple[int, str, int]]:
    """reStructuredText (and setext) headings: a title over a line of one repeated
    mark at least as long; the order in which marks first appear is the level."""
    marks: list[str] = []
    found = []
    for i in range(1, len(lines)):
        u, title = lines[i].rstrip(), lines[i - 1].strip()
        if (
            title
            and u
            and u[0] in _UNDERLINES
            and u == u[0] * len(u)
            and len(u) >= max(3, len(title))
            and not lines[i - 1][:1].isspace()
            and title[0] not in _UNDERLINES
        ):
            if u[0] not in marks:
                marks.append(u[0])
            found.append((marks.index(u[0]) + 1, title, i - 1))
    return found


_ATX = re.compile(r"(#{1,6})(?:[ \t]|$)")
_FENCES = ("```", "~~~")


def _atx(lines: list[str]) -> list[tuple[int, str, int]]:
    """Markdown ``#`` headings (one to six marks, then a blank or the line's end),
    not the ``#`` comments of a fenced code block, nor a ``#!`` or ``#tag`` line."""
    found, fence = [], None
    for i, line in enumerate(lines):
        opener = line.lstrip()[:3]
        if fence is None and opener in _FENCES:
            fence = opener
        elif fence is not None:
            if opener == fence:
                fence = None
        elif m := _ATX.match(line):
            found.append((len(m.group(1)), line.strip(), i))
    return found


def headings(lines: list[str]) -> list[tuple[int, str, int, int]]:
    """Document headings (Markdown ``#``, else underlined as in reStructuredText)
    as an outline: a section runs to the next heading of its level or higher."""
    found = _atx(lines) or _underlined(lines)
    out = []
    for k, (level, label, start) in enumerate(found):
        end = next((f[2] - 1 for f in found[k + 1 :] if f[0] <= level), len(lines) - 1)
        out.append(((level - 1) * 2, clip_line(label, 80), start + 1, end + 1))
    return out


class Around:
    __slots__ = ("name", "start", "end")

    def __init__(self, name: str, start: int, end: int):
        self.name, self.start, self.end = name, start, end

    @property
    def size(self) -> int:
        return self.end - self.start + 1


def definitions(chunked: Chunked, lines: list[str]) -> list[Around]:
    """Every definition of one file with its 1-based line range."""
    if chunked.language == "python" and chunked.parse_error is None:
        return [Around(s.name, s.start, s.end) for s in chunked.symbols]
    found = []
    for _indent, label, start, end in outline([ln.rstrip("\r\n") for ln in lines]):
        words = label.split("(", 1)[0].split("<", 1)[0].split()
        if words:
            found.append(Around(words[-1], start, end))
    return found


def innermost(defs: list[Around], line: int) -> Around | None:
    """The smallest definition holding ``line``, or None at module level."""
    best = None
    for d in defs:
        if d.start <= line <= d.end and (best is None or d.size < best.size):
            best = d
    return best


__all__ = ["Around", "definitions", "innermost", "outline", "headings"]
