"""What leads the SessionStart brief after ``compact`` or ``resume``: the session's last
compaction summary and what the session touched since.

On 2.1.197 the SessionStart ``compact`` hook runs before PostCompact (verified:
~0.5 s earlier), so the summary of the compaction that just happened is not in
the store yet, nor in the transcript (its ``isCompactSummary`` message is dated
before SessionStart but written after the hooks: a hook that waited 1.5 s for it
saw nothing); the model gets it as the conversation's first message anyway. So
after ``compact`` the block leads with what the session touched (what a summary
tends to drop), plus the newest summary already kept (an earlier compaction);
after ``resume`` with the summary, from the transcript (read from its end,
bounded) or the store's copy (kept by the PostCompact hook). Framed as recalled data, neutralised, redacted, at most
``BUDGET_TOKENS``. Standard library only (the SessionStart hook runs this).
"""

from __future__ import annotations

import json
import os

from memtree import tokens
from memtree.gate import redact_text
from memtree.recall import render
from memtree.store import compactions

BUDGET_TOKENS = 900
TAIL_BYTES = 4 * 1024 * 1024  # how much of a transcript's end is searched for the summary
TOUCHED = 12
JUST_NOW_MS = 60_000


def _ts(value) -> int:
    """Epoch ms of a transcript timestamp (ISO 8601, ``Z``); 0 when unreadable. (Not
    memtree.ops.transcripts.parse_ts: recall does not import ops.)"""
    import datetime

    try:
        return int(datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


def _from_transcript(path) -> tuple[str, int] | None:
    """(text, epoch ms) of the newest compaction summary in the transcript's last TAIL_BYTES."""
    if not isinstance(path, str) or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - TAIL_BYTES))
        lines = f.read(TAIL_BYTES).split(b"\n")
    for raw in reversed(lines):
        if b'"isCompactSummary"' not in raw:
            continue
        try:
            e = json.loads(raw)
        except ValueError:
            continue
        msg = e.get("message") if isinstance(e, dict) and e.get("isCompactSummary") else None
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
        if isinstance(content, str) and content.strip():
            return content, _ts(e.get("timestamp"))
    return None


def _per_read(items: list[dict]) -> list[dict]:
    """A native Read (one item per capture, compactions.touched) shown with
    the range the Read covered, not its chunk's."""
    out = []
    for item in items:
        m = item["meta"]
        rng = m.get("read")
        if item["kind"] == "file_chunk" and isinstance(rng, list) and len(rng) == 2:
            item = {**item, "meta": {**m, "start": rng[0], "end": rng[1]}}
        out.append(item)
    return out


def _line(item: dict, root: str | None, after: bool) -> str:
    m, mark = item["meta"], "* " if after else "- "
    if item["kind"] == "file_chunk":
        path = str(m.get("path") or "?")
        if root and path.startswith(root.rstrip("/") + "/"):
            path = path[len(root.rstrip("/")) + 1 :]
        return f"{mark}read {path} L{m.get('start', '?')}-{m.get('end', '?')} ({item['id']})"
    if str(m.get("tool")) == "Bash":
        code = f" exit {m['exit']}" if isinstance(m.get("exit"), int) else ""
        return f"{mark}ran `{render.one_line(str(m.get('command', '')), 100)}`{code} ({item['id']})"
    return f"{mark}searched {render.one_line(repr(m.get('pattern', '')), 80)} ({item['id']})"


def lead(
    conn,
    session_id: str | None,
    transcript_path,
    now_ms: int,
    root: str | None = None,
    budget: int = BUDGET_TOKENS,
    compacting: bool = False,
) -> str | None:
    """The block that leads the brief, or None when the session has no compaction summary."""
    if not session_id:
        return None
    found = _from_transcript(transcript_path)
    if compacting and found and found[1] >= now_ms - JUST_NOW_MS:
        found = None  # this compaction's own summary (if already written): the conversation opens with it
    if found is None and conn is not None:
        stored = compactions.latest_summary(conn, session_id)
        found = (stored[1], stored[2]) if stored else None
    items = _per_read(compactions.touched(conn, session_id, TOUCHED)) if conn is not None else []
    if found is None and not (compacting and items):
        return None
    summary, at = found if found else ("", now_ms)
    if compacting:
        head = (
            "This session was just compacted (Claude Code's summary opens the conversation); what it touched, "
            "newest first (memtree recall ids=<id> shows one)"
            + (f"; then memtree's copy of an earlier summary, {render.age(at, now_ms)}:" if found else ":")
        )
    else:
        head = (
            f"This session was compacted {render.age(at, now_ms)}; its summary, then what the session touched "
            f"(newest first; * = after the summary; memtree recall ids=<id> shows one):"
        )
    rest = "\n".join(_line(i, root, bool(found) and not compacting and i["created_at"] > at) for i in items)
    room = budget - tokens.count(head) - tokens.count(rest) - tokens.count(render.recalled("", 'kind="compaction"')) - 4
    summary = tokens.fit(summary, max(room, budget // 3))
    parts = (head, rest, summary) if compacting else (head, summary, rest)
    body = redact_text(render.neutralise("\n".join(p for p in parts if p)))[0]
    text = render.recalled(body, 'kind="compaction"')
    return tokens.fit(text, budget) if tokens.count(text) > budget else text
