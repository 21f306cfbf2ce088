"""Bounded BM25 (search._bm25_match): a broad query's common words leave the
MATCH once the rows its rarer words reach fill the budget, only fill up the
candidates when the rare words find too few, and the live predicate still
decides what comes back. A real writer, a real SQLite file."""

from __future__ import annotations

import pytest

from memtree import protocol
from memtree.recall import search
from memtree.store import bm25, reads
from tests.support import make_paths
from tests.support import test_config as make_config
from tests.support.actor_procs import read_db, running_writer

FILLERS = 160  # notes holding only the common word: over the budget of 3 candidates (150 rows)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    paths = make_paths(tmp_path_factory.mktemp("bounded"))
    with running_writer(paths, make_config()) as w:
        yield paths, _bounded_rows(w)


def _bounded_rows(w) -> dict[str, set[str]]:
    def add(content):
        return w.call(protocol.AddNode(kind="note", content=content, status="live"))["id"]

    ids = {
        # snake_case: FTS5 splits get_in, so its MATCH is the phrase "get in" (oldest rows: out of a small window)
        "get_in": {add("def get_in(keys, coll):\n    return reduce(get, keys, coll)"), add("x = get_in(path, cfg)")},
        "get_and_in": {add("get the value in the map, or in its parent")},
        "rare_phrase": {add("an ordering-preserving set")},
        # the fillers make "get" and "in" common: the phrase "get in" walks long doclists
        "filler": {add(f"common filler note number {i}: get it in") for i in range(FILLERS)},
        "gizmo": {add(f"common gizmo note {i}") for i in range(3)},
        # the only notes holding "widget" are hidden: never returned by a default (live) search
        "widget_stale": {add(f"common widget note {i}") for i in range(4)},
    }
    stale = sorted(ids["widget_stale"])
    assert sorted(w.call(protocol.SetStatus(ids=stale, status="stale", reason="test"))["changed"]) == stale
    return ids


def _ids(rows) -> set[str]:
    return {r[0]["id"] for r in rows}


def test_common_words_leave_the_match_once_the_rare_ones_fill_the_budget(store):
    paths, ids = store
    conn = read_db(paths)
    try:
        assert search.BM25_BUDGET * 3 < FILLERS
        parts = search._bm25_match(conn, "gizmo common", 3)
        # (the joined pair "gizmocommon" is counted too, and left out: no row holds it)
        assert [p[0] for p in parts] == ['"gizmo"', '"common"']
        assert parts[0][1] is None  # the rare word looks at the whole index
        got = search.keyword_candidates(conn, "gizmo common", {}, n=3)
        assert _ids(got) == ids["gizmo"]
        # Positive control: a budget the common word fits in keeps the full match.
        assert [p[0] for p in search._bm25_match(conn, "gizmo common", 100)] == ['"gizmo" OR "common"']
        many = search.keyword_candidates(conn, "gizmo common", {}, n=100)
        assert ids["gizmo"] <= _ids(many) and _ids(many) & ids["filler"]
    finally:
        conn.close()


def test_hidden_rare_matches_do_not_starve_the_live_common_ones(store):
    paths, ids = store
    conn = read_db(paths)
    try:
        assert [p[0] for p in search._bm25_match(conn, "widget common", 3)] == ['"widget"', '"common"']
        got = _ids(search.keyword_candidates(conn, "widget common", {}, n=3))
        assert len(got) == 3 and got <= ids["filler"] | ids["gizmo"]
        assert got & ids["widget_stale"] == set()
        # Positive control: naming the status returns exactly the hidden notes that hold the rare word.
        stale = search.keyword_candidates(conn, "widget common", {"status": ["stale"]}, n=3)
        assert len(stale) == 3 and _ids(stale) <= ids["widget_stale"]
        assert _ids(search.keyword_candidates(conn, "widget", {"status": ["stale"]}, n=10)) == ids["widget_stale"]
    finally:
        conn.close()


def test_words_in_no_row_leave_every_match_and_change_no_answer(store):
    """A word no indexed row holds matches nothing, so it is left out of the
    candidates' MATCH and of the snippets' (FTS5 looks up every word of a
    MATCH in every segment): the hits and their snippets are those of the
    query without it, and a query of such words alone finds nothing."""
    paths, ids = store
    conn = read_db(paths)
    try:
        memo: dict = {}
        assert search._bm25_match(conn, "gizmo zqxjunk", 3, memo)[0][0] == '"gizmo"'
        assert memo["zqxjunk"] == 0 and memo["gizmo"] == 3
        assert search._keyword_matches("gizmo zqxjunk", memo)[0] == '"gizmo"'
        assert search._keyword_matches("gizmo zqxjunk")[0] == '"gizmo" OR "zqxjunk" OR "gizmozqxjunk"'  # uncounted
        with_junk = search.run(conn, "gizmo zqxjunk", "keyword", {}, 10)
        without = search.run(conn, "gizmo", "keyword", {}, 10)
        assert {c.node["id"] for c in with_junk.hits} == ids["gizmo"]  # positive control
        assert [(c.node["id"], c.snippet) for c in with_junk.hits] == [(c.node["id"], c.snippet) for c in without.hits]
        assert all(c.snippet and "gizmo" in c.snippet for c in with_junk.hits)
        assert search._bm25_match(conn, "zqxjunk qqvvnone", 3)[0][0] is None
        assert search.keyword_candidates(conn, "zqxjunk qqvvnone", {}, n=10) == []
        assert search.run(conn, "zqxjunk qqvvnone", "keyword", {}, 10).abstained
    finally:
        conn.close()


def test_document_counts_are_exact_for_rare_words_and_estimated_from_the_newest_rows(store, monkeypatch):
    paths, ids = store
    conn = read_db(paths)
    try:
        exact, ix = reads.doc_counts(conn, ["common", "gizmo", "widget"])
        assert exact == {"common": FILLERS + 7, "gizmo": 3, "widget": 4}
        assert ix.rows == conn.execute("SELECT count(*) FROM nodes_fts_docsize").fetchone()[0] >= FILLERS + 11
        monkeypatch.setattr(reads, "DF_WINDOW", 40)
        monkeypatch.setattr(reads, "DF_EXACT_BELOW", 8)
        monkeypatch.setattr(reads, "DF_EXACT_UPTO", 8)  # sampled past this many rows
        est, _ = reads.doc_counts(conn, ["common", "gizmo", "widget", "filler"])
        assert est["gizmo"] == 3 and est["widget"] == 4  # rare in the window: counted over the whole index
        assert abs(est["common"] - (FILLERS + 7)) <= 0.1 * (FILLERS + 7)
        assert est["filler"] < est["common"]
    finally:
        conn.close()


def test_a_word_in_fewer_rows_than_the_bound_is_counted_exactly_past_the_window(store, monkeypatch):
    """A word under DF_EXACT_UPTO rows is counted by one walk, stopped at the
    bound, however many of them the sample would see: exact where the sample
    would estimate. Only a word reaching the bound is sampled."""
    paths, ids = store
    conn = read_db(paths)
    try:
        truth = {"common": FILLERS + 7, "filler": FILLERS, "gizmo": 3, "zqxjunk": 0}
        monkeypatch.setattr(reads, "DF_WINDOW", 40)
        monkeypatch.setattr(reads, "DF_EXACT_BELOW", 8)
        counted, ix = reads.doc_counts(conn, list(truth))
        assert ix.spans and counted == truth
        # Positive control: a bound under those counts samples the common words, an estimate.
        monkeypatch.setattr(reads, "DF_EXACT_UPTO", 8)
        sampled, _ = reads.doc_counts(conn, list(truth))
        assert {w: sampled[w] for w in ("gizmo", "zqxjunk")} == {"gizmo": 3, "zqxjunk": 0}
        assert sampled["common"] != truth["common"] or sampled["filler"] != truth["filler"], sampled
    finally:
        conn.close()


def test_a_word_in_no_row_never_takes_the_rarest_words_place(store):
    """The rarest word is always in the MATCH; a word no row holds (the joined
    pair "fillercommon") is no rarest word: before, it took that place and
    every real word was left to the fill's newest rows."""
    paths, ids = store
    conn = read_db(paths)
    try:
        memo: dict = {}
        parts = search._bm25_match(conn, "filler common", 1, memo)
        assert memo["fillercommon"] == 0 and memo["filler"] == FILLERS > search.BM25_BUDGET
        assert [p[0] for p in parts] == ['"filler"', '"common"']
        assert parts[0][1] is not None  # over the budget alone: bounded to the newest rows
        # Positive control: a budget the rarest word fits in looks at the whole index.
        assert search._bm25_match(conn, "filler common", 4)[0][:2] == ('"filler"', None)
    finally:
        conn.close()


def test_memtree_bm25_with_the_counts_ranks_as_fts5_bm25(store):
    """store/bm25.py given exact counts gives FTS5's bm25() scores, row for
    row: single words, an OR of words, a phrase, a phrase beside a word."""
    paths, _ids_ = store
    conn = read_db(paths)
    try:
        for words in (["gizmo"], ["gizmo", "widget"], ["get_in"], ["get_in", "common"], ["get", "in", "note"]):
            match = search.fts_query(" ".join(words))
            counts = [
                conn.execute(
                    "SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (search.fts_query(w),)
                ).fetchone()[0]
                for w in words
            ]
            theirs = dict(
                conn.execute("SELECT rowid, bm25(nodes_fts) FROM nodes_fts WHERE nodes_fts MATCH ?", (match,))
            )
            ours = dict(
                conn.execute(
                    f"SELECT rowid, {bm25.NAME}(nodes_fts{', ?' * len(counts)}) FROM nodes_fts WHERE nodes_fts MATCH ?",
                    (*counts, match),
                )
            )
            assert theirs and ours.keys() == theirs.keys()
            assert all(abs(ours[r] - theirs[r]) < 1e-9 for r in theirs), words
        # An estimated count above the rows (a pruned store's highest rowid scales it) scores as a
        # phrase in every row, as FTS5 would: an IDF of 1e-6, not a math domain error.
        rows = conn.execute("SELECT count(*) FROM nodes_fts_docsize").fetchone()[0]
        assert bm25.idf(rows, 10 * rows) == bm25.idf(rows, rows) == 1e-6 < bm25.idf(rows, 1)
        over = conn.execute(
            f"SELECT {bm25.NAME}(nodes_fts, ?) FROM nodes_fts WHERE nodes_fts MATCH 'gizmo'", (10 * rows,)
        ).fetchall()
        assert len(over) == 3 and all(-1e-5 < s <= 0 for (s,) in over)
        # Positive control: other counts give other scores.
        other = conn.execute(
            f"SELECT {bm25.NAME}(nodes_fts, 100) FROM nodes_fts WHERE nodes_fts MATCH 'gizmo'"
        ).fetchone()
        mine = conn.execute("SELECT bm25(nodes_fts) FROM nodes_fts WHERE nodes_fts MATCH 'gizmo'").fetchone()
        assert abs(other[0] - mine[0]) > 1e-3
    finally:
        conn.close()


def test_a_phrase_is_estimated_from_the_newest_rows_not_walked(store, monkeypatch):
    """A word the tokenizer splits (get_in: the phrase "get in") is never
    counted over the whole index once it is bigger than the window: its
    doclist is its common tokens'. Seen nowhere in the window, it counts 1, so
    it stays in the MATCH, which finds its rows; the search ranks them with
    the counts (store/bm25.py), not with FTS5's bm25(), when its tokens'
    doclists are longer than the rows scored by PHRASE_WALK_PER_ROW."""
    paths, ids = store
    conn = read_db(paths)
    try:
        assert reads.is_phrase("get_in") and reads.is_phrase("1-3,5") and not reads.is_phrase("gizmo")
        exact, _ = reads.doc_counts(conn, ["get_in", "gizmo"])
        assert exact == {"get_in": 2, "gizmo": 3}  # an index inside the window: exact
        monkeypatch.setattr(reads, "DF_WINDOW", 40)
        monkeypatch.setattr(reads, "DF_EXACT_BELOW", 8)
        monkeypatch.setattr(reads, "DF_EXACT_UPTO", 8)  # sampled past this many rows
        est, _ = reads.doc_counts(conn, ["get_in", "gizmo"])
        assert est == {"get_in": 1, "gizmo": 3}  # the rare word still exact (positive control)
        memo: dict = {}
        (match, above, hits), *_ = search._bm25_match(conn, "get_in", 10, memo)
        assert (match, above, hits) == ('"get_in"', None, [1])
        got = search.keyword_candidates(conn, "get_in", {}, n=10, memo=memo)
        assert _ids(got) == ids["get_in"]  # not "get the value in the map"
        assert search._bm25_match(conn, "gizmo", 10)[0][2] is None  # no phrase: FTS5's bm25()
        # A phrase of rare tokens costs FTS5 little to walk: its bm25() ranks (positive control).
        assert search._bm25_match(conn, "ordering-preserving", 10)[0] == ('"ordering-preserving"', None, None)
        assert _ids(search.keyword_candidates(conn, "ordering-preserving", {}, n=10)) == ids["rare_phrase"]
    finally:
        conn.close()


def test_a_phrase_whose_tokens_walk_too_far_looks_at_the_newest_rows(store, monkeypatch):
    """A phrase in a few rows can still cost the index's longest doclists to
    walk ("get in": two common tokens). Past PHRASE_WALK_PER_ROW times the
    rows the MATCH may score, it looks at the newest rows only, as a common
    word does; the chunk defining the queried name still comes, from the
    index of definitions."""
    paths, ids = store
    conn = read_db(paths)
    try:
        counts, ix = reads.doc_counts(conn, ["get", "in", "get_in"])
        walk = counts["get"] + counts["in"]
        assert counts["get_in"] == 2 and walk > 2 * FILLERS
        # Positive control: at the default cost per row the walk is within the budget of 3 candidates.
        assert walk < search.PHRASE_WALK_PER_ROW * search.BM25_BUDGET * 3
        (match, above, _), *_ = search._bm25_match(conn, "get_in", 3)
        assert (match, above) == ('"get_in"', None)
        assert _ids(search.keyword_candidates(conn, "get_in", {}, n=3)) == ids["get_in"]
        monkeypatch.setattr(search, "PHRASE_WALK_PER_ROW", 1)  # a walk of 150 entries is the most now
        (match, above, _), *_ = search._bm25_match(conn, "get_in", 3)
        over = walk / (search.BM25_BUDGET * 3)
        assert match == '"get_in"' and above == reads.rowid_under_newest(conn, ix, int(ix.rows / over))
        older = conn.execute("SELECT max(rowid) FROM nodes WHERE id IN (?, ?)", sorted(ids["get_in"])).fetchone()[0]
        assert above > older  # both get_in rows are older than the rows looked at
        defining = {i for i in ids["get_in"] if read_content(conn, i).startswith("def get_in")}
        assert _ids(search.keyword_candidates(conn, "get_in", {}, n=3)) == defining
    finally:
        conn.close()


def read_content(conn, node_id: str) -> str:
    return conn.execute("SELECT content FROM nodes WHERE id = ?", (node_id,)).fetchone()[0]


PRUNED, KEPT = 300, 60  # old notes dropped out of the index (as pruning does), then newer ones kept


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    """A long-lived store's shape: most of its rows pruned, so its rowids run
    far past the rows its index holds."""
    paths = make_paths(tmp_path_factory.mktemp("pruned"))
    with running_writer(paths, make_config()) as w:
        add = lambda text: w.call(protocol.AddNode(kind="note", content=text, status="live"))["id"]  # noqa: E731
        old = [add(f"sprocket wheel note {i}") for i in range(PRUNED)]
        kept = {add(f"sprocket axle note {i}") for i in range(KEPT)}
        assert sorted(w.call(protocol.SetStatus(ids=old, status="dropped", reason="test"))["changed"]) == sorted(old)
        yield paths, kept


def test_a_pruned_store_is_counted_by_its_rows_not_its_highest_rowid(pruned, monkeypatch):
    """Estimates scale the window's counts by the rows FTS5 holds (its
    averages record), and the newest rows' bound is a rowid with that many
    rows above it: scaled by the highest rowid, as before, a pruned store's
    every word was as common as its whole rowid range (here 6x)."""
    paths, kept = pruned
    conn = read_db(paths)
    try:
        exact, ix = reads.doc_counts(conn, ["sprocket", "axle", "wheel"])
        assert exact == {"sprocket": KEPT, "axle": KEPT, "wheel": 0}  # positive control: inside the window, exact
        assert ix.rows == KEPT < PRUNED < conn.execute("SELECT max(id) FROM nodes_fts_docsize").fetchone()[0]
        monkeypatch.setattr(reads, "DF_WINDOW", 20)
        monkeypatch.setattr(reads, "DF_EXACT_BELOW", 4)
        monkeypatch.setattr(reads, "DF_EXACT_UPTO", 4)  # sampled past this many rows
        est, ix = reads.doc_counts(conn, ["sprocket", "axle"])
        assert est == {"sprocket": KEPT, "axle": KEPT}  # 20 of the newest 20, of 60 rows (not of PRUNED + KEPT)

        def above(rowid: int) -> int:
            return conn.execute("SELECT count(*) FROM nodes_fts_docsize WHERE id > ?", (rowid,)).fetchone()[0]

        assert [above(reads.rowid_under_newest(conn, ix, k)) for k in (0, 1, 7, 20)] == [0, 1, 7, 20]  # stepped
        assert abs(above(reads.rowid_under_newest(conn, ix, 40)) - 40) <= 2  # extrapolated below the window
        assert above(reads.rowid_under_newest(conn, ix, KEPT)) == KEPT
        # The search's bound on a word over its budget holds about the budget's rows: 50 of the 60.
        (match, bound, _), *_ = search._bm25_match(conn, "sprocket", 1)
        assert match == '"sprocket"' and abs(above(bound) - search.BM25_BUDGET) <= 2
        assert _ids(search.keyword_candidates(conn, "sprocket", {}, n=1)) <= kept
    finally:
        conn.close()


OLDER, NEWER = 300, 100  # rows of an earlier era, then the latest session's, unlike them


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    """A store whose newest rows are unlike the rest: the older notes all hold
    "widget", the newest only one in ten."""
    paths = make_paths(tmp_path_factory.mktemp("skewed"))
    with running_writer(paths, make_config()) as w:
        for i in range(OLDER):
            w.call(protocol.AddNode(kind="note", content=f"widget gear note {i}", status="live"))
        for i in range(NEWER):
            text = f"widget session note {i}" if i % 10 == 0 else f"session note {i}"
            w.call(protocol.AddNode(kind="note", content=text, status="live"))
        yield paths


def test_estimates_sample_the_whole_index_not_its_newest_rows(skewed, monkeypatch):
    """Counted in the newest rows alone, "widget" (310 of 400 rows) came out
    at 40: the latest session's vocabulary taken for the store's, and every
    bounded MATCH of it scored far more rows than its budget. Spread over
    the index, the sample sees every era."""
    conn = read_db(skewed)
    try:
        exact, ix = reads.doc_counts(conn, ["widget", "session", "gear"])
        assert exact == {"widget": OLDER + NEWER // 10, "session": NEWER, "gear": OLDER} and ix.spans == []
        monkeypatch.setattr(reads, "DF_WINDOW", 40)
        monkeypatch.setattr(reads, "DF_EXACT_BELOW", 2)
        monkeypatch.setattr(reads, "DF_EXACT_UPTO", 2)  # sampled past this many rows
        est, ix = reads.doc_counts(conn, ["widget", "session", "gear"])
        assert len(ix.spans) == reads.DF_SPANS and ix.spans[0][1] == ix.high
        assert ix.sampled == sum(
            conn.execute("SELECT count(*) FROM nodes_fts_docsize WHERE id > ? AND id <= ?", s).fetchone()[0]
            for s in ix.spans
        )
        for word, truth in exact.items():
            assert abs(est[word] - truth) <= 0.25 * truth, (word, est[word], truth)
        # The newest rows alone (one span at the top): the skew this replaced (positive control).
        monkeypatch.setattr(reads, "DF_SPANS", 1)
        newest, _ = reads.doc_counts(conn, ["widget"])
        assert newest["widget"] < 0.5 * exact["widget"]
    finally:
        conn.close()


def test_the_sampled_rows_are_counted_again_after_every_write(tmp_path, monkeypatch):
    """The rows in the sampled spans are kept between searches (reads._SAMPLED)
    and counted again once a write moved the index: each estimate's scale is
    the rows its spans hold now, after added rows and after rows left it."""
    monkeypatch.setattr(reads, "DF_WINDOW", 40)
    monkeypatch.setattr(reads, "DF_EXACT_UPTO", 8)  # sampled past this many rows
    paths = make_paths(tmp_path)

    def recount(conn, ix) -> int:
        sql = "SELECT count(*) FROM nodes_fts_docsize WHERE id > ? AND id <= ?"
        return sum(conn.execute(sql, s).fetchone()[0] for s in ix.spans)

    with running_writer(paths, make_config()) as w:
        ids = [
            w.call(protocol.AddNode(kind="note", content=f"sprocket note {i}", status="live"))["id"] for i in range(90)
        ]
        conn = read_db(paths)
        try:
            _, first = reads.doc_counts(conn, ["sprocket"])
            assert first.spans and first.sampled == recount(conn, first)
            _, again = reads.doc_counts(conn, ["sprocket"])  # no write: the same spans, kept
            assert (again.spans, again.sampled) == (first.spans, first.sampled)
            ids += [
                w.call(protocol.AddNode(kind="note", content=f"gear note {i}", status="live"))["id"] for i in range(30)
            ]
            _, grown = reads.doc_counts(conn, ["sprocket"])
            assert grown.rows == 120 and grown.spans != first.spans and grown.sampled == recount(conn, grown)
            gone = ids[80:-1]  # the newest rows but one leave the index, as pruning takes them
            assert sorted(w.call(protocol.SetStatus(ids=gone, status="dropped", reason="test"))["changed"]) == sorted(
                gone
            )
            counts, pruned = reads.doc_counts(conn, ["sprocket"])
            assert pruned.rows == 81 and pruned.sampled == recount(conn, pruned)
            assert pruned.sampled != grown.sampled  # the spans' rows changed: kept, the count would be stale
            assert abs(counts["sprocket"] - 80) <= 0.25 * 80  # 80 of the 81 rows hold it
        finally:
            conn.close()
