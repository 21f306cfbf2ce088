"""Filter walker: decides each pending node's fate (live or dropped).

Triggered by ``NodesChanged`` events with status pending (after a short
``walkers.filterSettleMs`` settle), plus a safety sweep
every ``walkers.filterIntervalMs`` (events are lost while the walker is down
and PUB drops them for slow subscribers). Reads through its own read-only
connection; every change is a ``SetStatus(expect=["pending"])`` call to the
writer, so a node another actor changed meanwhile is left alone.
"""

from __future__ import annotations

import logging

import apsw

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError
from memtree.store import triage

log = logging.getLogger(__name__)

BATCH = 256  # pending nodes per pass
PASSES_PER_SWEEP = 4  # then back to the loop for heartbeats; the next turn of it continues


def decide(batch: list[triage.Pending], live_owner: dict[str, str], min_size: int) -> dict[str, tuple[str, str]]:
    """The filter rule (docs/ARCHITECTURE.md): node id -> (status, reason).

    A child of a tool_output (a grep hit) follows its parent; a node whose
    parent is still undecided is left pending. Otherwise: smaller than
    ``min_size`` bytes -> dropped; same hash as a live node or an earlier
    node of this batch -> dropped; else live.
    """
    out: dict[str, tuple[str, str]] = {}
    seen = dict(live_owner)  # hash -> id that keeps it
    for n in batch:
        if n.parent_kind == "tool_output":
            parent = out.get(n.parent_id, (n.parent_status, ""))[0]
            if parent == "live":
                out[n.id] = ("live", "parent live")
            elif parent != "pending":
                out[n.id] = ("dropped", f"parent {parent}")
            continue
        if n.size < min_size:
            out[n.id] = ("dropped", "too small")
        elif n.content_hash in seen:
            out[n.id] = ("dropped", f"duplicate of {seen[n.content_hash]}")
        else:
            out[n.id] = ("live", "")
            seen[n.content_hash] = n.id
    return out


class FilterWalker(Walker):
    name = "walker.filter"
    topics = (protocol.NodesChanged.TYPE,)
    interval_ms_key = "filterIntervalMs"

    def on_events(self, records: list) -> None:
        # Not at once: a capture's hook is still exiting on these 2 cores, and
        # parallel tool calls arrive as a burst that one pass can take.
        if any(getattr(r, "status", None) == "pending" for r in records):
            self.tick_soon(self.config.walkers.filterSettleMs / 1000)

    def sweep(self) -> None:
        try:
            for _ in range(PASSES_PER_SWEEP):
                if not self._one_pass():
                    break
            else:  # a backlog (a burst, a store seeded): on after a turn of the loop, not a sweep interval later
                self.tick_soon(0)
            db = self.db()
            self.backlog = triage.pending_count(db) if db is not None else 0
        except apsw.Error as e:  # e.g. the store was replaced; reopen next tick
            log.warning("filter: read failed (%s); reopening next tick", e)
            self.reader.reset()

    def _one_pass(self) -> bool:
        """Decide one batch; True when a full batch was applied (there may be more)."""
        db = self.db()
        if db is None:
            return False
        batch = triage.pending_batch(db, BATCH)
        if not batch:
            return False
        own = [n for n in batch if n.parent_kind != "tool_output"]
        decisions = decide(
            batch, triage.live_owners(db, [n.content_hash for n in own]), self.config.capture.filterMinSize
        )
        groups: dict[tuple[str, str], list[str]] = {}
        for node_id, key in decisions.items():
            groups.setdefault(key, []).append(node_id)
        # Parents before children: a live parent is committed before its hits follow it.
        for (status, reason), ids in sorted(groups.items(), key=lambda g: g[0][1].startswith("parent")):
            try:
                if (
                    self.call_writer(protocol.SetStatus(ids=ids, status=status, reason=reason, expect=["pending"]))
                    is None
                ):
                    return False  # writer away: retry on the next tick
            except MemtreeError as e:
                log.error("filter: SetStatus %s refused: %s", status, e.message)
                return False
        return len(batch) == BATCH


def main() -> None:
    main_for(FilterWalker)


if __name__ == "__main__":
    main()
