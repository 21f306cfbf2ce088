"""Summarize walker: a ``summary`` node for every subtree past the threshold.

Every ``walkers.summarizerIntervalMs`` it finds live parents with more than
``walkers.summarizerSubtreeThreshold`` live children whose newest child is
newer than their summary (or that have none), and writes a summary as a
live child of the parent with a ``summarizes`` edge to it (a newer summary
supersedes the older). compose shows it when the subtree does not fit.

Provider (``summarizerModel``): ``auto`` uses the Anthropic Messages API
when ``ANTHROPIC_API_KEY`` is set, else the local extractive summariser;
``extractive`` is always local; ``anthropic`` without a key leaves the
walker idle with the reason in ``memtree ctl status``. API calls are spaced
by ``anthropic.minIntervalMs`` (a subtree waits for the next pass) and
capped at ``anthropic.dailyCap`` per UTC day (counted in the store, so a
restart does not reset it), past which summaries are extractive. An API
failure falls back to extractive. Summaries go through the writer's
redaction gate like any content, and are forgotten with their subtree.
"""

from __future__ import annotations

import logging
import os
import time

import apsw

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError
from memtree.recall import summaries
from memtree.store import reads, subtrees

log = logging.getLogger(__name__)

PER_PASS = 5  # summaries written per tick; the next tick goes on
MAX_CHILDREN = 500  # children one summary reads
DAY_MS = 86_400_000


class SummarizeWalker(Walker):
    name = "walker.summarize"
    interval_ms_key = "summarizerIntervalMs"

    def __init__(self, ctx):
        super().__init__(ctx)
        mode = self.config.summarizerModel
        self.key = os.environ.get("ANTHROPIC_API_KEY", "")
        self.url = os.environ.get("ANTHROPIC_BASE_URL") or self.config.anthropic.url
        self.use_api = mode == "anthropic" or (mode == "auto" and bool(self.key))
        self.idle = ""
        if mode not in ("auto", "extractive", "anthropic"):
            self.idle = f"unknown summarizerModel {mode!r}; expected auto, extractive or anthropic"
        elif mode == "anthropic" and not self.key:
            self.idle = "summarizerModel is 'anthropic' but ANTHROPIC_API_KEY is not set"
        self.last_api = 0.0
        self.stats = {"summaries": 0, "api": 0}
        self._status()

    def _status(self, **extra) -> None:
        if self.idle:
            self.info = {"idle": self.idle}
        else:
            self.info = {"provider": "anthropic" if self.use_api else "extractive", **self.stats, **extra}

    def sweep(self) -> None:
        db = self.db()
        if self.idle or db is None:
            return
        w = self.config.walkers
        try:
            todo = []
            for parent_id, _count, newest in subtrees.oversized(db, int(w.summarizerSubtreeThreshold), 50):
                current = reads.summary_of(db, parent_id)
                if current is None or current["created_at"] < newest:
                    todo.append((parent_id, current))
            self.backlog = len(todo)
            for parent_id, current in todo[:PER_PASS]:
                if not self._summarise(db, parent_id, current):
                    break
        except apsw.Error as e:
            log.warning("%s: read failed (%s); reopening next tick", self.ctx.name, e)
            self.reader.reset()

    def _provider(self, db) -> str | None:
        """ "anthropic", "extractive", or None (wait: API calls are spaced)."""
        if not self.use_api:
            return "extractive"
        cap = int(self.config.anthropic.dailyCap)
        day_start = int(time.time() * 1000) // DAY_MS * DAY_MS
        if subtrees.api_summaries_since(db, day_start, "anthropic") >= cap:
            return "extractive"
        if (time.monotonic() - self.last_api) * 1000 < self.config.anthropic.minIntervalMs:
            return None
        return "anthropic"

    def _summarise(self, db, parent_id: str, current) -> bool:
        parent = reads.get_node(db, parent_id)
        kids = subtrees.children(db, parent_id, MAX_CHILDREN)
        provider = self._provider(db)
        if parent is None or not kids or provider is None:
            return provider is not None
        size = int(self.config.walkers.summaryTokens)
        text = None
        if provider == "anthropic":
            self.last_api = time.monotonic()
            try:
                text = summaries.anthropic(
                    parent, kids, size, key=self.key, url=self.url, model=self.config.anthropic.model
                )
                self.stats["api"] += 1
            except summaries.SummaryUnavailable as e:
                log.warning("%s: %s; using the extractive summary", self.ctx.name, e.message)
                self._status(last_error=e.message)
                provider = "extractive"
        if text is None:
            text = summaries.extractive(parent, kids, size)
        refs = [{"dst": parent_id, "kind": "summarizes"}]
        if current is not None:
            refs.append({"dst": current["id"], "kind": "supersedes"})
        meta = {"provider": provider, "summarizes": parent_id, "children": len(kids)}
        try:
            res = self.call_writer(
                protocol.AddNode(
                    kind="summary", content=text, parent_id=parent_id, status="live", metadata=meta, refs=refs
                )
            )
            if res is not None and current is not None:
                self.call_writer(
                    protocol.SetStatus(
                        ids=[current["id"]],
                        status="superseded",
                        reason=f"summary {res['id']} is newer",
                        expect=["live"],
                    )
                )
        except MemtreeError as e:
            log.error("%s: summary of %s refused: %s", self.ctx.name, parent_id, e.message)
            return True
        if res is None:
            return False  # writer away: next tick
        self.stats["summaries"] += 1
        self._status()
        return True


def main() -> None:
    main_for(SummarizeWalker)


if __name__ == "__main__":
    main()
