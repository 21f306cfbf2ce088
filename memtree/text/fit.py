"""Fitting shown text to a budget, in one place: whole rows within a token
budget, and one over-long line clipped with a note of what was cut."""

from memtree import tokens


def fit_rows(rows: list[str], budget: int) -> tuple[list[str], int]:
    """The leading ``rows`` that fit ``budget`` tokens shown one per line:
    (those rows, tokens they use). Each costs itself plus one for its newline,
    so the joined text never counts more than the sum."""
    kept, used = [], 0
    for row in rows:
        cost = tokens.count(row) + 1
        if used + cost > budget:
            break
        kept.append(row)
        used += cost
    return kept, used


def clip_line(text: str, limit: int) -> str:
    """One display line, cut to ``limit`` characters with a note of the rest."""
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else f"{text[:limit]}…[+{len(text) - limit} chars]"
