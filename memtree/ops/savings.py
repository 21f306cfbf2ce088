"""The savings meter: tokens memtree kept out of the context, and what it cost.

    kept  = sum over replaced native outputs and memtree's read/grep/bash answers of
            (tokens of the output stored - tokens of what the agent was shown)
    added = memtree's tool definitions x the session's model requests + the session brief
    net   = kept - added

All tokens by ``memtree.tokens``, all read back from what exists, nothing
recorded on the capture path: the session's Claude Code transcript
(memtree.ops.transcripts) gives what the agent was shown, requests (distinct
assistant messages), recall answers (``mcp__memtree__recall`` results) and the
brief (the SessionStart ``hook_additional_context`` attachment holding
memtree's text); the store gives what was stored. A replaced native output is
kept by Claude Code as the replacement (``toolUseResult``, verified on
2.1.197): shown = its text, stored = the capture of that ``tool_use_id``
(``capture_keys``; ``capture.maxBytes`` cuts very large outputs). A wrapped
tool's answer names its node (``memtree <id>``): stored = that node's text (a
file root: its live chunks), shown = the answer. Sessions memtree was not part
of (no capture, brief, recall or preview) are left out; a session whose
transcript is gone (``cleanupPeriodDays``) is not counted.
"""

from __future__ import annotations

import datetime
import json
import os
import re

from memtree import tokens

RECALL_TOOLS = ("mcp__memtree__recall", "mcp__plugin_memtree_memtree__recall")
# memtree's own read/grep/bash: the answer names the node holding the whole output ("memtree <id>")
WRAPPED_TOOLS = {
    f"{prefix}{t}": t
    for prefix in ("mcp__memtree__", "mcp__plugin_memtree_memtree__")
    for t in ("read", "grep", "bash")
}
_NODE = re.compile(r"memtree ([0-9A-HJKMNP-TV-Z]{26})\]")


def definition_tokens(listed: tuple[str, ...] | None = None) -> int:
    """Tokens of memtree's tool definitions as one request carries them."""
    from memtree.front import tool_table

    names = listed or tool_table.LISTED
    defs = [
        {
            "name": f"mcp__memtree__{n}",
            "description": tool_table.TOOLS[n].description,
            "input_schema": tool_table.input_schema(tool_table.TOOLS[n]),
        }
        for n in names
    ]
    # Counted as the context A/B counts a request's tools (eval/context_ab/run.py "defs"): 300 there
    # on 2026-12-01, exactly the difference between its memtree and native arms' tool lists.
    return tokens.count(json.dumps(defs, ensure_ascii=False))


def _shown_text(tool, response) -> str:
    """The text a (replaced) native output showed the agent: Read's content, Grep's, Bash's streams."""
    if not isinstance(response, dict):
        return ""
    if tool == "Read":
        file = response.get("file") if isinstance(response.get("file"), dict) else {}
        return file.get("content") if isinstance(file.get("content"), str) else ""
    if tool == "Grep":
        return response.get("content") if isinstance(response.get("content"), str) else ""
    return "\n".join(response[k] for k in ("stdout", "stderr") if isinstance(response.get(k), str) and response[k])


class SessionUse:
    __slots__ = ("requests", "recall_answers", "brief_tokens", "day", "wrapped", "previewed")

    def __init__(self):
        self.requests = self.recall_answers = self.brief_tokens = 0
        self.day = None
        self.wrapped: list[tuple[str, str, str]] = []  # (tool, shown text, node id) of wrapped-tool answers
        self.previewed: list[tuple[str, str]] = []  # (tool_use_id, shown text) of native outputs memtree replaced


def transcript_use(path: str) -> SessionUse:
    """Requests, recall answers and brief tokens of one session transcript (bounded line reads)."""
    from memtree.ops.transcripts import Session, _is_preview, _lines, parse_ts

    use, ids, recall_ids, wrapped_ids, native_ids = SessionUse(), set(), set(), {}, {}
    session = Session(path)
    for entry in _lines(path, session):
        ts = parse_ts(entry.get("timestamp"))
        if ts is not None and use.day is None:
            use.day = _day(ts)
        msg = entry.get("message") if isinstance(entry.get("message"), dict) else {}
        if entry.get("type") == "assistant" and isinstance(msg.get("id"), str):
            ids.add(msg["id"])
        for b in msg.get("content") if isinstance(msg.get("content"), list) else ():
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use" and b.get("name") in RECALL_TOOLS:
                recall_ids.add(b.get("id"))
            elif b.get("type") == "tool_use" and b.get("name") in WRAPPED_TOOLS:
                wrapped_ids[b.get("id")] = WRAPPED_TOOLS[b["name"]]
            elif b.get("type") == "tool_use" and b.get("name") in ("Read", "Grep", "Bash"):
                native_ids[b.get("id")] = b["name"]
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in native_ids:
                # an accepted replacement is what the transcript keeps as toolUseResult (verified, 2.1.197)
                response = entry.get("toolUseResult")
                if _is_preview(response):
                    use.previewed.append((b["tool_use_id"], _shown_text(native_ids[b["tool_use_id"]], response)))
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in recall_ids and not b.get("is_error"):
                use.recall_answers += 1
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in wrapped_ids and not b.get("is_error"):
                c = b.get("content")
                text = (
                    c
                    if isinstance(c, str)
                    else "\n".join(
                        x.get("text", "") for x in c or [] if isinstance(x, dict) and isinstance(x.get("text"), str)
                    )
                )
                found = _NODE.findall(text)
                if found:
                    use.wrapped.append((wrapped_ids[b["tool_use_id"]], text, found[-1]))
        att = entry.get("attachment") if isinstance(entry.get("attachment"), dict) else {}
        if att.get("type") == "hook_additional_context" and att.get("hookEvent") == "SessionStart":
            content = att.get("content")
            text = (
                "\n".join(c for c in content if isinstance(c, str)) if isinstance(content, list) else str(content or "")
            )
            if "memtree" in text:
                use.brief_tokens += tokens.count(text)
    use.requests = len(ids)
    return use


def _day(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d")


def meter(conn, transcript_files: list[str], listed: tuple[str, ...] | None = None) -> dict:
    """{"sessions": {sid: row}, "days": {day: row}, "total": row, "definition_tokens": n};
    a row: outputs, stored, shown, kept, requests, recall_answers, brief, added, net."""

    per_def = definition_tokens(listed)
    sessions: dict[str, dict] = {}

    def row(sid):
        return sessions.setdefault(
            sid,
            {
                "outputs": 0,
                "stored": 0,
                "shown": 0,
                "kept": 0,
                "requests": 0,
                "recall_answers": 0,
                "brief": 0,
                "added": 0,
                "net": 0,
                "day": None,
            },
        )

    by_file = {os.path.basename(p)[: -len(".jsonl")]: p for p in transcript_files}
    from memtree.store.savings import captured_sessions, captured_text, stored_text

    installed = captured_sessions(conn)
    for sid, path in by_file.items():
        use = transcript_use(path)
        if sid not in installed and not (use.wrapped or use.previewed or use.recall_answers or use.brief_tokens):
            continue  # a session memtree was not part of (before install): no cost, no saving
        r = row(sid)
        r["requests"], r["recall_answers"], r["brief"] = use.requests, use.recall_answers, use.brief_tokens
        r["day"] = r["day"] or use.day
        answers = [(stored_text(conn, node_id), shown_text) for _tool, shown_text, node_id in use.wrapped]
        answers += [(captured_text(conn, tool_use_id), shown_text) for tool_use_id, shown_text in use.previewed]
        for stored_full, shown_text in answers:
            stored = tokens.count(stored_full)
            if stored:
                shown = tokens.count(shown_text)
                r["outputs"] += 1
                r["stored"] += stored
                r["shown"] += shown
                r["kept"] += stored - shown
    days: dict[str, dict] = {}
    total = {
        k: 0 for k in ("outputs", "stored", "shown", "kept", "requests", "recall_answers", "brief", "added", "net")
    }
    for r in sessions.values():
        r["added"] = per_def * r["requests"] + r["brief"]
        r["net"] = r["kept"] - r["added"]
        d = days.setdefault(r["day"] or "?", {k: 0 for k in total} | {"sessions": 0})
        d["sessions"] += 1
        for k in total:
            d[k] += r[k]
            total[k] += r[k]
    return {"sessions": sessions, "days": dict(sorted(days.items())), "total": total, "definition_tokens": per_def}


FORMULA = (
    "kept = sum(stored output tokens - shown tokens) over replaced native outputs and memtree's "
    "read/grep/bash answers; "
    "added = tool definitions x requests + brief; net = kept - added (memtree.tokens)"
)


def summary_line(m: dict) -> str:
    t = m["total"]
    return (
        f"savings: {t['kept']:,} tokens kept out of the context ({t['outputs']} outputs previewed, "
        f"{t['stored']:,} stored - {t['shown']:,} shown), {t['recall_answers']} recall answers, "
        f"{t['added']:,} added ({m['definition_tokens']} definition tokens x {t['requests']} requests "
        f"+ {t['brief']:,} brief): net {t['net']:+,}"
    )


def load(paths) -> dict | None:
    """The meter for a project's store (None without one), transcripts found as the import finds them."""
    from memtree.ops import transcripts
    from memtree.store.db import open_read, schema_ready

    if not os.path.exists(paths.db):
        return None
    conn = open_read(paths.db)
    try:
        if not schema_ready(conn):
            return None
        from memtree.ops.claude_settings import registered_tools

        files = [f for d in transcripts.project_folders([paths.project_root]) for f in transcripts.session_files(d)]
        return meter(conn, files, registered_tools(paths.project_root))  # what `install --tools` chose
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    from memtree.paths import paths_for_cwd, start_dir

    p = argparse.ArgumentParser(prog="memtree stats", description="What memtree kept out of the context, per day.")
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument("--json", action="store_true", help="the figures as JSON")
    args = p.parse_args(argv)
    paths = paths_for_cwd(start_dir(args.project))
    m = load(paths)
    if m is None:
        print(f"memtree stats: no store yet for {paths.project_root}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(m, indent=2))
        return 0
    cols = ("sessions", "outputs", "stored", "shown", "kept", "recall_answers", "requests", "brief", "added", "net")
    heads = ("DAY", "SESSIONS", "REPLACED", "STORED", "SHOWN", "KEPT", "RECALLS", "REQUESTS", "BRIEF", "ADDED", "NET")
    table = [heads] + [(day, *(f"{d[c]:,}" for c in cols)) for day, d in m["days"].items()]
    t = m["total"]
    table.append(("total", f"{len(m['sessions'])}", *(f"{t[c]:,}" for c in cols[1:])))
    widths = [max(len(r[i]) for r in table) for i in range(len(heads))]
    for r in table:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print(summary_line(m))
    print(f"formula: {FORMULA}")
    return 0
