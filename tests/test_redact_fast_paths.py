"""memtree.redact's fast paths give the answers of the plain forms they replace.

Redaction runs before the writer acks a capture, so it avoids work: hints are
scanned once (and not at all when a part of them is absent), some hints are
one case-sensitive search, lines are found by str.find or a byte translation,
two rules search for a literal and step back one character. Each fast path is
checked here against its plain form (``h in low``, ``rx.search``, ``rx.sub``
over the whole text, a loop over every line) on the leaky fixture and on
seeded random text built from the tokens the rules look for.
"""

from __future__ import annotations

import random
import re

import pytest

from memtree import redact as r
from tests.leaky_cases import load_cases

TOKENS = [" ", "\n", "\t", "\u2003", "-u", "-U", "--user", "-a", "--auth", "--password", "--PASSWORD", "--token",
          "--api-key", "x", "user:pw123", ":", "'", '"', "=", "-", "--", "abc", "s3cr3tVal", "[REDACTED:x]", "-au",
          "ab:cd", "\u0130", "K\u212a", "password=", "token: ", "AKIA", "ASIA", "akia", "ghp_", "GHP_", "github_pat_",
          "QUJDREVGR0hJSktMTU5PUA==", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7",
          "ABCDEFGHIJKLMNOP", "mysql -p", "'DB_PASSWORD'", "'x'", ", ", "','", '"api_key"', "||", "??", " or ",
          "${ADMIN_PASSWORD:=", "}", "env.DB_SECRET", "'val123'", "salt", "_key'", "session_key", "Passphrase",
          "Secret", "api_key", "API-KEY", "apikey", "client_secret", "refresh_token", "_authToken", "SharedAccessKey",
          "AccountKey", "signature", "sig", "cookie", "nonce_key", "logged_in_key", "master-key", "key_data",
          "credentials", "pwd", "signing_key", "encryption-key", "private key", "access_token", " is ", ": ", " = "]


def _texts() -> list[str]:
    out = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for case in load_cases("/project"):
        walk(case)
    rng = random.Random(11)
    out += ["".join(rng.choice(TOKENS) for _ in range(rng.randrange(1, 16))) for _ in range(6000)]
    return out


TEXTS = _texts()
FALLBACK_OPS = ("||", "??", " or ", "${")


def test_the_corpus_reaches_every_fast_path():  # positive control for the checks below
    tags = {t for text in TEXTS for t in r.redact_text(text)[1]}
    assert {"aws_access_key_id", "github_token", "basic_auth", "cli_secret", "key_material", "base64_secret",
            "secret_value"} <= tags


def test_hints_found_are_exactly_the_hints_present():
    for text in TEXTS:
        low = text.lower()
        plain = {h for h in r._HINTS if h in low} | {c for c in r._CASED if re.search(c, text)}
        assert r._hints_in(low, text) == plain, text


def test_cased_hints_cover_every_match_of_their_rule():
    cased = [(rule[0], next(iter(rule[3]))) for rule in r._RULES if next(iter(rule[3])) in r._CASED]
    assert len(cased) == 2
    hits = 0
    for text in TEXTS:
        for spec, pattern in cased:
            if r._compiled(spec).search(text):
                hits += 1
                assert re.search(pattern, text), text
    assert hits > 20


def test_named_pair_trigger_answers_as_its_one_regex():
    plain = re.compile(r"(?:" + r._NAMED[3:-1] + r"|_key)[\"']\s*,\s*[\"']")
    found = 0
    for text in TEXTS:
        low = text.lower()
        expect = plain.search(low) is not None
        found += expect
        assert r._named_pair_trigger(low) == expect, text
    assert found > 50


def _plain_on_lines(text: str, spec: list, repl, ops: tuple) -> str:
    rx, lines = r._compiled(spec), text.split("\n")
    for i, line in enumerate(lines):
        if any(o in line for o in ops) and any(h in line.lower() for h in r._NAMED_HINTS):
            lines[i] = rx.sub(repl, line)
    return "\n".join(lines)


def test_fallback_lines_found_by_find_are_the_lines_a_loop_visits():
    changed = 0
    for text in TEXTS:
        fast = r._on_lines(text, r._FALLBACK, r._value_repl(set()), FALLBACK_OPS)
        assert fast == _plain_on_lines(text, r._FALLBACK, r._value_repl(set()), FALLBACK_OPS), text
        changed += fast != text
    assert changed > 20


@pytest.mark.parametrize("name", ["_KEY_LINE", "_BASE64"])
def test_base64_rules_on_run_lines_match_a_sub_over_the_whole_text(name):
    spec = getattr(r, name)
    hits = 0
    for text in TEXTS:
        seen = []

        def repl(m):
            seen.append(m.group(0))
            return "<" + m.group(0)[::-1] + ">"

        expect = r._compiled(spec).sub(lambda m: "<" + m.group(0)[::-1] + ">", text)
        assert r._on_run_lines(spec, text, repl) == expect, text
        hits += bool(seen)
    assert hits > 20


@pytest.mark.parametrize("tag", ["basic_auth", "cli_secret"])
def test_rules_found_one_character_back_match_a_plain_sub(tag):
    rules = [rule for rule in r._RULES if rule[1] == tag and isinstance(rule[4], tuple) and rule[4][1]]
    assert len(rules) == 1
    spec, _tag, _group, _hints, (words, back) = rules[0]
    rx, hits = r._compiled(spec), 0
    for text in TEXTS:
        expect = rx.sub(lambda m: "<>", text)
        assert r._sub_from(spec, words, text, r._folded(text), lambda m: "<>", back) == expect, text
        hits += expect != text
    assert hits > 20


STARTS = ["_STRONG_STARTS", "_WEAK_STARTS", "_NEAR_STARTS", "_KEYED_STARTS"]


@pytest.mark.parametrize("name", STARTS)
def test_every_alternative_of_a_word_rule_begins_with_one_of_its_literals(name):
    from re import _parser

    words, lits = getattr(r, name)
    op, (_, alternatives) = _parser.parse(words)[0]
    assert str(op) == "BRANCH"
    for alt in alternatives:
        lead = ""
        for o, v in alt:
            if str(o) != "LITERAL":
                break
            lead += chr(v)
        assert any(lead.startswith(w) for w in lits), (name, lead)
    assert len(alternatives) >= len(lits)


@pytest.mark.parametrize("name", STARTS)
def test_literal_finder_finds_what_the_regex_search_finds(name):
    words, lits = getattr(r, name)
    rx, found = re.compile(words), 0
    for text in TEXTS:
        low = text.lower()
        fast, pos = r._literal_finder(rx, lits, low), 0
        while True:
            m = rx.search(low, pos)
            expect = -1 if m is None else m.start()
            assert fast(pos) == expect, (text, pos)
            if expect < 0:
                break
            found += 1
            pos = expect + 1 + (pos % 3)  # callers skip ahead by varying amounts, never back
    assert found > 100
