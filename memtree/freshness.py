"""Freshness at answer time: a file chunk whose file changed on disk since
capture is marked stale in the answer, and the writer is told so the store
learns it too (the staleness walker would, but only on its next sweep).
"""

from __future__ import annotations

import logging
import os

from memtree import protocol
from memtree.errors import MemtreeError
from memtree.render import file_path

log = logging.getLogger(__name__)

REASON = "file changed on disk since capture"


def _to_ms(mtime: int) -> int:
    """Stored mtimes are epoch s, ms or ns depending on the writer; compare in ms."""
    if mtime > 10**16:
        return mtime // 1_000_000
    if mtime < 10**11:
        return mtime * 1000
    return mtime


def is_stale(node: dict) -> bool:
    if node.get("kind") != "file_chunk" or not node.get("mtime"):
        return False
    path = file_path(node)
    if path is None:
        return False
    try:
        now_ms = os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        return True  # the file is gone
    stored = node["mtime"]
    if stored < 10**11:  # stored in whole seconds: compare at that precision
        return now_ms // 1000 != stored
    return abs(now_ms - _to_ms(stored)) > 1


def check(svc, nodes) -> set[str]:
    """Ids of ``nodes`` that are stale on disk; live ones are sent to the
    writer as SetStatus(stale, expect=[live]) in the background."""
    stale = {n["id"] for n in nodes if is_stale(n)}
    to_mark = sorted(n["id"] for n in nodes if n["id"] in stale and n.get("status") == "live")
    if to_mark:
        svc.background(_mark, svc, to_mark)
    return stale


async def _mark(svc, ids: list[str]) -> None:
    try:
        await svc.call(protocol.SetStatus(ids=ids, status="stale", reason=REASON, expect=["live"]))
    except MemtreeError as e:
        # Read paths keep working without the writer; the staleness walker catches up.
        log.info("could not mark %d chunk(s) stale: %s", len(ids), e.message)
    except Exception:  # a background task must never take the front down
        log.warning("marking %d chunk(s) stale failed", len(ids), exc_info=True)
