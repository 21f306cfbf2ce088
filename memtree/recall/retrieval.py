"""The retrieval and note tools behind the MCP front: ``async def tool(svc, **args) -> str``.

Reads go through store/reads.py (live only unless the caller names other
statuses); writes are writer calls. Budgets are the front wrapper's job.
"""

from __future__ import annotations

import re

from memtree import protocol
from memtree.errors import BadRequest, NotFound
from memtree.recall import freshness, render
from memtree.recall.search import (
    MAX_LIMIT,
    check_filters,
    check_limit,
    check_mode,
    fts_query,
    parse_time,
    query_vector,
    run,
    str_list,
    with_snippets,
)
from memtree.store import reads
from memtree.store.kinds import EDGE_KINDS, TREE_KINDS
from memtree.store.live import ANY_STATUS, STATUSES, check_statuses
from memtree.text.chunking import split_lines
from memtree.tools import call_repr

_ID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
MAX_NEIGHBOR_DEPTH = 5
MAX_NEIGHBORS = 200  # nodes reached: a session root can link thousands
MAX_NOTE_CHARS = 100_000
MAX_REASON_CHARS = 500


def check_id(value, name: str = "node_id") -> str:
    if not isinstance(value, str) or not _ID.match(value):
        raise BadRequest(f"{name} must be a memtree node id (26 characters, e.g. 01J8Z3...), got {value!r}")
    return value


def require(conn, node_id: str, name: str = "node_id", statuses=None) -> dict:
    """The node, or a clear error: unknown id, or hidden by its status."""
    check_id(node_id, name)
    wanted = check_statuses(statuses)
    status = reads.node_status(conn, node_id)
    if status is None:
        raise NotFound(f"{name}: no node {node_id}")
    if status not in wanted:
        raise NotFound(
            f'{name}: node {node_id} is {status}, not {"/".join(wanted)}; pass opts="status={status}" to see it'
        )
    return reads.get_node(conn, node_id, wanted)


def _statuses(status) -> list[str] | None:
    return None if status is None else list(check_statuses(str_list(status, "status", STATUSES)))


def _get(svc, node_id, status=None, name="node_id") -> str:
    conn = svc.db()
    node = require(conn, node_id, name, statuses=_statuses(status))
    stale = freshness.check(svc, [node])
    meta = []
    if node["parent_id"]:
        meta.append(f"parent {node['parent_id']}")
    if node["truncated"]:
        meta.append(f"truncated at capture ({node['original_bytes']} bytes originally)")
    text = node["content"] or ""
    if node["kind"] == "file" and not text:
        text, shown = file_text(reads.file_chunks(conn, node["id"]))
        meta.append(shown)
    head = render.header(node, stale=node["id"] in stale, extra="; ".join(meta), root=svc.project_root)
    body = render.recalled(render.neutralise(text), f"id={node['id']}")
    return f"{head}\n{body}"


def file_text(chunks: list[dict]) -> tuple[str, str]:
    """A file as its live chunks hold it, in line order (the newest chunk for a
    line read more than once), lines never stored marked; and what it holds."""
    by_line: dict[int, str] = {}
    for c in chunks:  # oldest first: a later capture of a line wins
        meta = render.metadata(c)
        start = meta.get("start")
        if isinstance(start, int):
            for k, line in enumerate(split_lines(c["content"] or "")):
                by_line[start + k] = line if line.endswith("\n") else line + "\n"
    if not by_line:
        return "", "no lines stored"
    out, prev = [], 0
    for n in sorted(by_line):
        if n > prev + 1:
            out.append(f"[lines {prev + 1}-{n - 1} not stored]\n")
        out.append(by_line[n])
        prev = n
    return "".join(out), f"lines 1-{prev} ({len(by_line)} stored, from {len(chunks)} chunk(s))"


def _listing(title: str, rows, svc, query: str | None = None) -> str:
    """``rows``: [(node, score or None, snippet, more)]. With a query, a hit
    shows its matching lines as they are (what the agent was after), else the
    snippet: None, or a function that fetches it (most hits show lines, so
    their FTS snippets are never looked up). ``more`` follows either:
    "(+N more matching chunk(s) of this file)" for a grouped file."""
    stale = freshness.check(svc, [r[0] for r in rows])
    root = getattr(svc, "project_root", None)
    lines = [title]
    for node, score, snip, more in rows:
        safe = render_safe(node)
        exact = render.matching_lines(safe, query) if query else ""
        if exact:
            lines.append(render.header(safe, score, node["id"] in stale, root=root) + more + "\n" + exact)
            continue
        snip = (snip() if snip else None) or ""
        if more:
            snip = f"{snip}{more}"
        lines.append(
            render.snippet_block(safe, snip and render.neutralise(snip), score, node["id"] in stale, root=root)
        )
    return "\n".join(lines)


def render_safe(node: dict) -> dict:
    return {**node, "content": render.neutralise(node.get("content") or "")}


def _recent(svc, since=None, kind=None, limit=None, status=None) -> str:
    filters = check_filters({"since": since, "kind": kind, "status": status})
    limit = check_limit(limit, 20)
    rows = reads.recent(svc.db(), filters, limit)
    what = "/".join(filters.get("status") or ["live"])
    return _listing(f"recent {what} nodes, newest first: {len(rows)}", [(n, None, None, "") for n in rows], svc)


def _search(svc, query, mode, limit, filters, vector, why, group_files=False) -> str:
    # One more than asked: the answer says when relevant hits were left out.
    conn = svc.db()
    out = run(
        conn,
        query,
        mode,
        filters,
        limit + 1,
        query_vector=vector,
        vector_note=why,
        group_files=group_files,
        snippets=False,
        thread_db=svc.db,
    )
    more = len(out.hits) > limit
    out.hits = out.hits[:limit]
    title = f"search {query!r} ({out.mode}): {len(out.hits)} result(s)"
    if more:
        again = {"query": query, "limit": min(limit * 2, MAX_LIMIT)}
        if filters:
            again["filters"] = filters
        title += (
            f"; more relevant hits beyond limit={limit}: " + call_repr("recall", **again)
            if limit < MAX_LIMIT
            else f"; more beyond the {MAX_LIMIT}-hit cap: narrow with filters"
        )
    if out.degraded:
        title += f"; {out.degraded}"
    if out.weak:  # the best there is, said plainly: an agent told "nothing" would explore again
        ev = out.evidence
        title += f"; weak match: the best hit holds {ev['coverage']:.0%} of the query's words" + (
            f", similarity {ev['similarity']:.2f}" if ev.get("similarity") is not None else ""
        )
    elif not out.hits:
        title += '; none live match. Other statuses only via opts="status=..."'
    rows = [(c.node, c.score, _snippet_of(conn, c, query, filters), _also(c)) for c in out.hits]
    return _listing(title, rows, svc, query)


def _snippet_of(conn, c, query: str, filters: dict):
    """A function giving the hit's FTS snippet, looked up when first asked for."""

    def get() -> str | None:
        with_snippets(conn, [c], query, filters)
        return c.snippet

    return get


def _also(c) -> str:
    """A grouped file's hit: how many more of its chunks matched ("" when none)."""
    more = len(getattr(c, "also", None) or [])
    return f" (+{more} more matching chunk(s) of this file)" if more else ""


def _check_edge_kinds(edge_kinds) -> tuple[str, ...]:
    if edge_kinds is None:
        return EDGE_KINDS + TREE_KINDS
    return tuple(str_list(edge_kinds, "edge_kinds", EDGE_KINDS + TREE_KINDS))


def _neighbors(svc, node_id, depth=None, edge_kinds=None, name="node_id") -> str:
    depth = 1 if depth is None else depth
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_NEIGHBOR_DEPTH:
        raise BadRequest(f"depth must be an integer between 1 and {MAX_NEIGHBOR_DEPTH}, got {depth!r}")
    kinds = _check_edge_kinds(edge_kinds)
    conn = svc.db()
    origin = require(conn, node_id, name, statuses=ANY_STATUS)
    seen = {origin["id"]: (0, "origin")}
    frontier = [origin["id"]]
    edge_only = [k for k in kinds if k in EDGE_KINDS]
    capped = False
    for d in range(1, depth + 1):
        nxt = []
        for nid in frontier:
            near = []
            parent = reads.parent_of(conn, nid, ANY_STATUS if nid == origin["id"] else None)
            if "parent" in kinds and parent:
                near.append((parent, "parent"))
            if "child" in kinds:
                near += [(c, "child") for c in reads.child_ids(conn, nid)]
            if edge_only:
                near += [
                    (o, f"{k}({'out' if way == 'out' else 'in'})") for o, k, way in reads.edges_of(conn, nid, edge_only)
                ]
            for other, rel in near:
                if other not in seen:
                    if len(seen) > MAX_NEIGHBORS:
                        capped = True
                        break
                    seen[other] = (d, rel)
                    nxt.append(other)
            if capped:
                break
        frontier = nxt
        if capped:
            break
    live = reads.get_nodes(conn, [i for i in seen if i != origin["id"]])
    rows = [(live[i], seen[i]) for i in seen if i in live]
    stale = freshness.check(svc, [n for n, _ in rows])
    cap = f"; stopped at {MAX_NEIGHBORS} nodes, lower depth or pass edge_kinds" if capped else ""
    lines = [
        f"neighbors of {origin['id']} ({origin['kind']}, {origin['status']}) to depth {depth}: {len(rows)} live{cap}"
    ]
    for n, (d, rel) in rows:
        lines.append(f"d={d} {rel}: " + render.snippet_block(render_safe(n), stale=n["id"] in stale))
    return "\n".join(lines)


def _path_to_root(svc, node_id, name="node_id") -> str:
    conn = svc.db()
    origin = require(conn, node_id, name, statuses=ANY_STATUS)
    chain = [origin, *reads.ancestors(conn, origin["id"])]
    lines = [f"path from {origin['id']} to its root ({len(chain)} node(s), root last):"]
    for i, n in enumerate(chain):
        if n["status"] == "live":
            lines.append(f"{i}: " + render.snippet_block(render_safe(n)))
        else:  # hidden by the live predicate: shown by id and status only
            lines.append(f"{i}: {n['id']} {n['kind']} {n['status']} (content hidden: not live)")
    return "\n".join(lines)


async def recent(svc, since=None, kind=None, limit=None, status=None) -> str:
    return await svc.run_sync(_recent, svc, since, kind, limit, status)


async def search(svc, query, mode=None, limit=None, filters=None, group_files=False) -> str:
    mode = check_mode(mode)
    filters = check_filters(filters)
    limit = check_limit(limit, 10)
    fts_query(query)  # a bad query is an error before any embedding is asked for
    # The query embedding is awaited here, bounded, before the SQL goes to a thread.
    vector, why = (None, None) if mode == "keyword" else await query_vector(svc, query)
    return await svc.run_sync(_search, svc, query, mode, limit, filters, vector, why, group_files)


async def note(svc, text, parent_id=None, names=("text", "parent_id")) -> str:
    """``names``: what the caller calls the text and the parent (recall: note, ids)."""
    if not isinstance(text, str) or not text.strip():
        raise BadRequest(f"{names[0]} must be a non-empty string")
    if len(text) > MAX_NOTE_CHARS:
        raise BadRequest(f"{names[0]} is {len(text)} characters; a note may have at most {MAX_NOTE_CHARS}")
    if parent_id is not None:
        await svc.run_sync(lambda: require(svc.db(), parent_id, names[1], statuses=["pending", "live"]))
    res = await svc.call(
        protocol.AddNode(
            kind="note", content=text, parent_id=parent_id, session_id=svc.session_id, metadata={"source": "mcp note"}
        )
    )
    return f"{res['id']} note {res.get('status', 'pending')} (recallable once the filter makes it live)"


async def forget(svc, node_id, reason, names=("node_id", "reason")) -> str:
    """``names``: what the caller calls the node and the reason (recall: ids, note)."""
    check_id(node_id, names[0])
    if not isinstance(reason, str) or not reason.strip():
        raise BadRequest(f"{names[1]} must be a non-empty string saying why (it is kept in the audit log)")
    if len(reason) > MAX_REASON_CHARS:
        raise BadRequest(f"{names[1]} may have at most {MAX_REASON_CHARS} characters")
    if await svc.run_sync(lambda: reads.node_status(svc.db(), node_id)) == "forgotten":
        raise NotFound(f"{names[0]}: node {node_id} is forgotten already")
    await svc.run_sync(lambda: require(svc.db(), node_id, names[0], statuses=ANY_STATUS))
    res = await svc.call(protocol.Forget(node_id=node_id, reason=reason))
    return forget_text(res)


def forget_text(res: dict) -> str:
    """What forget did, exactly (the writer's Forget reply)."""
    n = len(res.get("forgotten") or [])
    others = n - 1
    text = f"{res['id']} forgotten: its content is erased from the store and its indexes"
    if others > 0:
        text += f", with {others} more node(s) holding it (its subtree, duplicates, summaries)"
    if res.get("scrubbed"):
        text += f"; its lines were cut out of {len(res['scrubbed'])} other node(s)"
    return text + (
        ". A later capture of the same content, or of any of its lines, is left out and audited"
        " (lines under 12 characters are too common to match)."
    )


OPS = ("search", "files", "get", "recent", "compose", "neighbors", "path", "note", "forget")


def _check_ids(ids) -> list[str]:
    if isinstance(ids, str):
        ids = [ids]
    if not isinstance(ids, list) or not ids:
        raise BadRequest("ids must be a node id or a non-empty list of node ids")
    for i in ids:
        check_id(i, "ids")
    return list(dict.fromkeys(ids))


def _pick_op(op, query, ids, note=None) -> str:
    """The op the arguments select when none is named."""
    if op is not None:
        if op not in OPS:
            raise BadRequest(f"op must be one of {', '.join(OPS)}, got {op!r}")
        return op
    if note is not None:
        return "note"
    if ids is not None:
        return "compose" if query is not None or (isinstance(ids, list) and len(ids) > 1) else "get"
    return "search" if query is not None else "recent"


def _only(op: str, args: dict, allowed: tuple[str, ...]) -> None:
    extra = [k for k, v in args.items() if v is not None and k not in allowed]
    if extra:
        raise BadRequest(f"{extra[0]} does not apply to op={op}; it takes {', '.join(allowed) or 'no other arguments'}")


async def recall(
    svc,
    query=None,
    ids=None,
    note=None,
    op=None,
    mode=None,
    limit=None,
    filters=None,
    depth=None,
    format=None,
    budget_tokens=None,
) -> str:
    """One tool for every way back in: query searches, ids shows nodes (one:
    in full; several, or with a query: composed within the budget), neither
    lists the newest; op names neighbors or path explicitly. It also writes:
    ``note`` keeps a note (under the one id in ``ids``, if given), and
    op=forget erases the node in ``ids`` with ``note`` as the audited reason."""
    if isinstance(ids, str) and len(ids.replace(",", " ").split()) > 1:  # the schema shows ids as one string
        ids = ids.replace(",", " ").split()
    op = _pick_op(op, query, ids, note)
    args = {
        "query": query,
        "ids": ids,
        "note": note,
        "mode": mode,
        "limit": limit,
        "filters": filters,
        "depth": depth,
        "format": format,
    }
    if op in ("note", "forget"):
        return await _write_op(svc, op, args)
    if op in ("get", "neighbors", "path", "compose") and ids is None:
        raise BadRequest(f"op={op} needs ids")
    if filters is not None and not isinstance(filters, dict):
        raise BadRequest("filters must be an object")
    f = dict(filters or {})
    if op in ("search", "files"):  # files: one hit per file, its other matching chunks counted
        _only(op, args, ("query", "mode", "limit", "filters"))
        if query is None:
            raise BadRequest(f"op={op} needs query")
        return await search(svc, query, mode, limit, filters, group_files=op == "files")
    if op == "recent":
        _only(op, args, ("limit", "filters"))
        unknown = [k for k in f if k not in ("since", "kind", "status")]
        if unknown:
            raise BadRequest(f"filters.{unknown[0]} does not apply to op=recent; it takes since, kind, status")
        return await recent(svc, f.get("since"), f.get("kind"), limit, f.get("status"))
    node_ids = _check_ids(ids)
    if op == "compose":
        _only(op, args, ("ids", "query", "depth", "format"))
        return await _compose_tool(
            svc, node_ids, budget_tokens, format or "mixed", query, 2 if depth is None else depth
        )
    if len(node_ids) != 1:
        raise BadRequest(f"op={op} takes one id, got {len(node_ids)}")
    if op == "get":
        _only(op, args, ("ids", "filters"))
        unknown = [k for k in f if k != "status"]
        if unknown:
            raise BadRequest(f"filters.{unknown[0]} does not apply to op=get; it takes status")
        return await svc.run_sync(_get, svc, node_ids[0], f.get("status"), "ids")
    if op == "neighbors":
        _only(op, args, ("ids", "depth", "filters"))
        unknown = [k for k in f if k != "edge_kinds"]
        if unknown:
            raise BadRequest(f"filters.{unknown[0]} does not apply to op=neighbors; it takes edge_kinds")
        return await svc.run_sync(_neighbors, svc, node_ids[0], depth, f.get("edge_kinds"), "ids")
    _only(op, args, ("ids",))
    return await svc.run_sync(_path_to_root, svc, node_ids[0], "ids")


async def _write_op(svc, op: str, args: dict) -> str:
    _only(op, args, ("ids", "note"))
    ids, text = args["ids"], args["note"]
    if op == "note":
        if ids is not None and len(_check_ids(ids)) != 1:
            raise BadRequest("a note hangs under one node: ids takes one id")
        return await note(svc, text, _check_ids(ids)[0] if ids is not None else None, names=("note", "ids"))
    if ids is None:
        raise BadRequest("op=forget needs ids (the node to erase)")
    node_ids = _check_ids(ids)
    if len(node_ids) != 1:
        raise BadRequest(f"op=forget takes one id, got {len(node_ids)}")
    if text is None:
        raise BadRequest("op=forget needs note= saying why (kept in the audit log)")
    return await forget(svc, node_ids[0], text, names=("ids", "note"))


async def _compose_tool(svc, node_ids, budget_tokens, fmt, query, depth) -> str:
    from memtree.recall.compose import compose
    from memtree.text import budget

    return await compose(svc, node_ids, budget.check(budget_tokens), fmt, query, depth)


__all__ = ["recall", "recent", "search", "note", "forget", "parse_time"]
