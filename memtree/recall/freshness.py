"""Freshness at answer time: a file chunk whose file changed on disk since
capture is marked stale in the answer, and the writer is told so the store
learns it too (the staleness walker would, but only on its next sweep).
"""

from __future__ import annotations

import logging
import os

from memtree import protocol
from memtree.errors import MemtreeError
from memtree.recall.render import metadata
from memtree.store import uris

log = logging.getLogger(__name__)

# The one rule for "this file chunk no longer matches its file", shared by
# answers here and by the staleness walker's sweeps.
REASON = "file changed on disk since capture"
GONE = "file deleted"


def chunk_file(node: dict) -> str | None:
    """The file behind a chunk: its metadata ``path``, else its ``file://`` uri
    (written unquoted, as ``file://<abs path>#L<start>-<end>``)."""
    path = metadata(node).get("path")
    if isinstance(path, str) and path.startswith("/"):
        return path
    return uris.file_path(node.get("source_uri"))


def mtime_changed(stored: int, created_at_ms: int, st) -> bool:
    """Whether the file's mtime is no longer the one the chunk was made from.

    Chunks store nanoseconds; older captures may hold milliseconds, or nothing
    (0), in which case the file only counts as changed once it is newer than
    the chunk itself.
    """
    if stored >= 10**15:  # nanoseconds (any date after 1970-01-12)
        return st.st_mtime_ns != stored
    if stored:
        return st.st_mtime_ns // 1_000_000 != stored
    return st.st_mtime_ns // 1_000_000 > created_at_ms


def disk_change(node: dict, stat=os.stat) -> str | None:
    """Why a file chunk is out of date on disk (REASON or GONE), or None.
    A file that cannot be stat'ed for another reason is judged next time."""
    if node.get("kind") != "file_chunk":
        return None
    path = chunk_file(node)
    if path is None:
        return None
    try:
        st = stat(path)
    except FileNotFoundError:
        return GONE
    except OSError:
        return None
    return REASON if mtime_changed(node.get("mtime") or 0, node.get("created_at") or 0, st) else None


def check(svc, nodes) -> set[str]:
    """Ids of ``nodes`` that are stale on disk; live ones are sent to the
    writer as SetStatus(stale, expect=[live]) in the background."""
    stale = {n["id"] for n in nodes if disk_change(n)}
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
