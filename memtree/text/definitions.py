"""Where a text defines a name: the one place for what counts as a definition.

Two precisions. ``DEF_PHRASE`` finds candidates: ``def`` or ``class`` before a
name anywhere on a line, as the FTS phrase "def name" matched before the store
kept an index of them (schema m009): ``public class Job``, ``case class``,
``export default class``, ``private def``. ``defines`` decides ranking's boost:
a line that starts with the definition, as Python writes one.
"""

from __future__ import annotations

import re

import orjson

DEF_PHRASE = re.compile(r"(?<![A-Za-z0-9_])(?:def|class)[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
SQL_FUNCTION = "memtree_defined"


def folded_counts(text: str | None) -> dict[str, int]:
    """How many times ``text`` defines each name (``DEF_PHRASE``), case
    folded as FTS5 folds it: a search for "session" finds ``class Session``."""
    out: dict[str, int] = {}
    if text and ("def" in text or "class" in text):
        for name in DEF_PHRASE.findall(text):
            key = name.lower()
            out[key] = out.get(key, 0) + 1
    return out


def defines(text: str, name: str) -> bool:
    """Whether a line of ``text`` starts by defining ``name`` (``def``, ``async def``, ``class``)."""
    return _def_line(name).search(text) is not None


def _def_line(name: str) -> re.Pattern:
    return re.compile(r"^\s*(?:async\s+def|def|class)\s+" + re.escape(name) + r"\b", re.MULTILINE)


def _sql_defined(text) -> str | None:
    """``memtree_defined(content)``: folded_counts as a JSON object, NULL when
    none (json_each of NULL is no row), for the index's triggers."""
    counts = folded_counts(text) if isinstance(text, str) else {}
    return orjson.dumps(counts).decode() if counts else None


def register(conn) -> None:
    """``memtree_defined`` on ``conn`` (deterministic: SQLite may call it from triggers)."""
    conn.create_scalar_function(SQL_FUNCTION, _sql_defined, 1, deterministic=True)
