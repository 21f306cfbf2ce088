"""Code-aware text preparation for the static embedding, the same on both sides.

A static model pools one row per token, so what reaches the pooling is all
that counts: ``list_directory`` tokenises as ``list``, ``_``, ``directory``
(the last a word-piece, not the word a query says), ``(self, path):`` adds
four rows of punctuation and ``self`` that every method shares. Here every
identifier is split into its words (snake_case, camelCase, ``HTTPServer``,
dotted names), words are lower-cased, and punctuation, Python keywords and
boilerplate names are dropped, so a chunk and a question in plain words pool
over the same vocabulary. Chunks and queries go through the same function
(the provider calls it in ``embed``), so a vector never mixes two preparations.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
# camelCase / PascalCase / acronym boundaries: HTTPServer -> HTTP Server, parseURL2 -> parse URL 2
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

# Python keywords and the names nearly every chunk carries: they say nothing
# about what this code does, only that it is Python. Builtin names (``len``,
# ``str``, ``dict``) stay: ``__len__`` and ``__str__`` differ by nothing else.
DROP = frozenset(
    """
    def class return self cls none true false import from as if elif else for while in is not and or
    with try except finally raise pass lambda yield async await break continue global nonlocal del assert
    args kwargs isinstance noqa param rtype
    """.split()
)


def words(text: str) -> list[str]:
    """The lower-cased words of ``text``, identifiers split, boilerplate dropped."""
    out = []
    for tok in _WORD.findall(text):
        for part in _CAMEL.findall(tok) if not tok.isdigit() else (tok,):
            w = part.lower()
            if w not in DROP and (len(w) > 1 or w.isdigit()):
                out.append(w)
    return out


def prepare(text: str) -> str:
    """``text`` as the embedding sees it: its words, space-separated (empty
    when nothing is left, which the provider embeds as a zero vector)."""
    return " ".join(words(text))
