"""Keyword search input: never an FTS5 syntax error; filters validated with clear errors."""

from __future__ import annotations

import apsw
import pytest

from memtree.errors import BadRequest
from memtree.recall import search

NASTY = [
    '"',
    '""',
    "'",
    'a"b',
    "NEAR(",
    "foo AND",
    "OR",
    "NOT x",
    "col:val",
    "x*",
    "^start",
    "(a OR b",
    "a) OR (b",
    "{x}",
    "-minus",
    "+plus",
    "a:b:c",
    "\\",
    "名前 検索",
    "emoji 🎉 ok",
    "x" * 500,
    "AND OR NOT NEAR",
    "content:secret",
    "*",
    "a NEAR/3 b",
    '"unbalanced quote here',
]


@pytest.fixture(scope="module")
def fts():
    conn = apsw.Connection(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5(content, source_uri, tokenize='porter unicode61 remove_diacritics 2')"
    )
    conn.execute(
        "INSERT INTO t(content, source_uri) VALUES ('the minus sign and NEAR words, AND/OR', 'x'),"
        "('名前 検索 🎉', 'y'), ('plain text about col val', 'z')"
    )
    return conn


@pytest.mark.parametrize("query", NASTY)
def test_user_input_is_never_fts_syntax(fts, query):
    try:
        match = search.fts_query(query)
    except BadRequest as e:  # only for input with no searchable word at all
        assert not any(ch.isalnum() for ch in query) and "query" in e.message
        return
    list(fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (match,)))


def test_operators_in_the_query_are_searched_as_words(fts):
    rows = {r[0] for r in fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (search.fts_query("NEAR"),))}
    assert rows == {1}


@pytest.mark.parametrize("query", ["", "   ", "!!! ???", None, 5])
def test_empty_queries_are_clear_errors(query):
    with pytest.raises(BadRequest) as e:
        search.fts_query(query)
    assert "query" in e.value.message


@pytest.mark.parametrize(
    "filters,word",
    [
        ({"colour": "red"}, "colour"),
        ({"status": "bogus"}, "status"),
        ({"status": []}, "status"),
        ({"kind": "widget"}, "kind"),
        ({"since": "soonish"}, "since"),
        ({"until": -4}, "until"),
        ({"parent_id": 7}, "parent_id"),
        ({"session_id": ""}, "session_id"),
        ("live", "filters"),
    ],
)
def test_bad_filters_name_the_key(filters, word):
    with pytest.raises(BadRequest) as e:
        search.check_filters(filters)
    assert word in e.value.message and "\n" not in e.value.message


def test_filters_are_normalised():
    f = search.check_filters(
        {"status": "stale", "kind": ["note", "note"], "since": "2h", "until": 5, "parent_id": "P", "session_id": "S"}
    )
    assert f["status"] == ["stale"] and f["kind"] == ["note"] and f["until"] == 5
    assert isinstance(f["since"], int) and f["since"] > 0


def test_times_parse_durations_iso_and_epoch_ms():
    now = 10_000_000
    assert search.parse_time("30m", "since", now) == now - 30 * 60_000
    assert search.parse_time(1234, "since", now) == 1234
    assert search.parse_time("1970-01-01T00:00:01+00:00", "since", now) == 1000


def test_hybrid_is_the_default_mode_and_every_mode_is_accepted():
    assert search.check_mode(None) == "hybrid"
    assert [search.check_mode(m) for m in ("keyword", "semantic", "hybrid")] == ["keyword", "semantic", "hybrid"]


def test_unknown_mode_is_a_clear_error():
    with pytest.raises(BadRequest) as e:
        search.check_mode("fuzzy")
    assert "fuzzy" in e.value.message


@pytest.mark.parametrize(
    "query,content",
    [
        ("how does the scheduler decide when a job runs next", "the scheduler decide when a job runs next"),
        ("where is the cache eviction handled", "the cache eviction"),
        ("what happens when a signature is expired", "a signature is expired"),
        ("which function converts a timestamp to a datetime", "converts a timestamp to a datetime"),
        ("how does TTLCache work?", "TTLCache"),
        ("find the code that retries failed requests", "retries failed requests"),
        # short queries and identifiers are left alone; so is a query that is all scaffolding
        ("parse_interval", "parse_interval"),
        ("list directory", "list directory"),
        ("where is it", "where is it"),
    ],
)
def test_question_scaffolding_is_dropped_from_what_is_searched(query, content):
    from memtree.recall.ranking import content_query

    assert content_query(query) == content


def test_adjacent_words_are_also_searched_joined_so_a_camelcase_identifier_matches():
    from memtree.recall.search import _prose_words

    assert _prose_words("where is the directory listing done") == [
        "directory",
        "listing",
        "done",
        "directorylisting",
        "listingdone",
    ]
    assert _prose_words("get_in x") == ["get_in", "x"]  # an identifier is not joined with its neighbour
