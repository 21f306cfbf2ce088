"""Search: keyword (FTS5 BM25) now; semantic and hybrid once embeddings land.

User input never reaches FTS5 as syntax: every word becomes a quoted string
(inner quotes doubled), joined with OR so BM25 ranks nodes matching more
words first. Filters are validated here and applied inside the SQL.
"""

from __future__ import annotations

import re
import time

from memtree.errors import BadRequest
from memtree.store import reads
from memtree.store.live import ALL_STATUSES, check_statuses

MODES = ("keyword", "semantic", "hybrid")
KINDS = ("session", "file", "file_chunk", "tool_output", "summary", "note", "observation")
FILTER_KEYS = ("status", "kind", "since", "until", "parent_id", "session_id")
MAX_LIMIT = 100
MAX_TERMS = 32
_DURATION = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def fts_query(query: str) -> str:
    """A MATCH expression that can never be an FTS5 syntax error."""
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string")
    words = [w for w in query.split() if any(ch.isalnum() for ch in w)][:MAX_TERMS]
    if not words:
        raise BadRequest("query has no searchable words (letters or digits)")
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def parse_time(value, name: str, now_ms: int | None = None) -> int:
    """Epoch ms from epoch ms (int), a duration ago ("30m", "2h", "7d") or ISO-8601."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if isinstance(value, bool):
        raise BadRequest(f"{name} must be epoch milliseconds, a duration like '2h', or an ISO-8601 time")
    if isinstance(value, int):
        if value < 0:
            raise BadRequest(f"{name} must not be negative, got {value}")
        return value
    if isinstance(value, str):
        m = _DURATION.match(value.strip())
        if m:
            return now_ms - int(m.group(1)) * _UNIT_MS[m.group(2)]
        from datetime import datetime, timezone

        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            pass
        else:
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            return int(dt.timestamp() * 1000)
    raise BadRequest(f"{name} must be epoch milliseconds, a duration like '2h', or an ISO-8601 time; got {value!r}")


def str_list(value, name: str, allowed=None) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{name} must be a string or a non-empty list of strings")
    if allowed:
        bad = [v for v in value if v not in allowed]
        if bad:
            raise BadRequest(f"unknown {name} {bad[0]!r}; expected one of {', '.join(allowed)}")
    return list(dict.fromkeys(value))


def check_filters(filters) -> dict:
    """Validated filters; raises BadRequest naming the bad key."""
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise BadRequest("filters must be an object with keys " + ", ".join(FILTER_KEYS))
    unknown = [k for k in filters if k not in FILTER_KEYS]
    if unknown:
        raise BadRequest(f"unknown filter {unknown[0]!r}; expected one of {', '.join(FILTER_KEYS)}")
    out: dict = {}
    if filters.get("status") is not None:
        out["status"] = list(check_statuses(str_list(filters["status"], "filters.status", ALL_STATUSES)))
    if filters.get("kind") is not None:
        out["kind"] = str_list(filters["kind"], "filters.kind", KINDS)
    for key in ("since", "until"):
        if filters.get(key) is not None:
            out[key] = parse_time(filters[key], f"filters.{key}")
    for key in ("parent_id", "session_id"):
        if filters.get(key) is not None:
            if not isinstance(filters[key], str) or not filters[key]:
                raise BadRequest(f"filters.{key} must be a non-empty string")
            out[key] = filters[key]
    return out


def check_limit(limit, default: int = 10) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be an integer between 1 and {MAX_LIMIT}, got {limit!r}")
    return limit


def check_mode(mode) -> str:
    mode = "keyword" if mode is None else mode
    if mode not in MODES:
        raise BadRequest(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode != "keyword":
        raise BadRequest(f"search mode {mode!r} is not available yet (no embeddings are stored); use mode 'keyword'")
    return mode


def keyword(conn, query: str, filters: dict, limit: int) -> list[tuple[dict, float, str]]:
    return reads.search_fts(conn, fts_query(query), filters, limit)
