"""Bookkeeping's own bounded retention (``Tidy``, sent by the pruner every
sweep; the WAL is truncated after it): the audit log, the capture keys and
the applied-spool ids would otherwise grow with every capture and fill the
disk budget (storage.maxBytes), which they count against like the rest.

- audit: rows past ``AUDIT_SHARE`` of the budget are compacted, oldest first,
  into per-month counts (``audit_rollup``: month, actor, action, n, first and
  last time). ``forget`` rows are kept whole: they record what a person asked
  to erase, and only a person makes them.
- capture_keys (one capture stored once, captures.apply_plan): a key only
  matters while a second copy of its capture can still arrive, that is a
  spooled copy (the hook spools within its ack wait, seconds after the
  capture; the spool may then wait for the writer) or the direct send of a
  spooled one. A key goes once it is older than ``RETRY_WINDOW_MS`` and older
  than the oldest spool entry not yet applied (minus the same window). A
  forgotten capture stays refused without its key: its tombstones refuse it.
- spool_applied: an entry id guards only the draining file it came from;
  the writer drops a file's ids once the file is deleted (``spool_file_done``)
  and, at start, those of files no longer there (``spool_files_gone``).

Called by the writer only, in its transaction, audited like every mutation.
"""

from __future__ import annotations

from memtree.store.budget import AUDIT_SHARE
from memtree.store.write.mutations import Tx

# A hook acks or spools within capture.hookTimeoutMs + 2 s (hooks/post_tool_use.py); sixty times that.
RETRY_WINDOW_MS = 2 * 60 * 1000
AUDIT_COMPACT_ROWS = 20_000  # rows compacted per call at most: one bounded transaction; the pruner calls again
AUDIT_KEEP = 0.8  # compact down to this fraction of the share, so one capture does not start it again
_AUDIT_ROW_OVERHEAD = 48  # bytes per row besides its text: rowid, integers, record header, index entry


def tidy(tx: Tx, spool_since: int = 0) -> dict:
    """One bounded pass; ``spool_since`` is the capture time (ms) of the oldest
    spool entry not yet applied (0: the spool is empty). ``more`` says whether
    audit rows are still over their share."""
    compacted, more = compact_audit(tx, int(tx.config.storage.maxBytes * AUDIT_SHARE))
    keys = trim_capture_keys(tx, spool_since)
    if compacted or keys:
        tx.audit(
            "tidy",
            None,
            reason="bookkeeping retention",
            detail={"audit_compacted": compacted, "capture_keys_dropped": keys},
        )
    # Free pages back to the OS (cheap: no FTS rewrite; that is Reclaim's, when over budget).
    before = tx.db.execute("PRAGMA freelist_count").fetchone()[0]
    tx.db.execute("PRAGMA incremental_vacuum").fetchall()
    freed = before - tx.db.execute("PRAGMA freelist_count").fetchone()[0]
    return {"audit_compacted": compacted, "capture_keys_dropped": keys, "freed_pages": freed, "more": more}


def audit_row_bytes(db) -> float:
    """Bytes one audit row takes, table and index, from the newest rows."""
    row = db.execute(
        "SELECT avg(length(actor) + length(action) + 2 * coalesce(length(node_id), 0)"
        " + coalesce(length(from_status), 0) + coalesce(length(to_status), 0) + length(reason) + length(detail))"
        " FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT 256)"
    ).fetchone()
    return (row[0] or 0) + _AUDIT_ROW_OVERHEAD


def compact_audit(tx: Tx, share_bytes: int) -> tuple[int, bool]:
    """(rows compacted, still over): the oldest audit rows past ``share_bytes``
    become per-month counts."""
    db = tx.db
    first = db.execute("SELECT seq FROM audit WHERE action != 'forget' ORDER BY seq LIMIT 1").fetchone()
    last = db.execute("SELECT max(seq) FROM audit").fetchone()[0]
    if first is None or last is None:
        return 0, False
    rows = last - first[0] + 1  # compaction removes a prefix, so the rest is (nearly) contiguous
    keep = int(share_bytes / audit_row_bytes(db))
    if rows <= keep:
        return 0, False
    cut = min(last - int(keep * AUDIT_KEEP), first[0] + AUDIT_COMPACT_ROWS)
    db.execute(
        "INSERT INTO audit_rollup(month, actor, action, n, first_at, last_at)"
        " SELECT strftime('%Y-%m', at / 1000, 'unixepoch'), actor, action, count(*), min(at), max(at)"
        " FROM audit WHERE seq < ? AND action != 'forget' GROUP BY 1, 2, 3"
        " ON CONFLICT(month, actor, action) DO UPDATE SET n = n + excluded.n,"
        " first_at = min(first_at, excluded.first_at), last_at = max(last_at, excluded.last_at)",
        (cut,),
    )
    db.execute("DELETE FROM audit WHERE seq < ? AND action != 'forget'", (cut,))
    done = db.changes()
    return done, last - cut + 1 > keep


def trim_capture_keys(tx: Tx, spool_since: int = 0) -> int:
    cutoff = tx.now - RETRY_WINDOW_MS
    if spool_since > 0:
        cutoff = min(cutoff, spool_since - RETRY_WINDOW_MS)
    tx.db.execute("DELETE FROM capture_keys WHERE at < ?", (cutoff,))
    return tx.db.changes()


def spool_file_done(db, name: str) -> None:
    """The draining file ``name`` is deleted: its applied ids guard nothing now."""
    db.execute("DELETE FROM spool_applied WHERE file = ?", (name,))


def spool_files_gone(db, existing: list[str]) -> None:
    """Drop the applied ids of draining files that are no longer there (a crash
    between deleting a file and forgetting its ids). Ids from before files
    were recorded (``file`` NULL) go once no draining file is left."""
    marks = ",".join("?" * len(existing))
    db.execute(
        f"DELETE FROM spool_applied WHERE file IS NOT NULL AND file NOT IN ({marks})"
        if existing
        else "DELETE FROM spool_applied WHERE file IS NOT NULL",
        existing,
    )
    if not existing:
        db.execute("DELETE FROM spool_applied WHERE file IS NULL")
