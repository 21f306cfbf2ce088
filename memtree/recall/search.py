"""Search: keyword (FTS5 BM25), semantic (vectors) and hybrid (RRF of both),
each followed by the code-aware ranking (memtree/recall/ranking.py), then an
abstention floor.

User input never reaches FTS5 as syntax: every word becomes a quoted string
(inner quotes doubled), joined with OR so BM25 ranks nodes matching more
words first. Filters are validated here and applied inside the SQL.

Fail open: a search returns its best hits whenever any candidate exists,
and flags the answer ``weak`` when neither way of matching has much evidence,
so an agent is told to check rather than told "nothing" (an agent told
nothing explores the repository again). The evidence is the best hit's
IDF-weighted query-term coverage (share of the query's weight one chunk
contains) and, when the query was embedded, the best cosine similarity among
the semantic candidates. The weak floors come from eval/recall_calibrate.py,
a set of its own (docstring queries over packages that no reported eval
uses, and docstrings of a package not stored as no-answer questions), never
from the queries the evals report. A similarity floor only means something
for the model it was measured with, so another model falls back to the
keyword-only floor.
"""

from __future__ import annotations

import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC

from memtree.errors import BadRequest
from memtree.recall import ranking
from memtree.store import reads
from memtree.store.kinds import FILTER_KEYS, NODE_KINDS
from memtree.store.live import STATUSES, check_statuses

MODES = ("keyword", "semantic", "hybrid")
MAX_LIMIT = 100
MAX_TERMS = 32
_DURATION = re.compile(r"^(\d+)\s*(s|m|h|d|w)$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def fts_query(query: str) -> str:
    """A MATCH expression that can never be an FTS5 syntax error."""
    if not isinstance(query, str) or not query.strip():
        raise BadRequest("query must be a non-empty string")
    words = [w for w in query.split() if any(ch.isalnum() for ch in w)][:MAX_TERMS]
    if not words:
        raise BadRequest("query has no searchable words (letters or digits)")
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def parse_time(value, name: str, now_ms: int | None = None) -> int:
    """Epoch ms from epoch ms (int), a duration ago ("30m", "2h", "7d") or ISO-8601."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    if isinstance(value, bool):
        raise BadRequest(f"{name} must be epoch milliseconds, a duration like '2h', or an ISO-8601 time")
    if isinstance(value, int):
        if value < 0:
            raise BadRequest(f"{name} must not be negative, got {value}")
        return value
    if isinstance(value, str):
        m = _DURATION.match(value.strip())
        if m:
            return now_ms - int(m.group(1)) * _UNIT_MS[m.group(2)]
        from datetime import datetime

        try:
            dt = datetime.fromisoformat(value.strip())
        except ValueError:
            pass
        else:
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=UTC)
            return int(dt.timestamp() * 1000)
    raise BadRequest(f"{name} must be epoch milliseconds, a duration like '2h', or an ISO-8601 time; got {value!r}")


def str_list(value, name: str, allowed=None) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise BadRequest(f"{name} must be a string or a non-empty list of strings")
    if allowed:
        bad = [v for v in value if v not in allowed]
        if bad:
            raise BadRequest(f"unknown {name} {bad[0]!r}; expected one of {', '.join(allowed)}")
    return list(dict.fromkeys(value))


def check_filters(filters) -> dict:
    """Validated filters; raises BadRequest naming the bad key."""
    if filters is None:
        return {}
    if not isinstance(filters, dict):
        raise BadRequest("filters must be an object with keys " + ", ".join(FILTER_KEYS))
    unknown = [k for k in filters if k not in FILTER_KEYS]
    if unknown:
        raise BadRequest(f"unknown filter {unknown[0]!r}; expected one of {', '.join(FILTER_KEYS)}")
    out: dict = {}
    if filters.get("status") is not None:
        out["status"] = list(check_statuses(str_list(filters["status"], "filters.status", STATUSES)))
    if filters.get("kind") is not None:
        out["kind"] = str_list(filters["kind"], "filters.kind", NODE_KINDS)
    for key in ("since", "until"):
        if filters.get(key) is not None:
            out[key] = parse_time(filters[key], f"filters.{key}")
    for key in ("parent_id", "session_id"):
        if filters.get(key) is not None:
            if not isinstance(filters[key], str) or not filters[key]:
                raise BadRequest(f"filters.{key} must be a non-empty string")
            out[key] = filters[key]
    return out


def check_limit(limit, default: int = 10) -> int:
    if limit is None:
        return default
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be an integer between 1 and {MAX_LIMIT}, got {limit!r}")
    return limit


def check_mode(mode) -> str:
    mode = "hybrid" if mode is None else mode
    if mode not in MODES:
        raise BadRequest(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def keyword(conn, query: str, filters: dict, limit: int) -> list[tuple[dict, float, str]]:
    """Plain BM25 over FTS5, no ranking: the baseline the eval compares with."""
    return reads.search_fts(conn, fts_query(query), filters, limit)


# -- ranked search -------------------------------------------------------------------------

CANDIDATES = 100  # per retriever, before ranking
RRF_K = 60
# A semantic rank's share in the fusion, against 1 for a keyword rank. Swept on the
# calibration set (eval/recall_calibrate.py --fusion: docstring and name queries,
# 2026-12-02): mean MRR@10 0.714-0.721 from 0.5 to 3 with code1, 0.736-0.738 with code2,
# flat (ranking, not the fused base, decides), so the plain RRF stays.
SEMANTIC_WEIGHT = 1.0
# Weak-evidence floors (eval/recall_calibrate.py; see the module docstring): the
# fewest answerable queries flagged among the floors flagging >= 70 % of the
# no-answer ones, on its 340 docstring + 150 no-answer queries (2026-12-01):
# keyword 0.46 flags 72 % of no-answer, 16.5 % of answerable; hybrid with
# wordllama (0.46, 0.50) flags 70 % and 13.8 %.
WEAK_KEYWORD_FLOOR = 0.46
# wordllama code2 (prepared text, learned token weights and row deltas; same set,
# same rule, 2026-12-02, with ranking's similarity term, which changes which hits
# carry the evidence): (0.58, 0.44) flags 74.0 % of no-answer and 6.5 % of
# answerable; without the term it was (0.48, 0.48), 71.3 % and 6.2 % (code1
# needed (0.72, 0.52) for 70 % and 10.9 %; its vectors are refused as mixed now,
# so its entry went).
WEAK_FLOORS = {  # (coverage, similarity): weak when under both
    "wordllama-l2-supercat-256": (0.46, 0.50),
    "wordllama-l2-supercat-256-code2": (0.58, 0.44),
}
# Each hit after the first must clear this share of the weak floors on its own
# (coverage or similarity). 0.5 cost answerable recall on the calibration set
# (eval/recall_calibrate.py's 340 docstring queries, hybrid R@10 0.694 against
# 0.709 with no per-hit floor; 2026-12-02); 0.25 costs none there and still
# drops what shares neither a tenth of the query's weight nor similarity 0.125.
HIT_FLOOR_SHARE = 0.25


async def query_vector(svc, text: str):
    """(embedding, None) from the embed walker, or (None, why) when it does
    not answer within the bound the services waited (stopped, busy, no model).
    The embedding is ``{"model", "dim", "vector"}``."""
    emb = await svc.embed_query(text)
    if emb is None:
        return None, getattr(svc, "embed_note", "") or "no query embedding from the embed walker"
    return emb, None


class Outcome:
    """What a search found, in which mode, why it degraded, and whether its
    evidence is weak (``abstained``: not one candidate)."""

    __slots__ = ("hits", "mode", "requested", "degraded", "abstained", "evidence", "weak")

    def __init__(
        self,
        hits,
        mode: str,
        requested: str,
        degraded: str | None = None,
        abstained: bool = False,
        evidence: dict | None = None,
        weak: bool = False,
    ):
        self.hits, self.mode, self.requested = hits, mode, requested
        self.degraded, self.abstained, self.evidence, self.weak = degraded, abstained, evidence or {}, weak

    @property
    def confidence(self) -> str:
        """One word for the answer's evidence: "none" (no candidate), "weak", or "ok"."""
        return "none" if self.abstained else "weak" if self.weak else "ok"


def _prose_words(query: str) -> list[str]:
    """The words BM25 searches for: the query without stopwords and question
    scaffolding, plus each pair of adjacent words joined, which is how a
    camelCase identifier is one FTS token ("list directory" finds listDirectory;
    snake_case splits in the tokenizer already)."""
    words = [w for w in ranking.content_query(query).split() if any(ch.isalnum() for ch in w)]
    kept = [w for w in words if w.lower().strip(".,;:?!'\"()") not in ranking.STOPWORDS] or words
    bare = [w.strip(".,;:?!'\"()`") for w in kept]
    joined = [a + b for a, b in zip(bare, bare[1:]) if a.isalpha() and b.isalpha() and len(a) > 2 and len(b) > 2]
    return (kept + joined)[:MAX_TERMS]


def _defined_names(query: str) -> list[str]:
    """The queried symbols' names a definition can hold (``Job.run``: ``run``)."""
    names, _ = ranking.queried_symbols(query)
    return [n_ for n_ in sorted(names) if re.fullmatch(r"[A-Za-z0-9_]+", n_)]


def _definition_phrases(query: str) -> list[str]:
    """The ``def``/``class`` phrases naming a queried symbol, quoted for a MATCH."""
    return [f'"{kw} {n_}"' for n_ in _defined_names(query) for kw in ("def", "class")]


def _symbol_phrases(query: str) -> str | None:
    """The MATCH of ``def``/``class`` phrases naming a queried symbol (None: no symbol)."""
    return " OR ".join(_definition_phrases(query)) or None


def _keyword_matches(query: str, memo: dict | None = None) -> tuple[str | None, str | None]:
    """The MATCH of the query's prose words (those in the index, when
    ``memo`` counted them; None: not one), and of ``def``/``class`` phrases
    naming a queried symbol (None: no symbol)."""
    words = _in_index(_prose_words(query), memo)
    return fts_query(" ".join(words)) if words else None, _symbol_phrases(query)


def _in_index(words: list[str], memo: dict | None) -> list[str]:
    """``words`` without those ``memo`` (doc_counts) counted in no row: such a
    word matches nothing, yet FTS5 looks up its doclist in every segment for
    every MATCH it is in (a long question's joined pairs, "stringpassed",
    were half the terms of its snippet lookups). All of them without a memo."""
    return [w for w in words if memo.get(w.lower(), 1)] if memo else words


# Bounded BM25 (MaxScore-like): FTS5 scores every row a MATCH reaches (and
# counts them for bm25's IDF), so a broad OR of common words cost time in
# proportion to the store. The words go into the MATCH rarest first while the
# rows they reach (their document frequencies, summed) stay under this many
# per candidate asked for; the commoner words only rescore the candidates
# found, through ranking's IDF-weighted coverage. A word is always kept (the
# rarest); when that one alone reaches more, the MATCH looks at the newest
# rows holding about the budget's worth of its matches.
BM25_BUDGET = 50

# Who ranks a MATCH holding a phrase. FTS5's bm25() walks each phrase over the
# whole index for its IDF: its tokens' doclists, about 0.03 us an entry (24 ms
# for "get in" at 1M: "get" and "in" hold 654k rows). store/bm25.py, given the
# counts, skips that walk and scores each row the MATCH finds in Python, about
# 1 us plus 0.3 for each of the MATCH's k words. So the counts go to
# store/bm25.py when the phrases' tokens hold more rows than the rows scored
# times PHRASE_WALK_PER_ROW (1 us over 0.03) times (1 + 0.3 k); else FTS5
# ranks ("ordering-preserving": two rare tokens, beside a word of 2,866 rows,
# cost less walked than scored in Python).
PHRASE_WALK_PER_ROW = 33
# What a MATCH walks: its words' doclists, and for a phrase each of its tokens'
# whole doclist ("1-3,5" is the phrase "1 3 5": three of the index's longest
# lists, for a phrase in a few hundred rows). A MATCH walking more entries
# than the rows it may score times PHRASE_WALK_PER_ROW (the time of scoring
# them, at ~0.03 us an entry) looks at the newest rows only, as a common word
# does: at 1M, "get_in" walked 1.3M entries (27 ms) for 200 rows.


def doc_counts(conn, words: list[str], memo: dict | None = None) -> tuple[dict[str, int], reads.Indexed]:
    """reads.doc_counts, each word counted once per search (``memo``: FTS5's
    tokenizer folds case, so lowercase is the key)."""
    memo = {} if memo is None else memo
    todo = list(dict.fromkeys(w.lower() for w in words if w.lower() not in memo))
    if todo or "" not in memo:
        got, memo[""] = reads.doc_counts(conn, todo)
        memo.update(got)
    return {w: memo[w.lower()] for w in words}, memo[""]


def _bm25_match(
    conn, query: str, n_cands: int, memo: dict | None = None
) -> list[tuple[str | None, int | None, list | None]]:
    """The prose MATCH split in two: its rarest words within the budget, then
    the rest (the fill, absent when nothing was cut); each with the lowest
    rowid to look above (None: the whole index) that keeps it in the budget,
    and, for a MATCH holding a phrase, its words' counts for store/bm25.py
    (FTS5's bm25() would walk the phrase over the whole index again for its
    IDF; None: FTS5 counts). Words in no row are left out of both (a MATCH of
    None: not one word is in the index)."""
    words = _prose_words(query)
    fts_query(" ".join(words))  # the full match's error for a query with no searchable word
    memo = {} if memo is None else memo
    counts, ix = doc_counts(conn, words, memo)
    budget = BM25_BUDGET * n_cands
    # A word in no row matches nothing (and is no rarest word: taking the kept
    # place, it left every real word to the fill's newest rows).
    found = sorted((i for i in range(len(words)) if counts[words[i]]), key=lambda i: counts[words[i]])
    kept: set[int] = set()
    reach = 0
    for i in found:
        if kept and reach + counts[words[i]] > budget:
            break
        kept.add(i)
        reach += counts[words[i]]
    out = []
    for part in (sorted(kept), sorted(set(found) - kept)):
        if part:
            present = [words[i] for i in part]
            reach = sum(counts[w] for w in present)
            # over budget by this much: rows scored, or entries walked (see PHRASE_WALK_PER_ROW)
            phrases = _phrase_walk(conn, present, memo)
            walked = phrases + sum(counts[w] for w in present if not reads.is_phrase(w))
            over = max(reach / budget, walked / (PHRASE_WALK_PER_ROW * budget))
            above = reads.rowid_under_newest(conn, ix, int(ix.rows / over)) if over > 1 else None
            scored = reach if above is None else max(1, int(reach / over))
            hits = [counts[w] for w in present] if _walk_costs_more(present, phrases, scored) else None
            out.append((fts_query(" ".join(present)), above, hits))
    return out or [(None, None, None)]


def _phrase_walk(conn, words: list[str], memo: dict) -> int:
    """The doclist entries the phrases among ``words`` walk: their tokens' rows (0: no phrase)."""
    parts = [t for w in words if reads.is_phrase(w) for t in reads.tokens(w)]
    return sum(doc_counts(conn, parts, memo)[0].values()) if parts else 0


def _walk_costs_more(words: list[str], phrase_walk: int, scored: int) -> bool:
    """Whether FTS5's IDF walk of the phrases among ``words`` (``phrase_walk``
    entries) would cost more than scoring the ``scored`` rows in Python
    (PHRASE_WALK_PER_ROW)."""
    return phrase_walk > PHRASE_WALK_PER_ROW * (1 + 0.3 * len(words)) * scored


def keyword_candidates(
    conn, query: str, filters: dict, n: int = CANDIDATES, memo: dict | None = None
) -> list[tuple[dict, float, str]]:
    """BM25 candidates of the query's words (``prose_candidates``), then the
    chunks defining a queried symbol (``defining_candidates``) not among them;
    without snippets (``with_snippets`` adds them to the hits kept)."""
    return with_defining(prose_candidates(conn, query, filters, n, memo), defining_candidates(conn, query, filters))


def with_defining(rows: list, defining: list) -> list:
    """The keyword candidates: ``rows``, then those of ``defining`` not among them."""
    have = {r[0]["id"] for r in rows}
    return rows + [r for r in defining if r[0]["id"] not in have]


def prose_candidates(
    conn, query: str, filters: dict, n: int = CANDIDATES, memo: dict | None = None
) -> list[tuple[dict, float, str]]:
    """BM25 candidates of the query's rarest words within the budget
    (``_bm25_match``; stopwords out), filled up to ``n`` by its other words
    (ranked after them) when those are too few."""
    (prose, above, hits), *fill = _bm25_match(conn, query, n, memo)
    rows = reads.search_fts(conn, prose, filters, n, snippets=False, above_rowid=above, hits=hits) if prose else []
    if fill and fill[0][0] and len(rows) < n:
        have = {r[0]["id"] for r in rows}
        more_match, more_above, more_hits = fill[0]
        more = reads.search_fts(conn, more_match, filters, n, snippets=False, above_rowid=more_above, hits=more_hits)
        more = [r for r in more if r[0]["id"] not in have][: n - len(rows)]
        low = min((r[1] for r in rows), default=0.0)
        top = max((r[1] for r in more), default=0.0)
        if rows and top > 0:  # below every rare-word candidate, in their own order
            more = [(node, low * 0.99 * max(score, 0.0) / top, snip) for node, score, snip in more]
        rows += more
    return rows


def defining_candidates(conn, query: str, filters: dict) -> list[tuple[dict, float, str]]:
    """The chunks with a ``def``/``class`` of a queried symbol (the best 20,
    by BM25 of its phrases): looked up in the store's index of definitions."""
    names = _defined_names(query)
    return reads.defining(conn, names, filters, 20) if names else []


def with_snippets(conn, hits: list[ranking.Candidate], query: str, filters: dict, memo: dict | None = None) -> None:
    """The FTS snippet of each keyword hit, looked up for the hits kept only
    (one indexed lookup each, where a snippet for every candidate was most of
    a broad query's cost); ``memo``: the search's document counts."""
    todo = {c.node["id"]: c for c in hits if c.snippet is None and (c.keyword_rank or c.semantic_rank is None)}
    for match in _keyword_matches(query, memo):
        if match and todo:
            for node_id, snip in reads.snippets(conn, match, list(todo), filters.get("status")).items():
                todo.pop(node_id).snippet = snip


def semantic_candidates(conn, emb: dict, filters: dict, n: int = CANDIDATES) -> list[tuple[dict, float]]:
    """(node, cosine similarity) nearest first, through the store's KNN; a
    store holding another model's vectors is refused (ModelMismatch)."""
    from memtree.store import vectors

    vectors.check_model(conn, emb["model"], emb["dim"])
    pairs = vectors.knn(conn, emb["vector"], n, filters, model=emb["model"])
    nodes = reads.get_nodes(conn, [i for i, _ in pairs], filters.get("status"))
    return [(nodes[i], 1.0 - float(d)) for i, d in pairs if i in nodes]


def _idf(conn, query: str, memo: dict | None = None) -> dict[str, float]:
    """IDF of each query term, counted on the surface word FTS5 stems itself."""
    surface: dict[str, str] = {}  # stemmed term -> a word of the query it came from
    for w in re.findall(r"[A-Za-z0-9_]+", ranking.content_query(query)):
        for part in [w.lower(), *ranking.split_identifier(w)]:
            for t in ranking.terms(part)[:1]:  # none for a stopword
                surface.setdefault(t, part)
    counts, ix = doc_counts(conn, list(dict.fromkeys(surface.values()))[:MAX_TERMS], memo)
    by_word = ranking.idf_from_counts(counts, ix.rows)
    return {t: by_word.get(w, 0.0) for t, w in surface.items()}


def fuse(
    kw_rows, sem_rows, semantic_weight: float = SEMANTIC_WEIGHT, made: dict | None = None
) -> list[ranking.Candidate]:
    """Reciprocal Rank Fusion (k=60) of keyword and semantic candidates, a
    semantic rank counting ``semantic_weight`` times a keyword one; ``base``
    is the fused score over the best one's. ``made``: the semantic rows'
    candidates by id, made (and prepared) before the keyword rows came."""
    made = made or {}
    cands: dict[str, ranking.Candidate] = {}
    for rank, (node, _score, snip) in enumerate(kw_rows, 1):
        c = made.get(node["id"])
        if c is None or c.node != node:  # the other arm read the row in another snapshot: as it is here
            c = ranking.Candidate(node, 0.0)
        c.snippet, c.keyword_rank = snip, rank
        cands[node["id"]] = c
    for rank, (node, sim) in enumerate(sem_rows, 1):
        c = cands.get(node["id"]) or cands.setdefault(node["id"], made.get(node["id"]) or ranking.Candidate(node, 0.0))
        c.semantic_rank, c.similarity = rank, sim
    for c in cands.values():
        c.base = (1.0 / (RRF_K + c.keyword_rank) if c.keyword_rank is not None else 0.0) + (
            semantic_weight / (RRF_K + c.semantic_rank) if c.semantic_rank is not None else 0.0
        )
    top = max((c.base for c in cands.values()), default=0.0) or 1.0
    for c in cands.values():
        c.base /= top
    return list(cands.values())


def _normalised(rows, key) -> list[ranking.Candidate]:
    top = max((key(r) for r in rows), default=0.0) or 1.0
    return [ranking.Candidate(r[0], max(key(r), 0.0) / top, r[2] if len(r) > 2 else None) for r in rows]


def evidence(hits: list[ranking.Candidate], sem_rows) -> dict:
    """The best query-term coverage among the hits and the best cosine
    similarity among the semantic candidates (None: not embedded)."""
    cov = max((c.coverage for c in hits), default=0.0)
    sim = max((s for _, s in sem_rows), default=None)
    return {"coverage": round(cov, 3), "similarity": None if sim is None else round(sim, 3)}


def is_weak(ev: dict, model: str | None) -> bool:
    floors = WEAK_FLOORS.get(model) if ev["similarity"] is not None else None
    if floors is None:
        return ev["coverage"] < WEAK_KEYWORD_FLOOR
    return ev["coverage"] < floors[0] and ev["similarity"] < floors[1]


def above_floor(hits: list[ranking.Candidate], model: str | None) -> list[ranking.Candidate]:
    """The hits whose own evidence clears a share of the weak floors, so a
    small store does not fill the limit with every node KNN reaches; the best
    hit always stays."""
    floors = WEAK_FLOORS.get(model)
    if floors is None:
        return hits
    cov, sim = floors[0] * HIT_FLOOR_SHARE, floors[1] * HIT_FLOOR_SHARE
    kept = [c for c in hits[1:] if c.coverage >= cov or (c.similarity or 0.0) >= sim]
    return hits[:1] + kept


# Threads for the keyword arm of hybrid searches, a read connection each
# (``thread_db``): a few, so concurrent searches do not queue behind one.
_ARMS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memtree-keyword-arm")


def _prose_arm(thread_db, query: str, filters: dict, memo: dict):
    return prose_candidates(thread_db(), query, filters, memo=memo)


def _usable(emb: dict) -> bool:
    """The query vector is finite and of unit length, as every stored one is
    (checked again here: KNN over a zero or unnormalised vector ranks by noise)."""
    vec = emb.get("vector") if isinstance(emb, dict) else None
    try:  # a list from the walker, an array from the eval's in-process provider
        norm2 = sum(float(x) * float(x) for x in vec) if vec is not None and len(vec) else float("nan")
    except (TypeError, ValueError):
        return False
    return math.isfinite(norm2) and abs(norm2 - 1.0) <= 2e-3


def run(
    conn,
    query: str,
    mode: str = "hybrid",
    filters: dict | None = None,
    limit: int = 10,
    query_vector: dict | None = None,
    vector_note: str | None = None,
    group_files: bool = False,
    abstain: bool = True,
    semantic_weight: float | None = None,
    similarity_weight: float | None = None,
    snippets: bool = True,
    thread_db=None,
) -> Outcome:
    """Search in ``mode``. ``query_vector`` is the query's embedding
    (``{"model", "dim", "vector"}``, as the embed walker answers); None means
    none arrived in time (``vector_note`` says why): hybrid then degrades to
    keyword and says so, semantic raises. The best hits come back whenever
    there is a candidate, ``weak`` when their evidence is under the floors;
    ``abstain=False`` also keeps every hit KNN reached (no per-hit floor);
    ``semantic_weight``, ``similarity_weight``: SEMANTIC_WEIGHT and ranking's
    SIMILARITY_WEIGHT unless the calibration (eval/recall_calibrate.py) asks;
    ``snippets=False`` leaves the keyword hits' FTS snippets to the caller
    (``with_snippets``), which may need only a few of them; ``thread_db``:
    the read connection of the calling thread (a function), given when SQL
    may run on pool threads: the keyword arm of a hybrid search beside the
    semantic one."""
    filters = filters or {}
    fts_query(query)  # validates the query for every mode
    requested, degraded = mode, None
    if mode != "keyword" and query_vector is None:
        why = vector_note or "no query embedding available"
        if mode == "semantic":
            raise BadRequest(f"semantic search unavailable: {why}; use mode 'keyword'")
        mode, degraded = "keyword", f"hybrid degraded to keyword: {why}"
    if mode != "keyword" and not _usable(query_vector):
        why = "the query embedding is not a unit vector (no known token, or an unnormalised provider)"
        if mode == "semantic":
            raise BadRequest(f"semantic search unavailable: {why}; use mode 'keyword'")
        mode, degraded = "keyword", f"hybrid degraded to keyword: {why}"
    memo: dict = {}  # document frequencies, counted once for the MATCH and the IDF
    # With thread_db, in hybrid, the prose BM25 runs on a pool thread while this
    # one runs the semantic arm (SQLite and numpy release the GIL), each on its
    # own connection.
    prose_job = None
    if thread_db and mode == "hybrid":
        prose_job = _ARMS.submit(_prose_arm, thread_db, query, filters, memo)
    sem_rows = []
    if mode != "keyword":
        from memtree.store.vectors import ModelMismatch

        try:
            sem_rows = semantic_candidates(conn, query_vector, filters)
        except ModelMismatch as e:
            if mode == "semantic":
                raise
            mode, degraded = "keyword", f"hybrid degraded to keyword: {e.message}"
    # The semantic candidates' text is read for the query (the costly part of
    # ranking) while the keyword arm may still be in SQLite on its thread.
    scorer = ranking.Scorer(query)
    made = {node["id"]: ranking.Candidate(node, 0.0) for node, _ in sem_rows}
    scorer.prepare(made.values())
    kw_rows = []
    if mode != "semantic":
        prose = prose_job.result() if prose_job is not None else prose_candidates(conn, query, filters, memo=memo)
        kw_rows = with_defining(prose, defining_candidates(conn, query, filters))
    if mode == "hybrid":
        cands = fuse(kw_rows, sem_rows, SEMANTIC_WEIGHT if semantic_weight is None else semantic_weight, made)
    elif mode == "semantic":
        cands = fuse([], sem_rows, made=made)
    else:
        cands = _normalised(kw_rows, lambda r: r[1])
    scorer.score(cands, _idf(conn, query, memo), similarity_weight)
    hits = ranking.select(cands, limit, group_files)
    ev = evidence(hits, sem_rows)
    model = query_vector and query_vector.get("model") if mode != "keyword" else None
    if not hits:
        return Outcome([], mode, requested, degraded, abstained=True, evidence=ev)
    if abstain and sem_rows:
        hits = above_floor(hits, model)
    if snippets:
        with_snippets(conn, hits, query, filters, memo)
    return Outcome(hits, mode, requested, degraded, evidence=ev, weak=is_weak(ev, model))
