"""Dedupe walker: near-duplicates among live nodes of one kind.

Every ``walkers.dedupeIntervalMs`` it takes the vectors stored since its
last pass (a watermark on ``embedded_at``; after a restart it starts over,
bounded per pass) and compares them, per kind, with every live vector of
that kind and model in one streamed pass (a matrix product per chunk of
8k vectors: one read of the table per 500 new vectors, not one KNN query
each). A pair at cosine >=
``walkers.dedupeThreshold`` is a near-duplicate: the newer node is kept and
supersedes the older (``Supersede``: edge + audit with the score). Never
across kinds, never a node with itself, never two chunks of one file (a
file's similar small methods are not duplicates; a changed file is already
superseded by read), and only live nodes, so a forgotten node (no vector,
status forgotten) is never brought back. A note is something a person or
the agent decided to keep: two notes are duplicates only when their texts
are the same after normalising whitespace and case (memtree.text.sameness),
whatever the cosine ("finding number 1" and "number 10" are 0.996 apart);
so are two chunks of different files (small methods of different classes
embed alike).
Needs no model: vectors only,
but numpy (``requires``): without it the walker idles and says so.
"""

from __future__ import annotations

import logging

import apsw

from memtree import protocol
from memtree.actors.base import main_for
from memtree.actors.walkers.common import Walker
from memtree.errors import MemtreeError, NotFound
from memtree.recall.embeddings import model_name
from memtree.store import reads, vectors
from memtree.text.sameness import same_text

log = logging.getLogger(__name__)

PER_PASS = 500  # vectors examined per tick; the next tick goes on from the watermark
# Kinds deduped only word for word, whatever the cosine: a note someone chose to keep, and a
# file's code (two small methods of different classes embed alike once identifiers are split
# and keywords dropped, yet neither stands in for the other). Outputs go by their vectors.
WORD_FOR_WORD = ("note", "file_chunk")
TEXTS_HELD = 128  # node texts (<= capture.maxBytes each) a pass keeps to compare pairs: <= ~13 MB whatever the store
# Live vectors compared with a pass's at a time: their rows, matrix and the
# PER_PASS x SCAN_ROWS similarities (~5 MiB at 256 dims) are a pass's peak
# whatever the store holds (at 8,192 the peak grew with the store, to ~40 MiB).
SCAN_ROWS = 1024


def newer(a: dict, b: dict) -> bool:
    """a was stored after b (ULIDs break a tie in the same millisecond)."""
    return (a["created_at"], a["id"]) > (b["created_at"], b["id"])


class DedupeWalker(Walker):
    name = "walker.dedupe"
    interval_ms_key = "dedupeIntervalMs"
    requires = ("numpy",)

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
            kinds: dict[str, list] = {}
            for row in batch:
                kinds.setdefault(row[3], []).append(row)
            for kind, rows in kinds.items():
                if not self._dedupe(db, kind, rows):
                    return  # writer away: keep the watermark, retry next tick
            if batch:
                self.mark = (batch[-1][1], batch[-1][0])
            self.backlog = len(batch) if len(batch) == PER_PASS else 0
            if len(batch) == PER_PASS:
                self.tick_soon(0)
        except apsw.Error as e:
            log.warning("%s: read failed (%s); reopening next tick", self.ctx.name, e)
            self.reader.reset()
        self.info = {"threshold": self.threshold, **self.stats}

    def _dedupe(self, db, kind: str, rows: list) -> bool:
        done: set[str] = set()
        pairs = near_pairs(db, self.model, kind, rows, self.threshold)
        texts: dict[str, str | None] = {}  # fetched as pairs need them, at most TEXTS_HELD at a time

        def text(nid: str) -> str | None:
            if nid not in texts:
                if len(texts) >= TEXTS_HELD:
                    texts.clear()
                node = reads.get_nodes(db, [nid]).get(nid)
                texts[nid] = node["content"] if node else None
            return texts[nid]

        for score, a, b in pairs:
            if a["id"] in done or b["id"] in done or (kind == "file_chunk" and a["parent_id"] == b["parent_id"]):
                continue
            if kind in WORD_FOR_WORD:
                ta, tb = text(a["id"]), text(b["id"])
                if ta is None or tb is None or not same_text(ta, tb):
                    continue  # close in meaning is not the same note, nor the same code
            keep, old = (a, b) if newer(a, b) else (b, a)
            try:
                res = self.call_writer(protocol.Supersede(keep_id=keep["id"], old_id=old["id"], score=round(score, 4)))
            except NotFound as e:
                # Purged since this pass read it (the pruner's disk budget): nothing to supersede.
                log.debug("%s: Supersede skipped: %s", self.ctx.name, e.message)
                continue
            except MemtreeError as e:
                log.error("%s: Supersede refused: %s", self.ctx.name, e.message)
                continue
            if res is None:
                return False
            if res.get("superseded"):
                self.stats["superseded"] += 1
                log.info("%s: %s supersedes %s (cosine %.4f)", self.ctx.name, keep["id"], old["id"], score)
            done.add(old["id"])
        return True


def near_pairs(db, model: str, kind: str, rows: list, threshold: float) -> list[tuple[float, dict, dict]]:
    """(cosine, a, b) for every new node a (``rows`` from vectors.embedded_since)
    and live node b != a of ``kind`` at or above ``threshold``, best first: one
    pass over the kind's vectors for the whole batch."""
    import numpy as np

    new = [{"id": r[0], "parent_id": r[4], "created_at": r[5]} for r in rows]
    q = _unit(np.frombuffer(b"".join(r[2] for r in rows), dtype="<f4").reshape(len(rows), -1))
    pairs = []
    for part in vectors.live_vectors(db, model, kind, chunk=SCAN_ROWS):
        m = _unit(np.frombuffer(b"".join(p[3] for p in part), dtype="<f4").reshape(len(part), -1))
        if m.shape[1] != q.shape[1]:
            continue  # another dimension under the same name: reembed's business, not ours
        sims = q @ m.T
        for i, j in zip(*np.nonzero(sims >= threshold)):
            other = part[j]
            if other[0] != new[i]["id"]:
                pairs.append(
                    (float(sims[i, j]), new[i], {"id": other[0], "parent_id": other[1], "created_at": other[2]})
                )
    pairs.sort(key=lambda p: (-p[0], p[1]["id"], p[2]["id"]))
    return pairs


def _unit(m):
    import numpy as np

    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return m / norms


def main() -> None:
    main_for(DedupeWalker)


if __name__ == "__main__":
    main()
