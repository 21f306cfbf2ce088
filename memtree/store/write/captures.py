"""Write-side SQL for captured content: files read by the wrapped read tool,
tool outputs (wrapped grep/bash), and hook ingest plans. Built on mutations."""

from __future__ import annotations

import hashlib

import orjson

from memtree import tokens
from memtree.errors import BadRequest, Refused
from memtree.gate import redact_text
from memtree.store import uris
from memtree.store.live import CURRENT, LIVE, status_clause
from memtree.store.write.mutations import (
    Tx,
    add_edges,
    change_status,
    content_hash,
    file_root,
    insert_node,
    prepare_content,
    session_root,
)


def _chunk_fields(c, i: int) -> tuple[int, int, str | None, str, str]:
    if not isinstance(c, dict):
        raise BadRequest(f"chunks[{i}] must be an object")
    start, end, content = c.get("start"), c.get("end"), c.get("content")
    symbol, ckind = c.get("symbol"), c.get("kind") or "window"
    if not isinstance(start, int) or not isinstance(end, int) or start < 1 or end < start:
        raise BadRequest(f"chunks[{i}]: start and end must be line numbers with 1 <= start <= end")
    if not isinstance(content, str):
        raise BadRequest(f"chunks[{i}]: content must be a string")
    if symbol is not None and not isinstance(symbol, str):
        raise BadRequest(f"chunks[{i}]: symbol must be a string or null")
    if not isinstance(ckind, str):
        raise BadRequest(f"chunks[{i}]: kind must be a string")
    return start, end, symbol, ckind, content


def _file_chunks(tx: Tx, root: str, statuses) -> list[tuple[str, str, dict, int]]:
    """(id, status, metadata, mtime) of a file root's chunks in the given statuses."""
    where, params = status_clause("n", statuses)
    rows = tx.db.execute(
        # INDEXED BY: without statistics SQLite took nodes_kind_created, every file chunk of the store.
        f"SELECT n.id, n.status, n.metadata, n.mtime FROM nodes n INDEXED BY nodes_parent"
        f" WHERE n.parent_id = ? AND n.kind = 'file_chunk' AND {where}",
        [root, *params],
    ).fetchall()
    return [(r[0], r[1], orjson.loads(r[2]), r[3]) for r in rows]


def _line(meta: dict, key: str) -> int:
    v = meta.get(key)
    return v if isinstance(v, int) else 0


def _successor(old: dict, new: list[tuple[str, int, int, str | None]]) -> str:
    """The new chunk that supersedes ``old``: same symbol, else most overlap, else the first."""
    sym = old.get("symbol")
    if sym:
        for nid, _s, _e, nsym in new:
            if nsym == sym:
                return nid
    best, best_overlap = new[0][0], 0
    for nid, s, e, _ in new:
        overlap = min(e, _line(old, "end")) - max(s, _line(old, "start")) + 1
        if overlap > best_overlap:
            best, best_overlap = nid, overlap
    return best


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def redact_whole(fields: list[tuple]) -> list[tuple]:
    """The chunks with their content cut from the whole file redacted at once,
    so a secret across a chunk edge (a key whose BEGIN line is in the previous
    window) is seen whole. Redaction keeps line counts; a chunk whose content
    is not its line range of the file is redacted on its own. Every returned
    content is redacted unless ``fields`` itself comes back (nothing done)."""
    lines: dict[int, str] = {}
    for start, _end, _sym, _kind, content in fields:
        for k, line in enumerate(_lines(content)):
            lines.setdefault(start + k, line)
    top = max(lines, default=0)
    if top == 0 or top > 200_000:
        return fields
    raw = [lines.get(n, "\n") for n in range(1, top + 1)]
    clean = _lines(redact_text("".join(raw))[0])
    if len(clean) != len(raw):
        return fields
    out = []
    for start, end, sym, kind, content in fields:
        same = "".join(raw[start - 1 : end]) == content
        out.append((start, end, sym, kind, "".join(clean[start - 1 : end]) if same else redact_text(content)[0]))
    return out


def put_file(tx: Tx, rec) -> dict:
    path = rec.path
    if not isinstance(path, str) or not path.startswith("/"):
        raise BadRequest("path must be an absolute path")
    fields = [_chunk_fields(c, i) for i, c in enumerate(rec.chunks)]
    if not fields:
        raise BadRequest("chunks must not be empty")
    root = file_root(tx, path)
    current = [c for c in _file_chunks(tx, root, ("live",)) if c[3] == rec.mtime and c[2].get("origin") == "read"]
    if current:
        current.sort(key=lambda c: (_line(c[2], "start"), c[0]))
        return {"root_id": root, "chunk_ids": [c[0] for c in current], "reused": True, "superseded": []}
    old = _file_chunks(tx, root, ("live", "stale"))
    new, chunk_ids, refused = [], [], []
    max_bytes = tx.config.capture.maxBytes
    whole = redact_whole(fields)
    for i, (start, end, symbol, ckind, content) in enumerate(whole):
        prepared = prepare_content(content, max_bytes, redacted=whole is not fields)
        meta = {
            "path": path,
            "start": start,
            "end": end,
            "symbol": symbol,
            "chunk": ckind,
            "tokens": tokens.count(prepared[0]),
            "origin": "read",
        }
        try:
            nid = insert_node(
                tx,
                "file_chunk",
                content,
                parent_id=root,
                source_uri=uris.file_uri(path, start, end),
                metadata=meta,
                session_id=rec.session_id,
                status="live",
                mtime=rec.mtime,
                prepared=prepared,
            )
        except Refused:  # a forgotten chunk stays forgotten; the rest of the file is stored
            chunk_ids.append(None)
            refused.append(i)
            continue
        chunk_ids.append(nid)
        new.append((nid, start, end, symbol))
    superseded, changed = [], False
    for old_id, status, meta, old_mtime in old:
        if not new:
            break
        # Same version: a hook capture (or an older chunking) replaced by read's chunks.
        reason = "file changed" if old_mtime != rec.mtime else "re-chunked by read (same file version)"
        changed = changed or old_mtime != rec.mtime
        if status == "live":
            change_status(tx, old_id, "file_chunk", "live", "stale", reason)
        change_status(tx, old_id, "file_chunk", "stale", "superseded", reason, action="supersede")
        add_edges(tx, [{"src": _successor(meta, new), "dst": old_id, "kind": "supersedes"}])
        superseded.append(old_id)
    out = {"root_id": root, "chunk_ids": chunk_ids, "reused": False, "superseded": superseded, "changed": changed}
    if refused:
        out["refused"] = refused
    return out


def recent_output(tx: Tx, digest: str) -> str | None:
    """A tool output with this content hash stored within capture.dedupeWindowS."""
    since = tx.now - int(tx.config.capture.dedupeWindowS * 1000)
    where, params = status_clause("n", CURRENT)
    row = tx.db.execute(
        f"SELECT n.id FROM nodes n INDEXED BY nodes_hash WHERE n.content_hash = ? AND n.kind = 'tool_output'"
        f" AND n.created_at >= ? AND {where} ORDER BY n.created_at DESC LIMIT 1",
        [digest, since, *params],
    ).fetchone()
    return row[0] if row else None


def _children_of(tx: Tx, parent: str) -> list[str]:
    where, params = status_clause("n", CURRENT)
    return [
        r[0]
        for r in tx.db.execute(
            f"SELECT n.id FROM nodes n WHERE n.parent_id = ? AND {where} ORDER BY n.id", [parent, *params]
        )
    ]


def put_tool_output(tx: Tx, rec) -> dict:
    if not rec.tool:
        raise BadRequest("tool must be a non-empty string")
    for i, c in enumerate(rec.children):
        if not isinstance(c, dict) or not isinstance(c.get("content"), str):
            raise BadRequest(f"children[{i}] must be an object with a content string")
        if c.get("kind", "file_chunk") not in ("file_chunk", "observation", "note"):
            raise BadRequest(f"children[{i}]: kind must be file_chunk, observation or note")
    prepared = prepare_content(rec.content, tx.config.capture.maxBytes)
    digest = content_hash(prepared[0])
    existing = recent_output(tx, digest)
    if existing:
        return {"id": existing, "child_ids": _children_of(tx, existing), "deduped": True}
    parent = session_root(tx, rec.session_id) if rec.session_id else None
    meta = dict(rec.metadata, tool=rec.tool)
    out_id = insert_node(
        tx,
        "tool_output",
        rec.content,
        parent_id=parent,
        source_uri=rec.source_uri or uris.tool_uri(rec.tool, digest),
        metadata=meta,
        session_id=rec.session_id,
        status="live",
        prepared=prepared,
    )
    child_ids = []
    for c in rec.children:
        try:
            child_ids.append(
                insert_node(
                    tx,
                    c.get("kind", "file_chunk"),
                    c["content"],
                    parent_id=out_id,
                    source_uri=c.get("source_uri"),
                    metadata=c.get("metadata") or {},
                    session_id=rec.session_id,
                    status="live",
                )
            )
        except Refused:
            child_ids.append(None)
    return {"id": out_id, "child_ids": child_ids, "deduped": False}


def _capture_key(tool_use_id, nodes: list, prepared: list) -> str | None:
    """tool_use_id + a hash of what would be stored (redacted, cut), so the raw
    payload and its redacted spooled copy get the same key."""
    if not isinstance(tool_use_id, str) or not tool_use_id:
        return None
    h = hashlib.sha256()
    for n, (text, _truncated, _original) in zip(nodes, prepared):
        h.update(f"{n.get('kind')}\0{n.get('source_uri')}\0{content_hash(text)}\n".encode("utf-8", "replace"))
    return f"{tool_use_id[:200]}:{h.hexdigest()[:32]}"


def apply_plan(tx: Tx, plan, tool_use_id: str | None = None) -> dict:
    """Store an ingest plan (a memtree.capture.plans.Plan); captured nodes land pending.

    Returns the fields of the ingest reply (memtree.protocol.IngestReply):
    ``stored`` ids, ``skipped`` (the Skip kind, or "forgotten" when every node
    was refused by a tombstone), ``deduped`` ids, ``refused`` count. A capture
    whose key (``_capture_key``) was stored before gets that first result
    again, marked ``duplicate``, and nothing new is stored."""
    if plan.skip:
        tx.audit("skipped", None, reason=plan.skip.detail)
        return {"stored": [], "skipped": plan.skip.kind}
    sid = plan.session_id or None
    nodes = plan.nodes
    prepared = _prepare_nodes(nodes, tx.config.capture.maxBytes)
    key = _capture_key(tool_use_id, nodes, prepared)
    if key is not None:
        row = tx.db.execute("SELECT result FROM capture_keys WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return dict(_stored_result(orjson.loads(row[0])), duplicate=True)
    out = _store_plan(tx, sid, nodes, prepared)
    if key is not None:
        tx.db.execute(
            "INSERT INTO capture_keys(key, result, at) VALUES (?, ?, ?)", (key, orjson.dumps(out).decode(), tx.now)
        )
    return out


def _stored_result(old: dict) -> dict:
    """A capture_keys result as apply_plan returns it now (rows written before
    the typed reply said ``ids`` and a human-readable ``skipped``)."""
    if "ids" in old:
        old = {**old, "stored": old.pop("ids")}
        if old.get("skipped"):
            old["skipped"] = "forgotten"
    return old


def _prepare_nodes(nodes: list, max_bytes: int) -> list:
    """Each node's content redacted and cut (prepare_content); the chunks of
    one Read (same file, same ``read`` range) are redacted as one text first,
    as put_file redacts a file, so a secret across a chunk edge is seen whole."""
    groups: dict[tuple, list[int]] = {}
    for i, n in enumerate(nodes):
        meta, parent = n.get("metadata") or {}, n.get("parent") or {}
        rng = meta.get("read") if isinstance(meta, dict) else None
        if n.get("kind") == "file_chunk" and "file" in parent and isinstance(rng, list):
            groups.setdefault((parent["file"], *rng), []).append(i)
    clean: dict[int, str] = {}
    for idx in groups.values():
        try:
            fields = [_chunk_fields({**nodes[i]["metadata"], "content": nodes[i].get("content")}, i) for i in idx]
        except BadRequest:
            continue  # not a well-formed range: each chunk is redacted on its own below
        whole = redact_whole(fields)
        if whole is not fields:
            clean.update((i, f[4]) for i, f in zip(idx, whole))
    return [
        prepare_content(clean[i], max_bytes, redacted=True)
        if i in clean
        else prepare_content(n.get("content") or "", max_bytes)
        for i, n in enumerate(nodes)
    ]


def _read_chunks(tx: Tx, root: str, mtime) -> list[tuple[str, int, int]]:
    """(id, start, end) of the live chunks the wrapped read stored for this version of a file."""
    if not isinstance(mtime, int) or not mtime:
        return []
    return [
        (cid, _line(meta, "start"), _line(meta, "end"))
        for cid, _status, meta, at in _file_chunks(tx, root, ("live",))
        if at == mtime and meta.get("origin") == "read"
    ]


def _stored_by_read(read: list[tuple[str, int, int]], meta) -> str | None:
    """The read chunk a captured chunk repeats, when read's chunks of that version
    hold all its lines (the two paths cut small symbols differently, so the contents
    need not be equal): the one that overlaps it most."""
    start, end = (_line(meta, "start"), _line(meta, "end")) if isinstance(meta, dict) else (0, 0)
    if not read or not 1 <= start <= end:
        return None
    inside = sorted((s, e, cid) for cid, s, e in read if s <= end and e >= start)
    reach = start
    for s, e, _ in inside:
        if s > reach:
            return None  # a gap (a forgotten chunk): the capture may hold lines read did not keep
        reach = max(reach, e + 1)
    if reach <= end:
        return None
    return max(inside, key=lambda t: min(t[1], end) - max(t[0], start))[2]


def _store_plan(tx: Tx, sid: str | None, nodes: list, prepared: list) -> dict:
    refs: dict[str, str | None] = {}
    roots: dict[str, str] = {}  # a Read's chunks share one file root: found once
    read_versions: dict[tuple, list] = {}  # (root, mtime) -> that version's chunks stored by the wrapped read
    ids, deduped, refused = [], [], 0
    for n, prep in zip(nodes, prepared):
        parent = n.get("parent") or {}
        if "with" in n and refs.get(n["with"]) is None:  # stored only beside that node (a Grep's hits, its output)
            refs[n.get("ref")] = None
            continue
        if "ref" in parent:
            parent_id = refs.get(parent["ref"])
            if parent_id is None:  # parent refused or deduplicated: its children go with it
                refs[n.get("ref")] = None
                continue
        elif "file" in parent:
            if parent["file"] not in roots:
                roots[parent["file"]] = file_root(tx, parent["file"])
            parent_id = roots[parent["file"]]
        elif "session" in parent:
            parent_id = session_root(tx, parent["session"])
        else:
            parent_id = session_root(tx, sid) if sid else None
        kind, uri = n.get("kind"), n.get("source_uri")
        if kind == "file_chunk" and "file" in parent:
            version = (parent_id, n.get("mtime"))
            if version not in read_versions:
                read_versions[version] = _read_chunks(tx, *version)
            same = _stored_by_read(read_versions[version], n.get("metadata"))
            if same:  # this version is stored already, as the wrapped read cut it
                deduped.append(same)
                refs[n.get("ref")] = None
                continue
        if kind == "tool_output":
            digest = content_hash(prep[0])
            dup = recent_output(tx, digest)
            if dup:
                deduped.append(dup)
                refs[n.get("ref")] = None
                continue
            if uri and "#" not in uri:  # keyed by the stored (redacted) content, never the raw output
                uri = f"{uri}#{digest}"
        try:
            node_id = insert_node(
                tx,
                kind,
                "",
                parent_id=parent_id,
                source_uri=uri,
                metadata=n.get("metadata") or {},
                session_id=sid,
                status="pending",
                mtime=n.get("mtime") or 0,
                prepared=prep,
            )
        except Refused:
            refused += 1
            refs[n.get("ref")] = None
            continue
        refs[n.get("ref")] = node_id
        ids.append(node_id)
    out = {"stored": ids, "skipped": None}
    if deduped:
        out["deduped"] = deduped
    if refused:
        out["refused"] = refused
        if not ids and not deduped:
            out["skipped"] = "forgotten"  # audited as refused by insert_node
    return out


def shown_id(tx: Tx, node_id: str) -> str:
    """The id to give the agent for a just-stored capture: a Read's chunk (or
    the wrapped read's chunk that made it a duplicate) names its file's root
    (``recall ids=<root>`` shows the file as stored); the filter walker drops
    a pending node whose content equals a live node's, so otherwise name that
    live node."""
    row = tx.db.execute(
        "SELECT n.kind, n.metadata, p.kind, p.id FROM nodes n JOIN nodes p ON p.id = n.parent_id WHERE n.id = ?",
        (node_id,),
    ).fetchone()
    if row and row[0] == "file_chunk" and row[2] == "file":
        meta = orjson.loads(row[1])
        if "read" in meta or meta.get("origin") == "read":  # a Read's chunk, or the one read stored instead
            return row[3]
    where, params = status_clause("o", LIVE)
    row = tx.db.execute(
        # INDEXED BY: without it SQLite walked every live node (nodes_status_created) for each
        # capture the hook asked a replacement for: 805 ms at 1M nodes, 0.2 ms by hash.
        f"SELECT o.id FROM nodes n JOIN nodes o INDEXED BY nodes_hash ON o.content_hash = n.content_hash"
        f" AND o.id != n.id"
        f" WHERE n.id = ? AND {where} ORDER BY o.created_at LIMIT 1",
        [node_id, *params],
    ).fetchone()
    return row[0] if row else node_id


MAX_CAPTURE_CHUNKS = 20_000  # rows looked at for one file's latest capture


def _read_range(meta: dict) -> tuple[int, int]:
    """The lines one Read returned (a chunk's ``read``; a capture stored whole is its own range)."""
    rng = meta.get("read")
    if isinstance(rng, list) and len(rng) == 2 and all(isinstance(v, int) for v in rng):
        return rng[0], rng[1]
    return _line(meta, "start"), _line(meta, "end")


def latest_file_capture(tx: Tx, path: str) -> tuple[str, str, int] | None:
    """(file root id, content, total lines) of the newest whole-file capture of
    ``path``: what an earlier native Read of it showed, put together from its
    chunks (pending, live, or dropped by the filter as a duplicate or too small;
    never a forgotten one)."""
    where, params = status_clause("n", ("pending", "live", "dropped"))
    rows = tx.db.execute(
        f"SELECT n.content, n.metadata, n.created_at, p.id FROM nodes n JOIN nodes p ON p.id = n.parent_id"
        f" WHERE p.source_uri = ? AND n.kind = 'file_chunk' AND {where} ORDER BY n.created_at DESC LIMIT ?",
        [uris.file_uri(path), *params, MAX_CAPTURE_CHUNKS],
    ).fetchall()
    parsed = [(content, orjson.loads(meta), at, root) for content, meta, at, root in rows]
    for _content, m, at, root in parsed:
        rng = _read_range(m)
        total = m.get("total_lines")
        if (
            m.get("origin") != "hook"
            or rng[0] != 1
            or not isinstance(total, int)
            or not (rng[1] == total or m.get("truncated_by_token_cap"))
        ):
            continue
        parts = sorted(
            (_line(pm, "start"), _line(pm, "end"), c)
            for c, pm, pat, _ in parsed
            if pat == at and _read_range(pm) == rng
        )
        line = 1
        for start, end, _c in parts:
            if start != line:
                break
            line = end + 1
        else:  # numLines counts the empty line after a final newline: the last chunk may end one before
            if line - 1 in (rng[1], rng[1] - 1):
                return root, "".join(c for _s, _e, c in parts), total
    return None


def is_spool_applied(db, entry_id: str) -> bool:
    return db.execute("SELECT 1 FROM spool_applied WHERE entry_id = ?", (entry_id,)).fetchone() is not None


def mark_spool_applied(db, entry_id: str, at: int, file: str | None = None) -> None:
    """``file``: the draining file the entry came from; its ids go with it (store/write/bookkeeping.py)."""
    db.execute("INSERT OR IGNORE INTO spool_applied(entry_id, at, file) VALUES (?, ?, ?)", (entry_id, at, file))


__all__ = [
    "put_file",
    "put_tool_output",
    "apply_plan",
    "recent_output",
    "shown_id",
    "latest_file_capture",
    "is_spool_applied",
    "mark_spool_applied",
]
