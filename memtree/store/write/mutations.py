"""Write-side SQL: the only code that changes rows. Called by the writer only.

Every function takes a ``Tx``: one request's view of the writer's open
transaction (who asks, the config, what changed). Every mutation writes its
audit rows through ``Tx.audit`` in the same transaction, and every piece of
content goes through ``prepare_content`` (redaction, then truncation) before
it is stored: the one gate. The gate covers every stored field, not only
content: metadata (a command, a pattern), source URIs, audit reasons and
details, tombstone reasons. Each node records the gate version that cleaned
it (``metadata.redaction``), so recall can re-apply a newer gate.
"""

from __future__ import annotations

import functools
import hashlib

import orjson

from memtree.errors import BadRequest, NotFound, Refused
from memtree.gate import REDACTION_VERSION, redact_text, redact_value
from memtree.ids import now_ms, ulid
from memtree.store import defined, uris
from memtree.store.kinds import EDGE_KINDS, NODE_KINDS, ROOT_KINDS
from memtree.store.live import ANY_STATUS, INDEXED, STATUSES, status_clause
from memtree.store.write import forgetting, fts

INSERT_STATUSES = ("pending", "live")
# Statuses that take a node out of every index (FTS by trigger, vectors here).
UNINDEXED = ("pruned", "dropped", "forgotten")


class Tx:
    """One request inside the writer's batch transaction."""

    def __init__(self, db, config, actor: str, at: int | None = None, project_root: str | None = None):
        self.db = db
        self.config = config
        self.project_root = project_root  # hook captures outside it are refused (memtree/gate/paths.py)
        self.actor = actor or "?"
        self.now = at or now_ms()
        self.changed: dict[str, dict[str, str]] = {}  # status -> {node id: kind}
        # Writes that must survive this request's rollback (refusal audits, counters).
        self.keep: list[tuple[str, tuple]] = []

    def audit(
        self,
        action: str,
        node_id: str | None,
        from_status: str | None = None,
        to_status: str | None = None,
        reason: str = "",
        detail: dict | str | None = None,
    ) -> None:
        """An audit row; ``detail`` a dict, or JSON text that went through the gate already."""
        self.db.execute(
            "INSERT INTO audit(at, actor, action, node_id, from_status, to_status, reason, detail)"
            " VALUES (?,?,?,?,?,?,?,?)",
            (
                now_ms(),
                self.actor,
                action,
                node_id,
                from_status,
                to_status,
                clean(reason),
                detail if isinstance(detail, str) else _json(clean_meta(detail)),
            ),
        )

    def audit_kept(self, action: str, node_id: str | None, reason: str, detail: dict | None = None) -> None:
        """An audit row written even if the request is rolled back (e.g. a refusal)."""
        self.keep.append(
            (
                "INSERT INTO audit(at, actor, action, node_id, from_status, to_status, reason, detail)"
                " VALUES (?,?,?,?,NULL,NULL,?,?)",
                (now_ms(), self.actor, action, node_id, clean(reason), _json(clean_meta(detail))),
            )
        )

    def count_kept(self, name: str, n: int = 1) -> None:
        self.keep.append((_BUMP, (name, n)))

    def note(self, node_id: str, kind: str, status: str) -> None:
        for ids in self.changed.values():
            ids.pop(node_id, None)
        self.changed.setdefault(status, {})[node_id] = kind


_BUMP = "INSERT INTO counters(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value"


def bump_counter(db, name: str, n: int = 1) -> None:
    db.execute(_BUMP, (name, n))


def clean(text):
    """A short stored string (reason, source URI) through the redaction gate."""
    return redact_text(text)[0] if isinstance(text, str) and text else text


def clean_meta(meta) -> dict:
    """Metadata through the redaction gate: every string, keys included."""
    return redact_value(meta)[0] if meta else {}


def _json(obj) -> str:
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# Redaction costs up to ~1 s per MB (dense base64), so a huge capture is cut
# well past max_bytes before it is redacted. The margin outlasts any bounded
# secret pattern, and an unterminated private-key block is redacted to the
# end, so nothing straddling the first cut survives into the kept part.
REDACT_MARGIN_CHARS = 16384


def prepare_content(text: str, max_bytes: int, redacted: bool = False) -> tuple[str, bool, int]:
    """Redact (unless the caller just did, as put_file does for a whole file),
    then cut to ``max_bytes`` on a character boundary.

    Returns (stored text, truncated, bytes before truncation).
    """
    original = None
    if len(text) > max_bytes + REDACT_MARGIN_CHARS:
        original = len(text.encode("utf-8", "replace"))
        text = text[: max_bytes + REDACT_MARGIN_CHARS]  # >= that many bytes: the final cut still applies
    clean = text if redacted else redact_text(text)[0]
    raw = clean.encode("utf-8", "replace")  # lone surrogates cannot be stored as UTF-8
    if len(raw) <= max_bytes and original is None:
        return raw.decode("utf-8"), False, len(raw)
    return raw[:max_bytes].decode("utf-8", "ignore"), True, original or len(raw)


def node_row(db, node_id: str):
    """(kind, status, content_hash, parent_id) of any node, whatever its status."""
    where, params = status_clause("n", ANY_STATUS)  # the writer must see every status to change one
    return db.execute(
        f"SELECT n.kind, n.status, n.content_hash, n.parent_id FROM nodes n WHERE n.id = ? AND {where}",
        [node_id, *params],
    ).fetchone()


@functools.cache
def _insert_detail(kind: str, truncated: bool) -> str:
    """An insert's audit detail through the gate, once per kind (a known word) and flag."""
    return _json(clean_meta({"kind": kind, "truncated": truncated}))


def _require(db, node_id, what: str):
    if not isinstance(node_id, str) or not node_id:
        raise BadRequest(f"{what} must be a node id")
    row = node_row(db, node_id)
    if row is None:
        raise NotFound(f"{what} {node_id!r} does not exist")
    return row


def insert_node(
    tx: Tx,
    kind: str,
    content: str,
    *,
    parent_id: str | None = None,
    source_uri: str | None = None,
    metadata: dict | None = None,
    session_id: str | None = None,
    status: str = "pending",
    mtime: int = 0,
    prepared: tuple | None = None,
) -> str:
    """Insert one node through the redaction gate; Refused if its content was forgotten."""
    if kind not in NODE_KINDS:
        raise BadRequest(f"unknown node kind {kind!r}; expected one of {', '.join(NODE_KINDS)}")
    if status not in INSERT_STATUSES:
        raise BadRequest(f"a new node's status must be pending or live, not {status!r}")
    text, truncated, original = prepared or prepare_content(content, tx.config.capture.maxBytes)
    digest = content_hash(text)
    cut = 0
    if kind not in ROOT_KINDS:
        hit, lines = forgetting.tombstone_check(tx.db, digest)
        text, cut, gone = (text, 0, False) if hit else forgetting.scrub_new(tx.db, text, lines)
        if hit or gone:
            tx.audit_kept(
                "refused",
                None,
                "content was forgotten (tombstoned)",
                {"hash": digest, "kind": kind, "source_uri": clean(source_uri)},
            )
            raise Refused("this content was forgotten earlier and is not stored again")
        if cut:
            digest = content_hash(text)
            tx.audit_kept(
                "refused",
                None,
                f"{cut} forgotten lines left out of a new capture",
                {"kind": kind, "source_uri": clean(source_uri), "forgotten_lines": cut},
            )
    node_id = ulid()
    source_uri = clean(source_uri)
    metadata = dict(clean_meta(metadata), redaction=REDACTION_VERSION)
    tx.db.execute(
        "INSERT INTO nodes(id, parent_id, kind, source_uri, content, content_hash, status, mtime,"
        " created_at, updated_at, truncated, original_bytes, metadata, session_id)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            node_id,
            parent_id,
            kind,
            source_uri,
            text,
            digest,
            status,
            int(mtime),
            tx.now,
            tx.now,
            int(truncated),
            original,
            _json(metadata or {}),
            session_id,
        ),
    )
    tx.audit("insert", node_id, None, status, detail=_insert_detail(kind, truncated))
    tx.note(node_id, kind, status)
    return node_id


def _find_root(tx: Tx, kind: str, source_uri: str) -> str | None:
    where, params = status_clause("n", INDEXED)
    row = tx.db.execute(
        # INDEXED BY: without statistics SQLite walks nodes_kind_created (every root of the kind, for
        # the ORDER BY) instead of the one or two rows of this uri; that was a third of seeding at 50k nodes.
        f"SELECT n.id FROM nodes n INDEXED BY nodes_source WHERE n.kind = ? AND n.source_uri = ? AND {where}"
        " ORDER BY n.created_at LIMIT 1",
        [kind, source_uri, *params],
    ).fetchone()
    return row[0] if row else None


def session_root(tx: Tx, session_id: str) -> str:
    """Find or create the live root node of a session."""
    if not isinstance(session_id, str) or not session_id:
        raise BadRequest("session id must be a non-empty string")
    uri = uris.session_uri(session_id)
    return _find_root(tx, "session", uri) or insert_node(
        tx, "session", "", source_uri=uri, metadata={"session": session_id}, session_id=session_id, status="live"
    )


def file_root(tx: Tx, path: str) -> str:
    """Find or create the live root node of a file (source_uri ``file://<abs path>``)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise BadRequest("file path must be an absolute path")
    uri = clean(uris.file_uri(path))  # looked up as stored
    return _find_root(tx, "file", uri) or insert_node(
        tx, "file", "", source_uri=uri, metadata={"path": path}, status="live"
    )


def add_node(tx: Tx, rec) -> dict:
    parent_id = rec.parent_id
    if parent_id is not None:
        _require(tx.db, parent_id, "parent_id")
    elif rec.session_id and rec.kind != "session":
        parent_id = session_root(tx, rec.session_id)
    node_id = insert_node(
        tx,
        rec.kind,
        rec.content,
        parent_id=parent_id,
        source_uri=rec.source_uri,
        metadata=rec.metadata,
        session_id=rec.session_id,
        status=rec.status,
        mtime=rec.mtime,
    )
    refs = []
    for ref in rec.refs:
        if not isinstance(ref, dict):
            raise BadRequest("each ref must be an object with dst and kind")
        refs.append({"src": node_id, "dst": ref.get("dst"), "kind": ref.get("kind")})
    add_edges(tx, refs)
    return {"id": node_id, "status": rec.status}


def set_status(tx: Tx, ids: list, status: str, reason: str = "", expect: list | None = None) -> list[str]:
    """Change status; only rows whose status is in ``expect`` (when given). Returns changed ids."""
    if status not in STATUSES:
        raise BadRequest(f"unknown status {status!r}; expected one of {', '.join(STATUSES)}")
    if status == "forgotten":
        raise BadRequest("use Forget to forget a node; it also tombstones the content")
    if expect is not None:
        bad = [s for s in expect if s not in STATUSES]
        if bad:
            raise BadRequest(f"unknown status {bad[0]!r} in expect")
    if not all(isinstance(i, str) for i in ids):
        raise BadRequest("ids must be a list of node id strings")
    changed = []
    for node_id in dict.fromkeys(ids):
        row = node_row(tx.db, node_id)
        if row is None or row[1] == status or (expect is not None and row[1] not in expect):
            continue
        if row[0] == "note" and status == "pruned":
            continue  # nothing but Forget removes a note (a person or the agent decided to keep it)
        change_status(tx, node_id, row[0], row[1], status, reason)
        changed.append(node_id)
    return changed


def change_status(tx: Tx, node_id: str, kind: str, old: str, new: str, reason: str, action: str = "status") -> None:
    tx.db.execute("UPDATE nodes SET status = ?, updated_at = ? WHERE id = ?", (new, tx.now, node_id))
    if new in UNINDEXED:
        tx.db.execute("DELETE FROM nodes_vec WHERE node_id = ?", (node_id,))
    tx.audit(action, node_id, old, new, reason)
    tx.note(node_id, kind, new)


def add_edges(tx: Tx, edges: list) -> int:
    added = 0
    for e in edges:
        if not isinstance(e, dict):
            raise BadRequest("each edge must be an object with src, dst and kind")
        kind = e.get("kind")
        if kind not in EDGE_KINDS:
            raise BadRequest(f"unknown edge kind {kind!r}; expected one of {', '.join(EDGE_KINDS)}")
        src, dst = e.get("src"), e.get("dst")
        _require(tx.db, src, "edge src")
        _require(tx.db, dst, "edge dst")
        if src == dst:
            raise BadRequest("an edge cannot point at its own source")
        tx.db.execute(
            "INSERT OR IGNORE INTO edges(src_id, dst_id, kind, created_at) VALUES (?,?,?,?)", (src, dst, kind, tx.now)
        )
        if tx.db.changes():
            added += 1
            tx.audit("edge", src, reason=kind, detail={"dst": dst, "kind": kind})
    return added


def forget(tx: Tx, node_id: str, reason: str) -> dict:
    """Forget a node, everything under it and every copy of its text: exact
    duplicates (a dropped one too), summaries that quote it, and lines of it
    inside other rows (scrubbed there, or the row forgotten when nothing else
    is left). Content emptied (leaves FTS), vectors deleted, content hash and
    line keys tombstoned, reason audited."""
    if not isinstance(reason, str) or not reason.strip():
        raise BadRequest("forget needs a reason")
    kind, status, digest, _ = _require(tx.db, node_id, "node_id")
    reason = clean(reason)
    todo = forgetting.subtree(tx.db, [node_id])
    todo += [s for s in _summaries_above(tx.db, node_id) if s not in todo]
    seen: list[str] = []
    scrubbed: list[str] = []
    lines: dict[str, str] = {}
    for _ in range(8):  # copies of copies (a summary of a duplicate); a few rounds reach them all
        new = [n for n in forgetting.subtree(tx.db, todo) if n not in seen]
        if not new:
            break
        seen += new
        rows = {n: _content(tx.db, n) for n in new}
        for nkind, text in rows.values():
            if nkind not in ROOT_KINDS:
                lines.update(forgetting.distinctive_lines(text))
        skip = set(seen)
        hashes = [node_row(tx.db, n)[2] for n in new if rows[n][0] not in ROOT_KINDS]
        todo = forgetting.same_hash(tx.db, hashes, skip) + forgetting.summaries_of(tx.db, new, skip)
        for nid, text in forgetting.holding_lines(tx.db, lines, skip | set(todo)) if lines else ():
            cleaned, cut, gone = forgetting.scrub(text, set(lines))
            if gone:
                todo.append(nid)
            elif cut:
                _rewrite(tx, nid, cleaned, cut, reason)
                scrubbed.append(nid)
    for nid in seen:
        _forget_one(tx, nid, reason)
    # A deleted row's tokens stay in old FTS segments until a merge: rewrite the
    # index now (forget is rare and asked for; FTS5 'secure-delete' reported
    # corruption with this external-content table, so it is not used).
    tx.db.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")
    return {"id": node_id, "hash": digest, "forgotten": seen, "scrubbed": scrubbed}


def _content(db, node_id: str) -> tuple[str, str]:
    where, params = status_clause("n", ANY_STATUS)  # forgetting reaches every status
    row = db.execute(f"SELECT n.kind, n.content FROM nodes n WHERE n.id = ? AND {where}", [node_id, *params]).fetchone()
    return (row[0], row[1] or "") if row else ("", "")


def _forget_one(tx: Tx, nid: str, reason: str) -> None:
    nkind, nstatus, nhash, _ = node_row(tx.db, nid)
    if nstatus == "forgotten":
        return
    if nkind not in ROOT_KINDS:
        forgetting.add_tombstones(tx.db, nid, nhash, _content(tx.db, nid)[1], reason, tx.now)
    tx.db.execute("UPDATE nodes SET status = 'forgotten', content = '', updated_at = ? WHERE id = ?", (tx.now, nid))
    tx.db.execute("DELETE FROM nodes_vec WHERE node_id = ?", (nid,))
    tx.audit("forget", nid, nstatus, "forgotten", reason)
    tx.note(nid, nkind, "forgotten")


def _rewrite(tx: Tx, nid: str, text: str, cut: int, reason: str) -> None:
    """Another row that quoted forgotten lines keeps the rest; its vector goes (it was made from the old text)."""
    tx.db.execute(
        "UPDATE nodes SET content = ?, content_hash = ?, updated_at = ? WHERE id = ?",
        (text, content_hash(text), tx.now, nid),
    )
    tx.db.execute("DELETE FROM nodes_vec WHERE node_id = ?", (nid,))
    tx.audit("scrub", nid, reason=reason, detail={"forgotten_lines": cut})


def _summaries_above(db, node_id: str) -> list[str]:
    """Summaries of the subtrees that hold ``node_id`` (of its ancestors): they
    quote what is forgotten, so they are forgotten with it."""
    where, params = status_clause("n", ANY_STATUS)
    out, cur = [], node_id
    for _ in range(64):  # a parent chain is short; the cap guards a cycle
        row = node_row(db, cur)
        if row is None or row[3] is None:
            break
        cur = row[3]
        out += [
            r[0]
            for r in db.execute(
                f"SELECT n.id FROM nodes n WHERE n.parent_id = ? AND n.kind = 'summary' AND n.id != ? AND {where}",
                [cur, node_id, *params],
            )
        ]
    return out


# -- purge (the pruner's last step; added by the tools/walkers engineer) -----------


def purge(tx: Tx, ids: list, reason: str) -> list[str]:
    """Delete the rows of pruned nodes (with their edges and vectors); every
    other status is left alone. Their audit rows stay, plus one ``purge`` row."""
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise BadRequest("ids must be a list of node id strings")
    purged = []
    for node_id in dict.fromkeys(ids):
        row = node_row(tx.db, node_id)
        if row is None or row[1] != "pruned" or row[0] == "note":  # a note is never deleted
            continue
        tx.db.execute("DELETE FROM nodes_vec WHERE node_id = ?", (node_id,))
        tx.db.execute("DELETE FROM edges WHERE src_id = ? OR dst_id = ?", (node_id, node_id))
        tx.db.execute("DELETE FROM nodes WHERE id = ?", (node_id,))
        tx.audit("purge", node_id, "pruned", None, reason, detail={"kind": row[0]})
        purged.append(node_id)
    return purged


def reclaim(tx: Tx, pages: int) -> dict:
    """Hand free pages back to the OS (auto_vacuum=INCREMENTAL); the file
    shrinks at the writer's next checkpoint. The FTS index is optimized
    first: deleting a row only adds a delete marker to it, so its pages would
    stay in use until segments merge."""
    if not isinstance(pages, int) or pages < 0:
        raise BadRequest("pages must be a non-negative integer (0 = every free page)")
    tx.db.execute("INSERT INTO nodes_fts(nodes_fts) VALUES('optimize')")
    before = tx.db.execute("PRAGMA freelist_count").fetchone()[0]
    # One page per step: the pragma runs only as far as its rows are read.
    tx.db.execute(f"PRAGMA incremental_vacuum({pages})" if pages else "PRAGMA incremental_vacuum").fetchall()
    after = tx.db.execute("PRAGMA freelist_count").fetchone()[0]
    return {"freed_pages": before - after}


def rebuild_indexes(tx: Tx, reason: str) -> dict:
    """Derived indexes from nodes: the FTS index and the index of definitions
    hold exactly the indexed statuses, and no vector outlives its node's indexed life. (The embed walker
    re-embeds live nodes that have none.)"""
    indexed, iparams = status_clause("n", INDEXED)
    fts.settle(tx.db)
    tx.db.execute("INSERT INTO nodes_fts(nodes_fts) VALUES('delete-all')")
    tx.db.execute(
        f"INSERT INTO nodes_fts(rowid, content, source_uri)"
        f" SELECT n.rowid, n.content, n.source_uri FROM nodes n WHERE {indexed}",
        iparams,
    )
    tx.db.execute("DELETE FROM defined")
    tx.db.execute("DELETE FROM defined_todo")
    defined.add_names(tx.db, indexed, iparams)
    fts_rows = tx.db.execute(f"SELECT count(*) FROM nodes n WHERE {indexed}", iparams).fetchone()[0]
    # Vectors of stale and superseded nodes are kept on purpose (store/integrity.py).
    tx.db.execute(f"DELETE FROM nodes_vec WHERE node_id NOT IN (SELECT n.id FROM nodes n WHERE {indexed})", iparams)
    dropped = tx.db.changes()
    tx.audit("rebuild_indexes", None, None, None, reason, detail={"fts_rows": fts_rows, "vectors_dropped": dropped})
    return {"fts_rows": fts_rows, "vectors_dropped": dropped}
