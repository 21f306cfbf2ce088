"""All retrieval SQL, always filtered by the live predicate (store/live.py).

``statuses=None`` means live only; a caller sees other statuses only by
naming them. Rows come back as plain dicts (``Node``) keyed by column name.
"""

from __future__ import annotations

import json
import re

import orjson

from memtree.gate import REDACTION_VERSION, redact_text, redact_value
from memtree.store import bm25, fts_index
from memtree.store.live import ANY_STATUS, LIVE, status_clause

COLS = (
    "id",
    "parent_id",
    "kind",
    "source_uri",
    "content",
    "status",
    "mtime",
    "created_at",
    "updated_at",
    "truncated",
    "original_bytes",
    "metadata",
    "session_id",
)
_SELECT = ", ".join(f"n.{c}" for c in COLS)
# One query's bound parameters stay well under SQLite's limit.
BATCH = 500  # ids per IN (...): under SQLite's bound-parameter limit

Node = dict


_GATE_MARK = f'"redaction":{REDACTION_VERSION}'


def _node(row) -> Node:
    node = dict(zip(COLS, row))
    if _GATE_MARK not in (node.get("metadata") or ""):
        # Stored under an older gate (or before gates were recorded): re-redact
        # on the way out; `memtree redact --rescan` fixes the rows for good.
        for key in ("content", "source_uri"):
            if isinstance(node.get(key), str) and node[key]:
                node[key] = redact_text(node[key])[0]
        try:
            node["metadata"] = orjson.dumps(redact_value(orjson.loads(node.get("metadata") or "{}"))[0]).decode()
        except orjson.JSONDecodeError:
            node["metadata"] = "{}"
    return node


def batches(ids):
    """``ids`` in lists of at most BATCH, one per ``IN (...)`` query."""
    ids = list(ids)
    for i in range(0, len(ids), BATCH):
        yield ids[i : i + BATCH]


def node_status(conn, node_id: str) -> str | None:
    """The status of ``node_id`` whatever it is (None: no such node), so a
    caller can say why a node is hidden rather than "not found"."""
    where, params = status_clause("n", ANY_STATUS)
    row = conn.execute(f"SELECT n.status FROM nodes n WHERE n.id = ? AND {where}", [node_id, *params]).fetchone()
    return row[0] if row else None


def get_node(conn, node_id: str, statuses=None) -> Node | None:
    where, params = status_clause("n", statuses)
    row = conn.execute(f"SELECT {_SELECT} FROM nodes n WHERE n.id = ? AND {where}", [node_id, *params]).fetchone()
    return _node(row) if row else None


def parent_of(conn, node_id: str, statuses=None) -> str | None:
    """The parent id of ``node_id`` (if it passes the predicate), without loading its content."""
    where, params = status_clause("n", statuses)
    row = conn.execute(f"SELECT n.parent_id FROM nodes n WHERE n.id = ? AND {where}", [node_id, *params]).fetchone()
    return row[0] if row else None


def get_nodes(conn, ids, statuses=None) -> dict[str, Node]:
    where, params = status_clause("n", statuses)
    out: dict[str, Node] = {}
    for part in batches(dict.fromkeys(ids)):
        marks = ",".join("?" * len(part))
        for row in conn.execute(f"SELECT {_SELECT} FROM nodes n WHERE n.id IN ({marks}) AND {where}", [*part, *params]):
            node = _node(row)
            out[node["id"]] = node
    return out


def children(conn, parent_id: str, statuses=None, limit: int = 50) -> list[Node]:
    """Newest first: a session root can have thousands of children."""
    where, params = status_clause("n", statuses)
    rows = conn.execute(
        f"SELECT {_SELECT} FROM nodes n WHERE n.parent_id = ? AND {where} ORDER BY n.created_at DESC, n.id DESC LIMIT ?",
        [parent_id, *params, limit],
    )
    return [_node(r) for r in rows]


def file_chunks(conn, root_id: str, statuses=None, limit: int = 20_000) -> list[Node]:
    """A file root's chunks, oldest first (a file of any size: bounded by ``limit``)."""
    where, params = status_clause("n", statuses)
    rows = conn.execute(
        f"SELECT {_SELECT} FROM nodes n WHERE n.parent_id = ? AND n.kind = 'file_chunk' AND {where}"
        f" ORDER BY n.created_at, n.id LIMIT ?",
        [root_id, *params, limit],
    )
    return [_node(r) for r in rows]


def child_ids(conn, parent_id: str, statuses=None, limit: int = 50) -> list[str]:
    """Ids only, newest first, as ``children``."""
    where, params = status_clause("n", statuses)
    rows = conn.execute(
        f"SELECT n.id FROM nodes n WHERE n.parent_id = ? AND {where} ORDER BY n.created_at DESC, n.id DESC LIMIT ?",
        [parent_id, *params, limit],
    )
    return [r[0] for r in rows]


def edges_of(conn, node_id: str, kinds=None, statuses=None, limit: int = 200) -> list[tuple[str, str, str]]:
    """(other id, edge kind, direction 'out'|'in') for edges touching ``node_id``
    whose other end passes the live predicate."""
    where, params = status_clause("n", statuses)
    kind_sql, kind_params = "", []
    if kinds:
        kind_sql = f" AND e.kind IN ({','.join('?' * len(kinds))})"
        kind_params = list(kinds)
    out = conn.execute(
        f"SELECT e.dst_id, e.kind, 'out' FROM edges e JOIN nodes n ON n.id = e.dst_id "
        f"WHERE e.src_id = ? AND {where}{kind_sql} "
        f"UNION ALL "
        f"SELECT e.src_id, e.kind, 'in' FROM edges e JOIN nodes n ON n.id = e.src_id "
        f"WHERE e.dst_id = ? AND {where}{kind_sql} LIMIT ?",
        [node_id, *params, *kind_params, node_id, *params, *kind_params, limit],
    )
    return [tuple(r) for r in out]


def summary_of(conn, node_id: str) -> Node | None:
    """The newest live summary of ``node_id``: a ``summary`` child or the src of
    a ``summarizes`` edge."""
    where, params = status_clause("n")
    row = conn.execute(
        f"SELECT {_SELECT} FROM nodes n WHERE n.kind = 'summary' AND {where} AND ("
        f"n.parent_id = ? OR n.id IN (SELECT e.src_id FROM edges e WHERE e.dst_id = ? AND e.kind = 'summarizes')) "
        f"ORDER BY n.created_at DESC LIMIT 1",
        [*params, node_id, node_id],
    ).fetchone()
    return _node(row) if row else None


def _filters_sql(f: dict) -> tuple[str, list]:
    """SQL for the filters search and recent share (already validated)."""
    where, params = status_clause("n", f.get("status"))
    sql = [where]
    if f.get("kind"):
        sql.append(f"n.kind IN ({','.join('?' * len(f['kind']))})")
        params += list(f["kind"])
    for key, op in (("since", ">="), ("until", "<=")):
        if f.get(key) is not None:
            sql.append(f"n.created_at {op} ?")
            params.append(f[key])
    for key in ("parent_id", "session_id"):
        if f.get(key):
            sql.append(f"n.{key} = ?")
            params.append(f[key])
    return " AND ".join(sql), params


def recent(conn, filters: dict, limit: int) -> list[Node]:
    where, params = _filters_sql(filters)
    rows = conn.execute(
        f"SELECT {_SELECT} FROM nodes n WHERE {where} ORDER BY n.created_at DESC, n.id DESC LIMIT ?", [*params, limit]
    )
    return [_node(r) for r in rows]


# Top-k by BM25 from the FTS index alone first (no join per match), this many
# times ``limit``; exact whenever that many pass the filters, else the filtered scan.
FTS_OVERFETCH = 2
FTS_OVERFETCH_MIN = 20


def search_fts(
    conn,
    match: str,
    filters: dict,
    limit: int,
    snippets: bool = True,
    above_rowid: int | None = None,
    hits: list[float] | None = None,
) -> list[tuple[Node, float, str]]:
    """(node, score, snippet), best first. Filters sit inside the SQL, never
    after a top-k, so hidden matches cannot starve a live one. Three reads in
    one snapshot: the top ``limit`` rowids by BM25 among the matches that pass
    the filters, their rows by rowid, and (``snippets``; else None) a snippet
    of each, one indexed lookup apiece (a broad query matches tens of
    thousands of rows; a snippet or a row for each was its tail).

    The top rowids come from the FTS index alone, ranked without touching
    ``nodes``, over-fetched; when at least ``limit`` of those pass the
    filters they are the answer (every match outside them ranks lower), else
    (a filter that hides most matches) the filtered scan decides.
    ``above_rowid``: only rows indexed after it (a bound on a match every row holds).
    ``hits``: how many rows hold each phrase of ``match``, in its order, when
    the caller counted them: ranked by store/bm25.py with these, not by FTS5's
    ``bm25()``, which counts each phrase over the whole index again."""
    where, params = _filters_sql(filters)
    conn.execute("SAVEPOINT search_fts")  # one snapshot: the ranking, the rows and the snippets agree
    try:
        top = _top_rowids(conn, match, filters, limit, above_rowid, hits)
        if not top:
            return []
        rows = conn.execute(
            f"SELECT n.rowid, {_SELECT} FROM json_each(?) AS j CROSS JOIN nodes n ON n.rowid = j.value WHERE {where}",
            [json.dumps([r for r, _ in top]), *params],
        )
        found = {r[0]: r[1:] for r in rows}
        out = []
        for rowid, score in top:
            r = found.get(rowid)
            if r is not None:
                snip = _snippet(conn, match, rowid) if snippets else None
                out.append((_node(r), -float(score), snip))  # bm25: lower is better
        return out
    finally:
        conn.execute("RELEASE search_fts")


# A name defined in more rows than this (``__init__``, ``run``) is looked at in
# its newest this many that pass the filters: each costs a row lookup and a
# docsize lookup to rank, and its definitions are no answer to anything anyway.
DEFINING_SCAN = 1000


def defining(conn, names: list[str], filters: dict, limit: int) -> list[tuple[Node, float, None]]:
    """(node, score, None) of the rows defining any of ``names`` (case folded:
    the index of definitions, schema m009) that pass the filters, best first
    by FTS5's BM25 of the phrases ``def name`` and ``class name`` as equally
    rare ones, as their MATCH ranked before the index (a few rows, looked up:
    that MATCH walked the doclists of "def" and "class" whatever the name)."""
    where, params = _filters_sql(filters)
    found: dict[int, list[int]] = {}
    conn.execute("SAVEPOINT defining")  # one snapshot: the names, the sizes and the rows agree
    try:
        folded = list(dict.fromkeys(n.lower() for n in names))
        for i, name in enumerate(folded):
            rows = conn.execute(
                "SELECT d.node_rowid, d.n FROM defined d CROSS JOIN nodes n ON n.rowid = d.node_rowid"
                f" WHERE d.name = ? AND {where} ORDER BY d.node_rowid DESC LIMIT ?",
                [name, *params, DEFINING_SCAN],
            )
            for rowid, count in rows:
                found.setdefault(rowid, [0] * len(folded))[i] = count
        if not found:
            return []
        n_rows, tokens = fts_index.averages(conn)
        weights = [bm25.idf(n_rows, 1)] * len(folded)
        sizes = fts_index.doc_sizes(conn, list(found))
        ranked = sorted(
            ((bm25.score(freqs, weights, sizes.get(r, 0), tokens / max(n_rows, 1)), r) for r, freqs in found.items()),
            key=lambda p: (-p[0], p[1]),
        )[:limit]
        nodes = {
            r[0]: _node(r[1:])
            for r in conn.execute(
                f"SELECT n.rowid, {_SELECT} FROM json_each(?) AS j CROSS JOIN nodes n ON n.rowid = j.value",
                (json.dumps([r for _, r in ranked]),),
            )
        }
        return [(nodes[r], score, None) for score, r in ranked if r in nodes]
    finally:
        conn.execute("RELEASE defining")


# By rowid from the id list: CROSS JOIN keeps the planner from scanning the
# status index instead (``rowid IN (json_each)`` did: 16 ms for 100 rows at 100k, 0.7 ms so).
def _top_rowids(
    conn, match: str, filters: dict, limit: int, above_rowid: int | None = None, hits: list[float] | None = None
) -> list[tuple[int, float]]:
    where, params = _filters_sql(filters)
    want = max(limit * FTS_OVERFETCH, limit + FTS_OVERFETCH_MIN)
    above = "" if above_rowid is None else f" AND nodes_fts.rowid > {int(above_rowid)}"
    if hits is None:
        score, given = "bm25(nodes_fts)", []
    else:
        score, given = f"{bm25.NAME}(nodes_fts{', ?' * len(hits)})", [float(h) for h in hits]
    ranked = conn.execute(
        f"SELECT rowid, {score} AS score FROM nodes_fts WHERE nodes_fts MATCH ?{above} ORDER BY score LIMIT ?",
        [*given, match, want],
    ).fetchall()
    if not ranked:
        return []
    passing = {
        r[0]
        for r in conn.execute(
            f"SELECT n.rowid FROM json_each(?) AS j CROSS JOIN nodes n ON n.rowid = j.value WHERE {where}",
            [json.dumps([r for r, _ in ranked]), *params],
        )
    }
    kept = [r for r in ranked if r[0] in passing]
    if len(kept) >= limit or len(ranked) < want:
        return kept[:limit]
    return conn.execute(
        f"SELECT nodes_fts.rowid, {score} AS score FROM nodes_fts JOIN nodes n ON n.rowid = nodes_fts.rowid "
        f"WHERE nodes_fts MATCH ?{above} AND {where} ORDER BY score LIMIT ?",
        [*given, match, *params, limit],
    ).fetchall()


def _snippet(conn, match: str, rowid: int) -> str | None:
    """The snippet of one row its caller read under the predicate."""
    row = conn.execute(
        "SELECT snippet(nodes_fts, 0, '', '', ' … ', 24) FROM nodes_fts WHERE nodes_fts MATCH ? AND rowid = ?",
        [match, rowid],
    ).fetchone()
    return row[0] if row else None


def snippets(conn, match: str, ids: list[str], statuses=None) -> dict[str, str]:
    """id -> FTS snippet for ``match`` of those of ``ids`` that pass the
    predicate and match (search fills in its final hits only)."""
    where, params = status_clause("n", statuses)
    out: dict[str, str] = {}
    conn.execute("SAVEPOINT snippets")
    try:
        for part in batches(dict.fromkeys(ids)):
            marks = ",".join("?" * len(part))
            rows = conn.execute(
                f"SELECT n.id, n.rowid FROM nodes n WHERE n.id IN ({marks}) AND {where}", [*part, *params]
            ).fetchall()
            for node_id, rowid in rows:
                snip = _snippet(conn, match, rowid)
                if snip is not None:
                    out[node_id] = snip
    finally:
        conn.execute("RELEASE snippets")
    return out


def ancestors(conn, node_id: str, max_depth: int = 64) -> list[Node]:
    """The chain from ``node_id``'s parent to its root, whatever their status:
    the caller shows hidden ancestors by id and status only, never content."""
    where, params = status_clause("n", ANY_STATUS)
    rows = conn.execute(
        f"WITH RECURSIVE up(id, depth) AS ("
        f" SELECT parent_id, 1 FROM nodes WHERE id = ? AND parent_id IS NOT NULL"
        f" UNION ALL SELECT p.parent_id, up.depth + 1 FROM up JOIN nodes p ON p.id = up.id"
        f" WHERE p.parent_id IS NOT NULL AND up.depth < ?)"
        f" SELECT {_SELECT} FROM up JOIN nodes n ON n.id = up.id WHERE {where} ORDER BY up.depth",
        [node_id, max_depth, *params],
    )
    return [_node(r) for r in rows]


# Document frequencies in bounded time: a word is counted in a sample of
# about DF_WINDOW indexed rows, DF_SPANS runs of rows spread evenly over the
# index from its newest to its oldest, and scaled to the index; one seen
# there fewer than DF_EXACT_BELOW times is counted over the whole index (a rare
# word's doclist is short, and its IDF is the one that decides). Counting a
# word held by most rows ("self", "file") over the whole index grew with the
# store; counting it in the newest rows alone took their vocabulary for the
# store's (the last session's captures: "list" 14k rows of a million, not
# 136k, and its MATCH, thought bounded, scored ten times the rows). A phrase
# (``is_phrase``) is never counted over the whole index: its doclist is its
# tokens', intersected with their positions ("get_in": "get" and "in", 24 ms
# at a million rows for its 199), and the search's MATCH walks it once anyway.
DF_WINDOW = 20_000
DF_SPANS = 4
DF_EXACT_BELOW = 64
# A word is first counted over the whole index up to this many rows: most of a
# query's words are rarer (its joined pairs, "readersnever", are in no row),
# and so one short walk counts them exactly, where the sample cost a MATCH a
# span before it (0.1-0.16 ms a word at 100k, against 0.02-0.1). Only a word
# reaching this many rows is sampled.
DF_EXACT_UPTO = 1024
_TOKEN = re.compile(r"[^\W_]+")  # a run FTS5's unicode61 tokenizer keeps as one token


def tokens(word: str) -> list[str]:
    """The tokens FTS5's tokenizer makes of ``word`` (before stemming)."""
    return _TOKEN.findall(word)


def is_phrase(word: str) -> bool:
    """Whether FTS5's tokenizer splits ``word`` into several tokens ("get_in",
    "1-3,5", "url's"): a MATCH of it is a phrase, walked over each token's doclist."""
    return len(tokens(word)) > 1


class Indexed:
    """What doc_counts read of the index: its rows (FTS5's own count: a pruned
    store's highest rowid far overstates it), its lowest and highest rowid,
    the rowid spans ``(after, upto]`` sampled (none: every row counted) and
    the rows in them."""

    __slots__ = ("rows", "low", "high", "spans", "sampled")

    def __init__(self, rows: int, low: int, high: int, spans: list[tuple[int, int]], sampled: int):
        self.rows, self.low, self.high, self.spans, self.sampled = rows, low, high, spans, sampled


def _indexed(conn) -> Indexed:
    rows = fts_index.row_count(conn)
    # Two subqueries: SQLite reads min() or max() off the b-tree only when it is a query's one aggregate.
    low, high = conn.execute(
        "SELECT coalesce((SELECT min(id) FROM nodes_fts_docsize), 1), coalesce((SELECT max(id) FROM nodes_fts_docsize), 0)"
    ).fetchone()
    if rows <= DF_WINDOW:
        return Indexed(rows, low, high, [], rows)
    # Each span holds about DF_WINDOW / DF_SPANS rows at the index's mean density,
    # counted exactly (a pruned store's rowids are sparse, and not evenly so).
    width = high - low + 1
    span = max(1, width * DF_WINDOW // (DF_SPANS * rows))
    spans = [(upto - span, upto) for upto in (high - i * width // DF_SPANS for i in range(DF_SPANS))]
    key = (conn.filename, rows, tuple(spans))
    sampled = _SAMPLED.get(key)
    if sampled is None:
        sampled = sum(
            conn.execute("SELECT count(*) FROM nodes_fts_docsize WHERE id > ? AND id <= ?", s).fetchone()[0]
            for s in spans
        )
        if len(_SAMPLED) >= _SAMPLED_MAX:
            _SAMPLED.clear()  # atomic, where evicting one would iterate beside other threads
        _SAMPLED[key] = sampled
    return Indexed(rows, low, high, spans if sampled else [], sampled)


# The rows in the sampled spans, by the index they were counted in (its file
# and rows) and the spans: counting them was a quarter of doc_counts (0.4 ms a
# search at 100k), and between two writes every search counts the same. A
# write moves the rows or the highest rowid (so the spans); one that keeps
# both (a rewrite in place) moves a span's count by a row or two at most,
# which an estimate does not feel.
_SAMPLED: dict[tuple, int] = {}
_SAMPLED_MAX = 64


def doc_counts(conn, words: list[str]) -> tuple[dict[str, int], Indexed]:
    """How many indexed nodes contain each word (exact in an index of up to
    DF_WINDOW rows and for rare words: in fewer than DF_EXACT_UPTO rows, or
    seen fewer than DF_EXACT_BELOW times in the sample; else estimated from a sample spread
    over the index; a phrase estimated so whatever its count, and never
    below 1), and the index they were counted in: the IDF behind search's
    query-term coverage and its common-word cut. Counts only."""
    ix = _indexed(conn)
    in_spans = " + ".join(
        ["(SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?1 AND rowid > ? AND rowid <= ?)"] * len(ix.spans)
    )
    bounds = [b for s in ix.spans for b in s]
    counts = {}
    for w in words:
        match = '"' + w.replace('"', '""') + '"'
        phrase = is_phrase(w)
        if ix.spans and not phrase:
            upto = conn.execute(  # the walk stops at the bound
                "SELECT count(*) FROM (SELECT 1 FROM nodes_fts WHERE nodes_fts MATCH ? LIMIT ?)", (match, DF_EXACT_UPTO)
            ).fetchone()[0]
            if upto < DF_EXACT_UPTO:
                counts[w] = upto
                continue
        if ix.spans:
            seen = conn.execute(f"SELECT {in_spans}", [match, *bounds]).fetchone()[0]
            if seen >= DF_EXACT_BELOW or phrase:
                counts[w] = max(1, min(ix.rows, round(seen * ix.rows / ix.sampled)))
                continue
        counts[w] = conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (match,)).fetchone()[0]
    return counts, ix


def rowid_under_newest(conn, ix: Indexed, k: int) -> int:
    """A rowid with about the ``k`` newest indexed rows above it: stepped to
    in the index up to DF_WINDOW rows (a pruned store's rowids are sparse: a
    span of them says little about its rows), and past that, where a step
    per row would cost as much as counting, at the density of the rows below."""
    if k >= ix.rows:
        return ix.low - 1
    step = min(k, DF_WINDOW)
    got = conn.execute("SELECT id FROM nodes_fts_docsize ORDER BY id DESC LIMIT 1 OFFSET ?", (step,)).fetchone()
    if got is None:
        return ix.low - 1
    below = ix.rows - step  # rows at or under got[0]
    return got[0] - (k - step) * (got[0] - ix.low + 1) // below


def chunk_ids_by_start(conn, file_id: str) -> dict[int, str]:
    """The live chunks of a file, by their first line: start line -> id."""
    where, params = status_clause("n", LIVE)
    rows = conn.execute(
        f"SELECT json_extract(n.metadata, '$.start'), n.id FROM nodes n"
        f" WHERE n.parent_id = ? AND n.kind = 'file_chunk' AND {where}",
        [file_id, *params],
    ).fetchall()
    return {r[0]: r[1] for r in rows}
