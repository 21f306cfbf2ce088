"""Code-aware ranking and abstention, end to end: files captured by the real
wrapped ``read`` over real stdio (real writer, real SQLite), searched through
the real MCP ``recall`` tool (its search) and through the library on a read connection."""

from __future__ import annotations

import os
import re

import pytest

from memtree.recall import search
from memtree.store import db as store_db
from tests.support.front_harness import Front, ids_in

DEFINES = '''"""Interval parsing for the job runner."""

import re

UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_interval(text):
    """Turn '5m' or '2h' into a number of seconds."""
    m = re.fullmatch(r"(\\d+)([smh])", text.strip())
    if not m:
        raise ValueError(f"bad interval {text!r}")
    return int(m.group(1)) * UNITS[m.group(2)]
'''
# Three files that use the name, each more often than the definition names it.
USES = {
    "runner.py": "from timing import parse_interval\n\n\ndef every(spec):\n"
    "    # parse_interval: the spec's interval, parse_interval again for the retry\n"
    "    return parse_interval(spec), parse_interval(spec) * 2, parse_interval\n",
    "cli.py": "from timing import parse_interval\n\n\ndef main(argv):\n"
    "    return [parse_interval(a) for a in argv if parse_interval(a)]  # parse_interval each\n",
    "config_check.py": "import timing\n\n\ndef check(cfg):\n"
    "    ok = timing.parse_interval(cfg['every']) and timing.parse_interval(cfg['retry'])\n"
    "    return ok  # parse_interval parse_interval\n",
}
# Each shares a word with the store (parse, interval, retry, check), none is answered by it.
NO_ANSWER = [
    "parse an email address into its local part and domain",
    "interval tree for overlapping ranges",
    "retry failed HTTP requests through a proxy",
    "check the spelling of a document",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    f = Front(tmp_path_factory.mktemp("ranking"))
    try:
        files = {"timing.py": DEFINES, **USES}
        for name, text in files.items():
            with open(os.path.join(f.root, name), "w") as fh:
                fh.write(text)
            f.ok("read", {"path": name})
        chunk = {
            name: dict(
                f.rows(
                    "SELECT json_extract(metadata, '$.symbol'), id FROM nodes WHERE kind = 'file_chunk' AND status = 'live'"
                    " AND json_extract(metadata, '$.path') = ?",
                    (os.path.join(f.root, name),),
                )
            )
            for name in files
        }
        f.defining = chunk["timing.py"]["parse_interval"]
        f.users = {
            name: chunk[name]["every" if name == "runner.py" else "main" if name == "cli.py" else "check"]
            for name in USES
        }
        yield f
    finally:
        f.close()


@pytest.fixture
def conn(store):
    c = store_db.open_read(store.paths.db)
    yield c
    c.close()


def _ids(outcome) -> list[str]:
    return [c.node["id"] for c in outcome.hits]


def test_a_symbol_query_ranks_the_defining_chunk_first_over_three_files_that_use_it(store, conn):
    ranked = _ids(search.run(conn, "parse_interval", "keyword", {}, 10))
    assert ranked[0] == store.defining
    assert set(store.users.values()) <= set(ranked[1:])
    # Control: plain BM25 puts a heavy user above the definition, so the ranking did the work.
    plain = [r[0]["id"] for r in search.keyword(conn, "parse_interval", {}, 10)]
    assert plain[0] != store.defining and store.defining in plain


def test_the_mcp_recall_tool_answers_a_symbol_query_with_the_definition_first(store):
    text = store.ok("recall", {"query": "parse_interval", "mode": "keyword"})
    first = re.search(r"^([0-9A-HJKMNP-TV-Z]{26}) ", text, re.MULTILINE).group(1)
    assert first == store.defining


def test_no_answer_queries_still_get_their_best_hits_flagged_weak_while_answerable_ones_do_not(store, conn):
    for query in NO_ANSWER:
        out = search.run(conn, query, "keyword", {}, 10)
        # Fail open: the best there is comes back, marked weak, never an empty "nothing relevant".
        assert (out.abstained, out.weak) == (False, True) and _ids(out) != [], query
        assert out.evidence["coverage"] < search.WEAK_KEYWORD_FLOOR
    answered = search.run(conn, "parse an interval such as 5m into seconds", "keyword", {}, 10)
    assert (answered.abstained, answered.weak) == (False, False) and _ids(answered)[0] == store.defining


def test_the_mcp_recall_tool_flags_a_weak_match_and_says_nothing_only_when_nothing_matches(store):
    text = store.ok("recall", {"query": NO_ANSWER[0], "mode": "keyword"})
    assert "weak match: the best hit holds" in text.split("\n")[0] and ids_in(text) != set()
    strong = store.ok("recall", {"query": "parse an interval such as 5m into seconds", "mode": "keyword"})
    assert "weak match" not in strong and store.defining in ids_in(strong)  # control
    nothing = store.ok("recall", {"query": "zyxwvut qqqplm", "mode": "keyword"})
    assert ids_in(nothing) == set() and "0 result(s)" in nothing


def test_hybrid_without_an_embedding_degrades_to_keyword_and_says_so(store):
    text = store.ok("recall", {"query": "parse_interval"})
    assert "(keyword)" in text and "hybrid degraded to keyword" in text
    assert store.defining in ids_in(text)


def test_each_file_shows_when_the_limit_allows_and_group_files_merges_a_files_chunks(store, conn):
    ranked = search.run(conn, "parse_interval", "keyword", {}, 4, abstain=False)
    assert {c.path for c in ranked.hits} == {os.path.join(store.root, n) for n in ("timing.py", *USES)}
    grouped = search.run(conn, "interval", "keyword", {}, 10, group_files=True, abstain=False)
    paths = [c.path for c in grouped.hits]
    assert len(paths) == len(set(paths))
    timing = next(c for c in grouped.hits if c.path.endswith("timing.py"))
    assert set(timing.also) and timing.node["id"] not in timing.also


@pytest.mark.parametrize(
    "query,names",
    [
        ("parse_interval", {"parse_interval"}),
        ("Job.run", {"Job.run", "run"}),
        ("TTLCache", {"TTLCache"}),
        ("curry", {"curry"}),
        ("where is the string passed to at() checked", {"at"}),
        ("how does `Job.run` reschedule", {"Job.run", "run"}),
        ("the LRU eviction in CacheManager", {"CacheManager"}),
        ("strip common leading whitespace", set()),
    ],
)
def test_the_names_whose_definitions_a_query_asks_for(query, names):
    from memtree.recall import ranking

    assert ranking.queried_symbols(query)[0] == names


def test_present_terms_finds_exactly_the_query_terms_a_full_split_finds():
    """Ranking checks only the query's terms in a candidate (present_terms);
    it must agree with splitting and stemming every word (terms), over real
    code and over random identifier soup (camelCase, snake_case, digits, stems)."""
    import random

    from memtree.recall import ranking

    here = os.path.dirname(os.path.abspath(__file__))
    texts = [DEFINES, *USES.values()]
    for name in sorted(os.listdir(here))[:8]:
        with open(os.path.join(here, name), encoding="utf-8") as f:
            texts.append(f.read())
    rng = random.Random(17)
    texts += ["".join(rng.choice("aAbBcCeEsSdDiIyY_1 .-\n(é") for _ in range(60)) for _ in range(3000)]
    queries = [ranking.terms(q) for q in ("expired cache entries", "HTTPServerError get_in", "parse intervals")]
    queries += [["".join(rng.choice("abcesdiy_1") for _ in range(rng.randint(1, 4))) for _ in range(3)]] * 50
    found = 0
    for text in texts:
        own = ranking.terms(text)
        for q in [*rng.sample(queries, 3), rng.sample(own, min(2, len(own))) + rng.choice(queries)]:
            want = set(own) & set(q)
            assert ranking.present_terms(text, q) == want, (text, q)
            found += bool(want)
    assert found > 1000  # positive control: most cases hold some of the terms
    assert ranking.present_terms("the expiredCacheEntries", ["expir", "cach"]) == {"expir", "cach"}
    assert ranking.present_terms("nothing relevant", ["expir"]) == set()
    # A term inside a run of letters is no part ("equation" in "inequation"); a
    # capitalised one inside a word is ("anEquation"), as is one after a digit.
    assert ranking.present_terms("inequation requested", ["equation", "equ"]) == set()
    assert ranking.present_terms("inequation anEquation", ["equation"]) == {"equation"}
    assert ranking.present_terms("inequation v2equation", ["equation"]) == {"equation"}


def test_a_chunks_head_terms_are_those_a_scan_of_its_head_finds():
    """Scoring takes the head's terms (symbol, definition line, docstring) from
    the chunk's own scan where it can (head_terms): it must agree with
    scanning the head text itself, wherever the head sits in the chunk and
    whichever terms occur before, inside or after it, in words scanned for
    themselves or for another term."""
    import random

    from memtree.recall import ranking

    rng = random.Random(23)
    vocab = ["expiredCache", "cache_entry", "Entries", "parse", "HTTPServer", "server", "get_in", "timeout", "x2parse"]

    def line() -> str:
        return " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 4)))

    def head() -> str:
        doc = rng.choice(["", '\n    """' + line() + '"""', "\n    '" + line() + "'"])
        return f"{rng.choice(['', '    ', 'async '])}def {rng.choice(vocab)}({line()}):{doc}"

    checked = differs = 0
    for _ in range(3000):
        parts = [line() for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.8:
            parts.insert(rng.randint(0, len(parts)), head())
        content = "\n".join(parts + [line() for _ in range(rng.randint(0, 3))])
        node = {"id": "n", "content": content, "metadata": {"path": "pkg/mod.py", "symbol": rng.choice([None, *vocab])}}
        c = ranking.Candidate(node, 1.0)
        want = ranking._wanted(ranking.terms(" ".join(rng.sample(vocab, 3))))
        first = ranking._first_yields(content + " " + (c.symbol or "") + " " + c.path, want)
        m = ranking._HEAD.search(content)
        head_text = (c.symbol or "") + " " + (m.group(0) if m else "")
        expected = ranking.present_terms(head_text, first)
        assert ranking.head_terms(c, content, first) == expected, (content, c.symbol, want)
        checked += bool(expected)
        differs += expected != set(first)
    assert checked > 1000 and differs > 500  # positive controls: heads hold some terms, and not every one


def test_semantic_candidates_prepared_before_the_keyword_rows_score_as_candidates_made_after():
    """A hybrid search reads its semantic candidates' text for the query while
    the keyword arm is still running (ranking.Scorer.prepare, search.run), and
    the fusion reuses those candidates: every score, coverage and order must
    be what scoring the fused candidates afresh gives. A keyword row read in
    another snapshot than the semantic one (its text rewritten meanwhile) is
    scored on the keyword row, as before."""
    import random

    from memtree.recall import ranking

    rng = random.Random(5)
    vocab = ["parse_interval", "retry", "Scheduler", "timeout", "cache", "expire", "test", "job", "run", "def", "class"]

    def node(i: int) -> dict:
        lines = [" ".join(rng.choice(vocab) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.4:
            lines.insert(0, f'def {rng.choice(vocab)}(x):\n    """{" ".join(rng.sample(vocab, 3))}"""')
        path = rng.choice(["pkg/sched.py", "pkg/cache.py", "tests/test_job.py", "pkg/retry_util.py"])
        return {"id": f"n{i:03d}", "content": "\n".join(lines), "metadata": {"path": path}}

    checked = rewritten = 0
    for _ in range(200):
        query = rng.choice(["parse_interval", "Scheduler.run", "retry", " ".join(rng.sample(vocab, 4))])
        nodes = [node(i) for i in range(30)]
        sem_rows = [(n, rng.uniform(0.1, 0.9)) for n in rng.sample(nodes, 18)]
        kw_rows = [(dict(n), rng.uniform(1, 9), None) for n in rng.sample(nodes, 18)]
        for row in kw_rows[:2]:  # the same id, another snapshot's text
            row[0]["content"] += "\nretry timeout"
        idf = {t: rng.uniform(0.5, 4.0) for t in ranking.terms(" ".join(vocab))}

        fresh = search.fuse(kw_rows, sem_rows)
        ranking.Scorer(query).score(fresh, idf)
        scorer = ranking.Scorer(query)
        made = {n["id"]: ranking.Candidate(n, 0.0) for n, _ in sem_rows}
        scorer.prepare(made.values())
        reused = search.fuse(kw_rows, sem_rows, made=made)
        scorer.score(reused, idf)

        def seen(cands):
            return [
                (c.node["id"], c.node["content"], c.score, c.coverage, c.keyword_rank, c.semantic_rank) for c in cands
            ]

        assert seen(reused) == seen(fresh)
        assert [c.node["id"] for c in ranking.select(reused, 10)] == [c.node["id"] for c in ranking.select(fresh, 10)]
        by_id = {c.node["id"]: c for c in reused}
        for n, _, _ in kw_rows[:2]:
            if n["id"] in made:  # positive control: the made candidate held the other text
                assert by_id[n["id"]] is not made[n["id"]] and by_id[n["id"]].node["content"] == n["content"]
                rewritten += 1
        checked += sum(1 for c in reused if c.node["id"] in made and by_id[c.node["id"]] is made[c.node["id"]])
    assert checked > 1000 and rewritten > 50


def test_keyword_hits_carry_their_fts_snippet(store, conn):
    """Candidates come without snippets; the hits kept get theirs, for the
    query's words (looked up after ranking, for the hits only)."""
    hits = search.run(conn, "parse_interval", "keyword", {}, 10).hits
    assert {c.node["id"] for c in hits} >= {store.defining}
    assert all(c.snippet and "parse_interval" in c.snippet for c in hits), [c.snippet for c in hits]


# One file with three chunks that each answer "retry backoff delay", a second
# file that mentions it once; and two classes with a method of the same name.
RETRY = '''"""Retrying with backoff."""


class Backoff:
    def backoff_delay(self, attempt):
        # retry backoff delay: the retry backoff delay doubles per retry
        return self.base * 2**attempt  # backoff delay for this retry


    def backoff_cap(self, delay):
        # retry backoff delay capped: no retry backoff delay above the cap
        return min(delay, self.cap)  # backoff delay bound for a retry


    def backoff_jitter(self, delay):
        # retry backoff delay jitter: spread the retry backoff delay
        return delay * self.rng.random()  # backoff delay jitter per retry


class Job:
    def run(self):
        # run the job of a batch: run it now, run it again on failure, batch run run run
        return self.run_once() or self.run_once()


class Batch:
    def run(self):
        return [j.run() for j in self.jobs]
'''
CLIENT = "def fetch(url):\n    # one retry after a backoff delay\n    return get(url)\n"


@pytest.fixture(scope="module")
def retry_store(tmp_path_factory):
    f = Front(tmp_path_factory.mktemp("ranking-retry"))
    try:
        for name, text in {"retry.py": RETRY, "client.py": CLIENT}.items():
            with open(os.path.join(f.root, name), "w") as fh:
                fh.write(text)
            f.ok("read", {"path": name})
        f.chunk = dict(
            f.rows(
                "SELECT json_extract(metadata, '$.symbol'), id FROM nodes WHERE kind = 'file_chunk' AND status = 'live'"
            )
        )
        yield f
    finally:
        f.close()


def test_a_files_several_relevant_chunks_all_stay_in_the_top_hits(retry_store):
    c = store_db.open_read(retry_store.paths.db)
    try:
        backoff = {retry_store.chunk[f"Backoff.{m}"] for m in ("backoff_delay", "backoff_cap", "backoff_jitter")}
        # File diversity is a tie-break, not a decay: the second file's passing mention does not
        # push the first file's other answers out of a limit of three.
        top3 = search.run(c, "retry backoff delay", "keyword", {}, 3, abstain=False)
        assert set(_ids(top3)) == backoff
        # Control: the other file is found when the limit leaves room, and grouping gives one hit per file.
        top4 = search.run(c, "retry backoff delay", "keyword", {}, 4, abstain=False)
        assert set(_ids(top4)) == backoff | {retry_store.chunk["fetch"]}
        grouped = search.run(c, "retry backoff delay", "keyword", {}, 3, group_files=True, abstain=False)
        assert [h.path for h in grouped.hits] == [os.path.join(retry_store.root, n) for n in ("retry.py", "client.py")]
        assert backoff <= set(grouped.hits[0].also) | {_ids(grouped)[0]}
    finally:
        c.close()


def test_a_class_qualified_method_query_ranks_that_class_method_above_a_namesake(retry_store):
    c = store_db.open_read(retry_store.paths.db)
    try:
        for query in ("Batch.run", "Job.run"):
            ranked = _ids(search.run(c, query, "keyword", {}, 5, abstain=False))
            assert ranked[0] == retry_store.chunk[query], query
            other = "Job.run" if query == "Batch.run" else "Batch.run"
            assert retry_store.chunk[other] in ranked[1:]  # control: the namesake is still found
    finally:
        c.close()


# Captured by a native Read, small methods are stored joined to a bigger
# neighbour (capture.readSymbolMinBytes): ``Job.run`` lives in the chunk named
# ``Job.start``, ``Batch.run`` in the one named ``Batch.collect``, which says
# "run" far more often.
JOINED = (
    "class Job:\n"
    "    def run(self):\n"
    "        return self.step()\n\n"
    "    def start(self, when):\n"
    + "".join(f"        self.slot_{i} = when.plan({i})  # schedule the start of slot {i}\n" for i in range(10))
    + "\n\nclass Batch:\n"
    "    def run(self):\n"
    "        return [job.run() for job in self.jobs]  # run run run: every job's run\n\n"
    "    def collect(self, results):\n"
    + "".join(f"        self.part_{i} = results.take({i})  # collect run result {i}\n" for i in range(10))
)


def test_a_class_qualified_method_query_finds_the_method_inside_a_joined_chunk(tmp_path):
    from memtree import protocol
    from memtree.eval import payloads

    f = Front(tmp_path, with_writer=True)
    try:
        path = os.path.join(f.root, "jobs.py")
        with open(path, "w") as fh:
            fh.write(JOINED)
        stored = f.caller.call(protocol.Ingest(payload=payloads.read(path, JOINED, f.root)))["stored"]
        f.set_status(stored, "live")
        named = dict(f.rows("SELECT json_extract(metadata, '$.symbol'), id FROM nodes WHERE kind = 'file_chunk'"))
        assert set(named) == {"Job.start", "Batch.collect"}  # the shape the test needs: both joined
        c = store_db.open_read(f.paths.db)
        try:
            for query, want, other in (
                ("Job.run", "Job.start", "Batch.collect"),
                ("Batch.run", "Batch.collect", "Job.start"),
            ):
                ranked = _ids(search.run(c, query, "keyword", {}, 5, abstain=False))
                assert ranked == [named[want], named[other]], query  # the namesake second, still found
        finally:
            c.close()
    finally:
        f.close()


# The line a stemmed query matches sits deep in its chunk, far past what the
# chunk's first characters would show.
LINK = (
    '"""Link supervision."""\n\n\ndef supervise(sock):\n'
    + "".join(f"    setting_{i} = sock.option({i})  # a setting the link does not use\n" for i in range(30))
    + "    # the socket reconnects after each dropped connection, waiting longer every time\n"
    "    return sock\n"
)


def test_a_hit_whose_lines_lack_the_query_word_shows_its_fts_snippet(tmp_path):
    """The recall tool shows a hit's matching lines when a line holds a query
    word, else its FTS snippet (matched through the stemmer), looked up only
    for such a hit: without it the answer would show the chunk's first line."""
    f = Front(tmp_path)
    try:
        with open(os.path.join(f.root, "link.py"), "w") as fh:
            fh.write(LINK)
        f.ok("read", {"path": "link.py"})
        stemmed = f.ok("recall", {"query": "reconnecting", "mode": "keyword"})
        assert "reconnects after each dropped connection" in stemmed, stemmed
        assert re.search(r"^\s+\d+: .*reconnects", stemmed, re.MULTILINE) is None  # a snippet, not a line
        # Control: a query word on the line shows the line itself, numbered.
        exact = f.ok("recall", {"query": "reconnects", "mode": "keyword"})
        assert re.search(r"^\s*\d+:? .*# the socket reconnects after each dropped", exact, re.MULTILINE), exact
    finally:
        f.close()
