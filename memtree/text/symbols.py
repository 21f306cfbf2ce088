"""The definition around a line: what ``grep opts="context=symbol"`` shows
instead of a bare hit.

Python files use the ``ast`` symbols of memtree.text.chunking (``Class.method``,
exact ranges); any other file the line-scan outline of the rewrite previews
(memtree.capture.preview.outline), which knows the usual definition keywords
of indented and brace languages. The innermost definition wins: a hit in a
method names the method, not its class.
"""

from __future__ import annotations

from memtree.capture import preview
from memtree.text.chunking import Chunked


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
    for _indent, label, start, end in preview.outline([ln.rstrip("\r\n") for ln in lines]):
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


__all__ = ["Around", "definitions", "innermost"]
