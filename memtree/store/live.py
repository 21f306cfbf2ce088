"""The live predicate, defined once, and the named status sets reads choose from.

Every retrieval path filters with ``status_clause()``; with no statuses given
it means "live only". Other statuses are returned only when a caller names
them, by one of the sets below; a read that must see every status (the
writer changing one, forgetting, the disk budget) says so with the
``ANY_STATUS`` marker, never with a list that happens to hold them all.
tests/unit/store/test_live_predicate.py pins every SQL read site to the set it filters by.
"""

from __future__ import annotations

# The vocabulary (for validating a status a caller names), not a filter.
STATUSES = ("pending", "live", "stale", "superseded", "pruned", "dropped", "forgotten")
LIVE = ("live",)
PENDING = ("pending",)
# Not replaced or retired yet: what a new capture of the same source compares with.
CURRENT = ("pending", "live")
# Statuses whose content stays in the FTS index (pruned, dropped and forgotten leave it).
INDEXED = ("pending", "live", "stale", "superseded")
# Everything whose content is still stored (forgetting erases it).
NOT_FORGOTTEN = ("pending", "live", "stale", "superseded", "pruned", "dropped")


class _AnyStatus:
    """The marker for a read that sees every status on purpose: no filter at all."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ANY_STATUS"


ANY_STATUS = _AnyStatus()


def check_statuses(statuses) -> tuple[str, ...]:
    """The statuses a caller asked for (None: live only; ANY_STATUS: all of them)."""
    from memtree.errors import BadRequest

    if statuses is None:
        return LIVE
    if statuses is ANY_STATUS:
        return STATUSES
    if isinstance(statuses, str):
        statuses = [statuses]
    out = tuple(dict.fromkeys(statuses))
    bad = [s for s in out if s not in STATUSES]
    if bad or not out:
        raise BadRequest(f"unknown status {bad[0] if bad else '(empty)'!r}; expected one of {', '.join(STATUSES)}")
    return out


def status_clause(alias: str = "n", statuses=None) -> tuple[str, list]:
    """SQL fragment and params: ``n.status IN (...)``, live only by default;
    ANY_STATUS filters nothing (``1``), and says so where it is used."""
    if statuses is ANY_STATUS:
        return "1", []
    wanted = check_statuses(statuses)
    return f"{alias}.status IN ({','.join('?' * len(wanted))})", list(wanted)


def sql_list(values) -> str:
    """A literal SQL list of fixed status names (for DDL, which cannot bind)."""
    return "(" + ",".join(f"'{v}'" for v in values) + ")"
