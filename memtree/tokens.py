"""The one token counter. Every budget in memtree is measured with it.

There is no offline tokenizer for current Claude models, so this is a
conservative estimate (see ../shared/claude-code/integration-facts.md §6):
Claude Code itself assumes 4 characters per token (2 for JSON); o200k gives
~4.7 for code and Claude's newer tokenizer ~1.3x more tokens than that, so
ASCII text counts 3.5 characters per token, JSON 2, and every non-ASCII
character a whole token (CJK and emoji are at least one token each).
"""

from __future__ import annotations

import math

CHARS_PER_TOKEN = 3.5
CHARS_PER_TOKEN_JSON = 2.0


def count(text: str, *, is_json: bool = False) -> int:
    if not text:
        return 0
    per = CHARS_PER_TOKEN_JSON if is_json else CHARS_PER_TOKEN
    if text.isascii():
        return math.ceil(len(text) / per)
    non_ascii = sum(1 for ch in text if ord(ch) > 127)
    return math.ceil((len(text) - non_ascii) / per) + non_ascii


def fit(text: str, budget: int, *, is_json: bool = False) -> str:
    """The longest prefix of ``text`` whose count is within ``budget``."""
    if budget <= 0:
        return ""
    if count(text, is_json=is_json) <= budget:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # binary search on the prefix length
        mid = (lo + hi + 1) // 2
        if count(text[:mid], is_json=is_json) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def fit_lines(text: str, budget: int) -> tuple[str, int]:
    """Whole lines of ``text`` within ``budget``: (kept text, lines kept)."""
    out, used, kept = [], 0, 0
    for line in text.splitlines(keepends=True):
        cost = count(line)
        if used + cost > budget:
            break
        out.append(line)
        used += cost
        kept += 1
    # Joined text can count one token less than the sum, never more.
    return "".join(out), kept
