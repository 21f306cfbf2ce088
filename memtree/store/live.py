"""The live predicate, defined once.

Every retrieval path filters with ``status_clause()``; with no statuses given
it means "live only". Other statuses are returned only when a caller names
them. tests/test_live_predicate.py pins every SQL read site to this module.
"""

from __future__ import annotations

ALL_STATUSES = ("pending", "live", "stale", "superseded", "pruned", "dropped", "forgotten")
LIVE = ("live",)
# Statuses whose content stays in the FTS index (pruned, dropped and forgotten leave it).
INDEXED = ("pending", "live", "stale", "superseded")


def check_statuses(statuses) -> tuple[str, ...]:
    from memtree.errors import BadRequest

    if statuses is None:
        return LIVE
    if isinstance(statuses, str):
        statuses = [statuses]
    out = tuple(dict.fromkeys(statuses))
    bad = [s for s in out if s not in ALL_STATUSES]
    if bad or not out:
        raise BadRequest(f"unknown status {bad[0] if bad else '(empty)'!r}; expected one of {', '.join(ALL_STATUSES)}")
    return out


def status_clause(alias: str = "n", statuses=None) -> tuple[str, list]:
    """SQL fragment and params: ``n.status IN (...)``, live only by default."""
    wanted = check_statuses(statuses)
    return f"{alias}.status IN ({','.join('?' * len(wanted))})", list(wanted)


def sql_list(values) -> str:
    """A literal SQL list of fixed status names (for DDL, which cannot bind)."""
    return "(" + ",".join(f"'{v}'" for v in values) + ")"
