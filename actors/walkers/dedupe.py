"""Dedupe walker: near-duplicates among live nodes of one kind.

Every ``walkers.dedupeIntervalMs`` it takes the vectors stored since its
last pass (a watermark on ``embedded_at``; after a restart it starts over,
bounded per pass) and asks sqlite-vec for each one's nearest live
neighbours of the same kind and model. A pair at cosine >=
``walkers.dedupeThreshold`` is a near-duplicate: the newer node is kept and
supersedes the older (``Supersede``: edge + audit with the score). Never
across kinds, never a node with itself, never two chunks of one file (a
file's similar small methods are not duplicates; a changed file is already
superseded by read), and only live nodes, so a forgotten node (no vector,
status forgotten) is never brought back. Needs no model: vectors only.
"""

from __future__ import annotations

import logging

import apsw

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError
from memtree.recall.embeddings import model_name
from memtree.store import reads, vectors

log = logging.getLogger(__name__)

PER_PASS = 500  # vectors examined per tick; the next tick goes on from the watermark
NEIGHBOURS = 4


def newer(a: dict, b: dict) -> bool:
    """a was stored after b (ULIDs break a tie in the same millisecond)."""
    return (a["created_at"], a["id"]) > (b["created_at"], b["id"])


class DedupeWalker(Walker):
    name = "walker.dedupe"
    interval_ms_key = "dedupeIntervalMs"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.model = model_name(self.config)
        self.threshold = float(self.config.walkers.dedupeThreshold)
        self.mark: tuple[int, str] = (0, "")
        self.stats = {"superseded": 0}
        self.info = {"threshold": self.threshold, **self.stats}

    def sweep(self) -> None:
        db = self.db()
        if db is None:
            return
        try:
            batch = vectors.embedded_since(db, self.model, self.mark, PER_PASS)
            done = set()
            for node_id, embedded_at, blob, kind, parent_id, created_at in batch:
                if node_id not in done and not self._one(db, node_id, blob, kind, parent_id, created_at, done):
                    return  # writer away: keep the watermark, retry next tick
                self.mark = (embedded_at, node_id)
            self.backlog = len(batch) if len(batch) == PER_PASS else 0
            if len(batch) == PER_PASS:
                self.tick_soon(0)
        except apsw.Error as e:
            log.warning("%s: read failed (%s); reopening next tick", self.ctx.name, e)
            self.reader.reset()
        self.info = {"threshold": self.threshold, **self.stats}

    def _one(self, db, node_id, blob, kind, parent_id, created_at, done: set) -> bool:
        me = {"id": node_id, "created_at": created_at}
        near = [(nid, 1.0 - d) for nid, d in vectors.knn(db, blob, NEIGHBOURS + 1, {"kind": [kind]}, self.model)
                if nid != node_id and 1.0 - d >= self.threshold]
        if not near:
            return True
        others = reads.get_nodes(db, [nid for nid, _ in near])
        for nid, score in near:
            other = others.get(nid)
            if other is None or nid in done or (kind == "file_chunk" and other["parent_id"] == parent_id):
                continue
            keep, old = (me, other) if newer(me, other) else (other, me)
            try:
                res = self.call_writer(protocol.Supersede(keep_id=keep["id"], old_id=old["id"], score=round(score, 4)))
            except MemtreeError as e:
                log.error("%s: Supersede refused: %s", self.ctx.name, e.message)
                continue
            if res is None:
                return False
            if res.get("superseded"):
                self.stats["superseded"] += 1
                log.info("%s: %s supersedes %s (cosine %.4f)", self.ctx.name, keep["id"], old["id"], score)
            done.add(old["id"])
            if old is me:
                break  # this node is gone; its other neighbours meet their own newer twin
        return True


def main() -> None:
    main_for(DedupeWalker)


if __name__ == "__main__":
    main()
