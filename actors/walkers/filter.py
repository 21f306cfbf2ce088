"""Filter walker: decides each pending node's fate (live or dropped), and
cleans again the rows an older redaction gate cleaned.

Triggered by ``NodesChanged`` events with status pending (after a short
``walkers.filterSettleMs`` settle), plus a safety sweep
every ``walkers.filterIntervalMs`` (events are lost while the walker is down
and PUB drops them for slow subscribers). Reads through its own read-only
connection; every change is a ``SetStatus(expect=["pending"])`` call to the
writer, so a node another actor changed meanwhile is left alone.

After an upgrade that added redaction rules (``REDACTION_VERSION``), every
stored row still holds what only the newer rules would remove, and every
read of one redacts it again on the way out (store/reads.py: a search read
each of its ~200 candidates so, 4x its time). Once a start, the walker walks
the table (REGATE_SPAN rowids a step, after its pending work): a row the
current gate keeps as it is gets its mark brought up to date (``Redact``'s
``current``: the redaction ran here, not in the writer), one it would change
is rewritten by the writer (``Redact``'s ``ids``). Rows stored meanwhile
carry the current mark already.
"""

from __future__ import annotations

import logging

import apsw

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError
from memtree.gate import REDACTION_VERSION
from memtree.store import sweeps, triage

log = logging.getLogger(__name__)

BATCH = 256  # pending nodes per pass
PASSES_PER_SWEEP = 4  # then back to the loop for heartbeats; the next turn of it continues
REGATE_SPAN = 5000  # rowids a step of the walk for rows an older gate cleaned looks at
REGATE_BATCH = 64  # such rows a Redact call takes (a heavy call: a batch of its own in the writer)


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

    def __init__(self, ctx):
        super().__init__(ctx)
        self.regate_from: int | None = 0  # where the walk goes on; None once past the last row

    def on_events(self, records: list) -> None:
        # Not at once: a capture's hook is still exiting on these 2 cores, and
        # parallel tool calls arrive as a burst that one pass can take.
        if any(getattr(r, "status", None) == "pending" for r in records):
            self.tick_soon(self.config.walkers.filterSettleMs / 1000)

    def sweep(self) -> None:
        try:
            for _ in range(PASSES_PER_SWEEP):
                if not self._one_pass():
                    if self._regate_step():  # pending work first; the walk when there is none
                        self.tick_soon(0)
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

    def _regate_step(self) -> bool:
        """One step of the walk over rows an older gate cleaned; True when there is more."""
        db = self.db()
        if db is None or self.regate_from is None:
            return False
        rows, after = sweeps.older_gate_rows(db, REDACTION_VERSION, self.regate_from, REGATE_SPAN, REGATE_BATCH)
        if rows:
            ids, current = [], []
            for _, node_id, content, uri, meta, digest in rows:
                if sweeps.gate_keeps(content, uri, meta):
                    current.append([node_id, digest])
                else:
                    ids.append(node_id)
            try:
                got = self.call_writer(protocol.Redact(ids=ids, current=current, version=REDACTION_VERSION))
            except MemtreeError as e:
                log.error("filter: Redact refused: %s", e.message)
                return False  # this step again next sweep
            if got is None:
                return False  # writer away: this step again next sweep
            done = self.info.setdefault("older_gate", {"kept": 0, "rewritten": 0})  # ctl status shows it
            done["kept"] += got.get("marked", 0)
            done["rewritten"] += len(got.get("changed", []))
        self.regate_from = after
        return after is not None


def main() -> None:
    main_for(FilterWalker)


if __name__ == "__main__":
    main()
