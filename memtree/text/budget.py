"""Token budgets: the one place they are checked and enforced.

The front's tool wrapper passes every tool's text through ``enforce`` once,
measured with memtree.tokens (the one counter). Claude Code warns at 10k
tokens of MCP output, so the default stays well below and the cap below that.
"""

from __future__ import annotations

from memtree import tokens
from memtree.errors import BadRequest

DEFAULT_BUDGET = 2000
MAX_BUDGET = 20000


def check(value, name: str = "budget_tokens", default: int = DEFAULT_BUDGET) -> int:
    """A valid budget from a caller's value (None -> the default)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{name} must be an integer number of tokens, got {type(value).__name__}")
    if value < 1 or value > MAX_BUDGET:
        raise BadRequest(f"{name} must be between 1 and {MAX_BUDGET}, got {value}")
    return value


def notice(shown: int, total: int, budget: int, again: str | None = None) -> str:
    if again is None:
        how = "raise budget_tokens or narrow the request"
    elif total <= MAX_BUDGET:
        how = f"all of it: {again.replace('{budget}', str(total))}"
    else:
        how = f"all of it is over the {MAX_BUDGET}-token cap: narrow the request"
    return f"[memtree: cut to fit budget_tokens={budget}: {shown} of {total} tokens shown; {how}]"


def enforce(text: str, budget: int, again: str | None = None) -> str:
    """``text`` if it fits ``budget``; else whole lines of it that fit, then a
    last line saying what was cut and, given ``again`` (the same call with
    ``{budget}`` where its budget_tokens goes), the exact call for all of it.
    Never more than ``budget`` tokens."""
    total = tokens.count(text)
    if total <= budget:
        return text
    # The notice's own size depends on the count it reports; size it for the
    # widest number it could show, so the result can only come in under.
    room = budget - tokens.count("\n" + notice(total, total, budget, again))
    if room <= 0:
        # Too small for content and notice: as much of the notice as fits.
        return tokens.fit(notice(0, total, budget, again), budget)
    kept, _ = tokens.fit_lines(text, room)
    if not kept.strip():
        # No whole line fits (one long line): a prefix instead.
        kept = tokens.fit(text, room)
    kept = kept.rstrip("\n")
    out = f"{kept}\n{notice(tokens.count(kept), total, budget, again)}"
    if tokens.count(out) > budget:  # cannot happen by construction; keep the promise anyway
        out = tokens.fit(out, budget)
    return out
