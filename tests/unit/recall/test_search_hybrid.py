"""Semantic and hybrid search end to end: a real writer, the real embed walker
(its bundled local model), the real MCP front asking the walker for the query
embedding over its socket, files captured by the real wrapped ``read``."""

from __future__ import annotations

import os
import re

import pytest

from memtree.errors import BadRequest
from memtree.recall import search
from memtree.store import db as store_db
from tests.support import COLD_START_S, reap, wait_until
from tests.support.actor_procs import start_actor
from tests.support.front_harness import Front, ids_in

HELPERS = '''"""Small helpers."""


def shuffle_deck(cards, rng):
    """Put the cards in a random order."""
    rng.shuffle(cards)
    return cards


def to_celsius(fahrenheit):
    """Celsius temperature for a Fahrenheit temperature."""
    return (fahrenheit - 32) * 5 / 9


def is_valid_email(address):
    """Check an address has a user, an at sign and a domain."""
    user, _, domain = address.partition("@")
    return bool(user) and "." in domain


def median(values):
    """The middle value of the sorted values."""
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
'''
# Shares no word with to_celsius (nor with anything else stored).
PARAPHRASE = "weather thermometer reading"
# For the fusion test: one note matches the query both ways, one only by its
# words (repeated, in a long unrelated text), one only by meaning. code2's vectors
# put the meaning-only note nearer to the words-only one (cosine to the query 0.28
# against 0.32; code1 0.35 against 0.28), so the unrelated text is longer (and the
# words repeated more, to keep the keyword lead): 0.23 for the words-only note.
QUERY = "retry a failing network call"
BOTH = "with_retries: call the function again when the network call is failing, up to three attempts"
WORDS_ONLY = (
    "retry a failing network call; " * 15 + "The quarterly calendar lists holidays, "
    "month names, leap years, weekday headers, and the spelling of every public festival. " * 20
)
MEANING_ONLY = "re-send remote requests after connectivity errors"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    f = Front(tmp_path_factory.mktemp("hybrid"), overrides={"walkers": {"embeddingIdleMs": 100}})
    walker = None
    try:
        with open(os.path.join(f.root, "helpers.py"), "w") as fh:
            fh.write(HELPERS)
        f.ok("read", {"path": "helpers.py"})
        f.notes = {
            name: f.add(text, kind="note")
            for name, text in (("both", BOTH), ("words", WORDS_ONLY), ("meaning", MEANING_ONLY))
        }
        walker = start_actor(f.paths, f.config, "memtree.actors.walkers.embed", "walker.embed")
        # The walker loads the model and drains the backlog; allows for a cold start.
        wait_until(
            lambda: (
                f.rows(
                    "SELECT count(*) FROM nodes n WHERE n.status = 'live' AND n.kind IN "
                    "('file_chunk', 'note') AND n.id NOT IN (SELECT node_id FROM nodes_vec)"
                )[0][0]
                == 0
            ),
            timeout=COLD_START_S * 2,
            what="every live chunk and note embedded",
        )
        f.celsius = f.rows(
            "SELECT id FROM nodes WHERE json_extract(metadata, '$.symbol') = 'to_celsius' AND status = 'live'"
        )[0][0]
        yield f
    finally:
        if walker is not None:
            reap(walker)
        f.close()


def _first_id(text: str) -> str | None:
    m = re.search(r"^([0-9A-HJKMNP-TV-Z]{26}) ", text, re.MULTILINE)
    return m.group(1) if m else None


def test_a_paraphrase_is_found_by_semantic_search_where_keyword_search_finds_nothing(store):
    keyword = store.ok("recall", {"query": PARAPHRASE, "mode": "keyword"})
    assert ids_in(keyword) == set()
    semantic = store.ok("recall", {"query": PARAPHRASE, "mode": "semantic"})
    assert "(semantic)" in semantic and _first_id(semantic) == store.celsius
    hybrid = store.ok("recall", {"query": PARAPHRASE})
    assert "(hybrid)" in hybrid and "degraded" not in hybrid and _first_id(hybrid) == store.celsius


def test_hybrid_lists_only_hits_with_evidence_of_their_own_not_every_node_knn_reaches(store):
    # The store is small: KNN reaches every node, so without a per-hit floor
    # the unrelated helpers and notes would fill the list behind the answer.
    hybrid = store.ok("recall", {"query": PARAPHRASE})
    assert ids_in(hybrid) == {store.celsius}
    # Control: a query with words in several nodes still lists each of them.
    both = store.ok("recall", {"query": QUERY, "filters": {"kind": "note"}})
    assert ids_in(both) == {store.notes["both"], store.notes["words"], store.notes["meaning"]}


def test_hybrid_ranks_a_node_matching_both_ways_above_nodes_matching_one_way(store):
    from memtree.recall.embeddings import load_provider

    conn = store_db.open_read(store.paths.db)
    try:
        provider = load_provider(store.config)  # the function the walker answers EmbedQuery with
        emb = {"model": provider.name, "dim": provider.dim, "vector": provider.embed([QUERY])[0]}
        notes = {"kind": ["note"]}
        kw = [r[0]["id"] for r in search.keyword_candidates(conn, QUERY, notes)]
        sem = [n["id"] for n, _ in search.semantic_candidates(conn, emb, notes)]
    finally:
        conn.close()
    both, words, meaning = store.notes["both"], store.notes["words"], store.notes["meaning"]
    names = {v: k for k, v in store.notes.items()}
    # Preconditions, from the real retrievers: the words-only node wins the
    # keyword list, the meaning-only node is not in it, and by meaning the
    # words-only node comes last.
    assert kw[0] == words and both in kw and meaning not in kw, [names.get(i) for i in kw]
    assert sem.index(both) < sem.index(meaning) < sem.index(words), [names.get(i) for i in sem]
    text = store.ok("recall", {"query": QUERY, "filters": {"kind": "note"}})
    assert "(hybrid)" in text
    order = [i for i in re.findall(r"^([0-9A-HJKMNP-TV-Z]{26}) ", text, re.MULTILINE)]
    assert order[0] == both and {words, meaning} <= set(order[1:]), [names.get(i) for i in order]


def test_a_query_embedded_by_another_model_refuses_semantic_and_degrades_hybrid_naming_both(store):
    from memtree.errors import MemtreeError

    other = {"model": "ollama:other-embedder", "dim": 3, "vector": [1.0, 0.0, 0.0]}
    conn = store_db.open_read(store.paths.db)
    try:
        with pytest.raises(MemtreeError) as e:
            search.run(conn, QUERY, "semantic", {}, 10, query_vector=other)
        assert "ollama:other-embedder" in e.value.message and "wordllama" in e.value.message
        out = search.run(conn, QUERY, "hybrid", {"kind": ["note"]}, 10, query_vector=other)
        assert out.mode == "keyword" and "ollama:other-embedder" in out.degraded
        assert store.notes["both"] in [c.node["id"] for c in out.hits]  # control: keyword still answers
    finally:
        conn.close()


def test_a_query_vector_that_is_not_unit_length_degrades_hybrid_and_refuses_semantic_saying_why(store):
    from memtree.recall.embeddings import load_provider

    provider = load_provider(store.config)
    good = provider.embed([QUERY])[0]
    conn = store_db.open_read(store.paths.db)
    try:
        for bad in (good * 0.0, good * 3.0):
            emb = {"model": provider.name, "dim": provider.dim, "vector": bad.tolist()}
            with pytest.raises(BadRequest, match="not a unit vector"):
                search.run(conn, QUERY, "semantic", {}, 10, query_vector=emb)
            out = search.run(conn, QUERY, "hybrid", {"kind": ["note"]}, 10, query_vector=emb)
            assert out.mode == "keyword" and "not a unit vector" in out.degraded
        ok = search.run(
            conn,
            QUERY,
            "hybrid",
            {"kind": ["note"]},
            10,  # control: the same vector, normalised
            query_vector={"model": provider.name, "dim": provider.dim, "vector": good.tolist()},
        )
        assert (ok.mode, ok.degraded) == ("hybrid", None)
    finally:
        conn.close()


def test_keyword_sql_on_pool_threads_and_connections_answers_as_it_does_inline(store):
    import threading

    from memtree.recall.embeddings import load_provider

    provider = load_provider(store.config)
    conns, asked_from, asked = {}, set(), []

    def thread_db():  # as the front's services: a read connection per thread
        me = threading.get_ident()
        asked_from.add(me)
        asked.append(me)
        if me not in conns:
            conns[me] = store_db.open_read(store.paths.db)
        return conns[me]

    conn = thread_db()
    asked_from.clear()
    try:
        compared = {"hybrid": 0, "keyword": 0}
        for query in (QUERY, PARAPHRASE, "to_celsius", "median of the sorted values"):
            emb = {"model": provider.name, "dim": provider.dim, "vector": provider.embed([query])[0]}
            for mode in ("hybrid", "keyword"):
                inline = search.run(conn, query, mode, {}, 10, query_vector=emb)
                asked.clear()
                beside = search.run(conn, query, mode, {}, 10, query_vector=emb, thread_db=thread_db)
                assert (beside.mode, beside.degraded, beside.weak) == (inline.mode, inline.degraded, inline.weak)
                assert [(c.node["id"], c.score, c.coverage) for c in beside.hits] == [
                    (c.node["id"], c.score, c.coverage) for c in inline.hits
                ]
                compared[mode] += bool(inline.hits)
                # One job for the prose arm (hybrid); a queried symbol's definitions are looked up inline.
                assert len(asked) == (mode == "hybrid"), (mode, query)
        assert compared["hybrid"] == 4 and compared["keyword"] >= 2, compared  # control: hits to compare
        assert search._defined_names("to_celsius") == ["to_celsius"]  # control: one query names a symbol
        # The jobs asked for a connection from other threads, never this one.
        assert asked_from and threading.get_ident() not in asked_from
    finally:
        for c in conns.values():
            c.close()
