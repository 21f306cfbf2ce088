"""What a rewrite kept out of the context, in tokens (``memtree.tokens``).

The writer records one ``shown`` audit row per replaced native output with
``stored`` (the tokens of the output Claude Code produced, which memtree
stored) and ``shown`` (the tokens of the preview the agent saw instead); the
savings meter (memtree/ops/savings.py) sums ``stored - shown``.
"""

from __future__ import annotations

from memtree import tokens


def _text(tool, response) -> str:
    if not isinstance(response, dict):
        return ""
    if tool == "Read":
        file = response.get("file") if isinstance(response.get("file"), dict) else {}
        return file.get("content") if isinstance(file.get("content"), str) else ""
    if tool == "Grep":
        if isinstance(response.get("content"), str):
            return response["content"]
        return "\n".join(f for f in response.get("filenames") or [] if isinstance(f, str))
    if tool == "Bash":
        return "\n".join(response[k] for k in ("stdout", "stderr") if isinstance(response.get(k), str) and response[k])
    return ""


def detail(payload: dict, updated: dict, session_id) -> dict:
    """The ``shown`` audit row's detail for one replaced output."""
    tool = payload.get("tool_name")
    return {"session": session_id, "tool": tool,
            "stored": tokens.count(_text(tool, payload.get("tool_response"))),
            "shown": tokens.count(_text(tool, updated))}
