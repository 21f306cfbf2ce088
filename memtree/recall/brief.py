"""The session brief: what this project's store holds that matters now.

Given to the agent by the SessionStart hook (``startup``, ``resume``,
``compact``) so a new or compacted session can answer "what did we find
about X" from memtree instead of exploring again: recent notes, the files
and commands of the last sessions, and open threads (commands whose last
run failed). Current nodes only (live, or pending the filter's triage), framed as recalled data, at most
``BUDGET_TOKENS`` by memtree's one token counter, redacted. Standard library only.
"""

from __future__ import annotations

from memtree import tokens
from memtree.gate import redact_text
from memtree.recall import render
from memtree.store import recent_work

BUDGET_TOKENS = 1500
LINE_CHARS = 160


def _ranges(ranges: list, total) -> str:
    spans = sorted({(a, b) for a, b, _ in ranges})
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    text = ", ".join(f"L{a}-{b}" for a, b in merged[:4]) + (" …" if len(merged) > 4 else "")
    return text + (f" of {total}" if isinstance(total, int) else "")


def _mark(item: dict, session_id: str | None, now_ms: int) -> str:
    age = render.age(item["created_at"] or 0, now_ms)
    return f"{age}, this session" if session_id and item.get("session_id") == session_id else age


def _commands(outputs: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """(latest run of each distinct command, latest of each search, open threads)."""
    cmds, greps, latest_exit = {}, {}, {}
    for o in outputs:  # newest first
        m, tool = o["meta"], str(o["meta"].get("tool", "")).lower()
        if tool == "bash" and isinstance(m.get("command"), str):
            key = " ".join(m["command"].split())
            cmds.setdefault(key, o)
            latest_exit.setdefault(key, m.get("exit"))
        elif tool == "grep" and isinstance(m.get("pattern"), str):
            greps.setdefault((m["pattern"], m.get("path") or ""), o)
    open_threads = [cmds[k] for k, code in latest_exit.items() if isinstance(code, int) and code != 0]
    return list(cmds.values()), list(greps.values()), open_threads


def _short(path, root: str | None) -> str:
    """Project-relative when inside the project (shorter), else as stored."""
    if not isinstance(path, str) or not root or not path.startswith(root.rstrip("/") + "/"):
        return str(path)
    return path[len(root.rstrip("/")) + 1 :]


def sections(conn, now_ms: int, session_id: str | None = None, root: str | None = None) -> list[tuple[str, list[str]]]:
    """(title, lines) per section, most useful first within each."""
    out = []
    notes = recent_work.notes(conn, 8)
    if notes:
        out.append(
            (
                "Notes",
                [
                    f"- {n['id']} ({_mark(n, session_id, now_ms)}): {render.one_line(n['content'], LINE_CHARS)}"
                    for n in notes
                ],
            )
        )
    outputs = recent_work.tool_outputs(conn, 80)
    cmds, greps, threads = _commands(outputs)
    if threads:
        out.append(
            (
                "Open threads (last run failed)",
                [
                    f"- `{render.one_line(t['meta']['command'], 100)}` exit {t['meta']['exit']} "
                    f"({t['id']}, {_mark(t, session_id, now_ms)})"
                    for t in threads[:5]
                ],
            )
        )
    files = recent_work.files(conn, 12)
    if files:
        out.append(
            (
                "Files read (lines seen; id of the newest part)",
                [
                    f"- {_short(f['path'], root)} {_ranges(f['ranges'], f['total'])} ({f['id']}, {_mark(f, session_id, now_ms)})"
                    for f in files
                ],
            )
        )
    if cmds:
        out.append(
            (
                "Commands run",
                [
                    f"- `{render.one_line(c['meta']['command'], 100)}`"
                    + (f" exit {c['meta']['exit']}" if isinstance(c["meta"].get("exit"), int) else "")
                    + f" ({c['id']}, {_mark(c, session_id, now_ms)})"
                    for c in cmds[:8]
                ],
            )
        )
    if greps:
        out.append(
            (
                "Searches",
                [
                    f"- {render.one_line(repr(g['meta']['pattern']), 80)}"
                    + (f" in {_short(g['meta']['path'], root)}" if g["meta"].get("path") else "")
                    + f" ({g['id']}, {_mark(g, session_id, now_ms)})"
                    for g in greps[:6]
                ],
            )
        )
    return out


def build(
    conn, now_ms: int, session_id: str | None = None, budget: int = BUDGET_TOKENS, root: str | None = None
) -> str | None:
    """The brief, or None when the store holds nothing current (live or pending)."""
    count, sessions, newest = recent_work.totals(conn)
    if not count:
        return None
    head = (
        f"memtree holds {count} capture{'s' if count != 1 else ''} of this project ({root or '?'}) from {sessions} session(s), newest "
        f"{render.age(newest, now_ms)}. Any id below: memtree recall ids=<id>; anything else kept: "
        "memtree recall query=<words>; a file's exact lines: Read with offset/limit."
    )
    frame_cost = tokens.count(render.recalled("", 'kind="session-brief"')) + 2
    left = budget - frame_cost - tokens.count(head)
    parts = [head]
    for title, lines in sections(conn, now_ms, session_id, root):
        kept = []
        for line in lines:
            cost = tokens.count(line) + 1
            if cost > left - tokens.count(title) - 2:
                break
            kept.append(line)
            left -= cost
        if kept:
            left -= tokens.count(title) + 2
            parts.append(f"{title}:\n" + "\n".join(kept))
    body = redact_text(render.neutralise("\n".join(parts)))[0]
    text = render.recalled(body, 'kind="session-brief"')
    return tokens.fit(text, budget) if tokens.count(text) > budget else text


__all__ = ["build", "sections", "BUDGET_TOKENS"]
