"""Pruner walker: ages stale and superseded nodes out, then deletes them.

Every ``walkers.prunerIntervalMs``, by ``retention`` in config:
- stale for longer than ``staleHours`` -> pruned
- superseded for longer than ``supersededDays`` -> pruned
  (pruned nodes leave the FTS index and the vectors with the status change;
  the rows stay for audit)
- pruned for longer than ``prunedDays`` -> ``Purge``: the row is deleted, its
  audit rows stay (old ones are compacted into counts by ``Tidy``).
Then bookkeeping's own bounded retention (``Tidy``: old audit rows compacted,
capture keys past their retry window and applied-spool ids dropped; the WAL
truncated after it), FTS5 merge steps (``MergeFts``, bounded, only when FTS5
flushed segments since the index last settled: store/write/fts.py), and then the disk budget (``storage.maxBytes``,
memtree.store.budget.store_bytes, the one size): while the pages in use
exceed it, the oldest superseded, then stale, then any captures
go ``pruned`` and are deleted at once (audited with the budget as reason),
down to 90 % of the budget; each batch followed by ``Reclaim`` (FTS optimize, incremental vacuum).
Notes are never pruned or purged, stale or superseded or over the budget:
nothing but ``forget`` removes a note.
Age is time since the last status change (``updated_at``, which the writer
sets with every change). Each step is one bounded batch through the writer
with ``expect`` set, so a node another actor changed meanwhile is left alone.
"""

from __future__ import annotations

import logging

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.capture import spool
from memtree.errors import MemtreeError
from memtree.ids import now_ms
from memtree.store import budget, fts_index, sweeps

log = logging.getLogger(__name__)

BATCH = 500  # nodes per step per tick
BUDGET_ROUNDS = 20  # budget batches per tick at most, so heartbeats keep flowing
MERGE_PAGES = 200  # FTS5 pages a merge step writes at most (~10-80 ms in the writer's batch, measured at 65k nodes)
MERGE_ROUNDS = 8  # merge steps per tick at most; the next tick goes on
MIB = 1048576
HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


class PrunerWalker(Walker):
    name = "walker.pruner"
    interval_ms_key = "prunerIntervalMs"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.info = {"pruned": 0, "purged": 0, "over_budget_removed": 0}
        self._fts_settled_at = None  # FTS5's write counter when the index last settled

    def steps(self, now: int) -> list[tuple[str, int, str]]:
        """(status, cutoff, reason) for the steps that end in ``pruned``."""
        r = self.config.retention
        return [
            ("stale", now - int(r.staleHours * HOUR_MS), f"stale for more than {r.staleHours:g} hours"),
            ("superseded", now - int(r.supersededDays * DAY_MS), f"superseded for more than {r.supersededDays:g} days"),
        ]

    def sweep(self) -> None:
        db = self.db()
        if db is None:
            return
        now = now_ms()
        try:
            for status, cutoff, reason in self.steps(now):
                ids = sweeps.due(db, status, cutoff, BATCH)
                if ids:
                    result = self.call_writer(
                        protocol.SetStatus(ids=ids, status="pruned", reason=reason, expect=[status])
                    )
                    if result is None:
                        return  # writer away; next tick
                    self._count("pruned", result.get("changed") or [], reason)
            days = self.config.retention.prunedDays
            ids = sweeps.due(db, "pruned", now - int(days * DAY_MS), BATCH)
            if ids:
                result = self.call_writer(protocol.Purge(ids=ids, reason=f"pruned for more than {days:g} days"))
                if result is not None:
                    self._count("purged", result.get("purged") or [], "rows deleted, audit kept")
            if not self.tidy():
                return  # writer away; next tick
            if not self.merge_fts(db):
                return
            self.enforce_budget(db)
        except MemtreeError as e:
            log.warning("%s: writer refused a step: %s", self.ctx.name, e.message)

    def tidy(self) -> bool:
        """Bookkeeping's bounded retention (``Tidy``; the writer truncates the WAL
        after it), before the budget is measured: it counts like the rest."""
        since = spool.oldest_ts(self.paths.spool)
        for _ in range(BUDGET_ROUNDS):
            result = self.call_writer(protocol.Tidy(spool_since=since))
            if result is None:
                return False
            for key in ("audit_compacted", "capture_keys_dropped"):
                self.info[key] = self.info.get(key, 0) + (result.get(key) or 0)
            if not result.get("more"):
                break
        return True

    def merge_fts(self, db) -> bool:
        """FTS5 merge steps (MergeFts) until the index settles, at most
        MERGE_ROUNDS a sweep; none at all unless FTS5 flushed a segment since
        it last settled (its write counter), so an idle store costs one row read."""
        st = fts_index.structure(db)
        self.info["fts_checks"] = self.info.get("fts_checks", 0) + 1
        if st is None or st.writes == self._fts_settled_at:
            return True
        self.info["fts_segments"] = st.segments
        for _ in range(MERGE_ROUNDS):
            result = self.call_writer(protocol.MergeFts(pages=MERGE_PAGES))
            if result is None:
                return False
            self.info["fts_merge_steps"] = self.info.get("fts_merge_steps", 0) + 1
            self.info["fts_segments"] = result.get("segments", 0)
            if not result.get("more"):
                self._fts_settled_at = st.writes  # a write since then leaves the counter past it
                break
        return True

    def enforce_budget(self, db) -> None:
        limit = self.config.storage.maxBytes
        used = budget.store_bytes(db)
        self.info["store_mib"] = round(used / MIB, 1)
        if used <= limit:
            return
        target = int(limit * budget.TARGET)
        reason = f"disk budget: {used / MIB:.1f} MiB in use, storage.maxBytes is {limit / MIB:.1f} MiB"
        removed = 0
        for _ in range(BUDGET_ROUNDS):
            rows = budget.victims(db, int((used - target) / budget.bytes_per_content_byte(db)), BATCH)
            if not rows:
                log.warning("%s: over the disk budget with no capture left to remove (%s)", self.ctx.name, reason)
                break
            ids = [r[0] for r in rows]
            statuses = sorted({r[1] for r in rows if r[1] != "pruned"})
            if (
                statuses
                and self.call_writer(protocol.SetStatus(ids=ids, status="pruned", reason=reason, expect=statuses))
                is None
            ):
                return  # writer away; next tick
            result = self.call_writer(protocol.Purge(ids=ids, reason=reason))
            if result is None:
                return
            purged = result.get("purged") or []
            removed += len(purged)
            # The removals wrote audit rows: back within bookkeeping's bound before measuring,
            # or captures would be removed to make room for their own audit trail.
            if not self.tidy():
                return
            # Pages come free only once the FTS index drops the rows too: measure after that.
            if self.call_writer(protocol.Reclaim()) is None:
                return
            used = budget.store_bytes(db)
            if used <= target or not purged:
                break
        self.info["over_budget_removed"] += removed
        self.info["store_mib"] = round(used / MIB, 1)
        log.info(
            "%s: removed %d captures over the disk budget (%s); now %.1f MiB in use",
            self.ctx.name,
            removed,
            reason,
            used / MIB,
        )

    def _count(self, key: str, ids: list, reason: str) -> None:
        self.info[key] += len(ids)
        if ids:
            log.info("%s: %s %d nodes (%s)", self.ctx.name, key, len(ids), reason)


if __name__ == "__main__":
    main_for(PrunerWalker)
