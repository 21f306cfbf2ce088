"""The gate engine's fast paths (memtree/gate/engine.py) give the answers of the plain forms they replace.

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

from memtree.gate import engine as e
from memtree.gate import replace as rp
from memtree.gate.rules import BASE64, KEY_LINE, NAMED, RULES, named_pair_trigger
from tests.support import leak_variants
from tests.support.gate_corpus import soup
from tests.support.leaky_cases import case_strings
from tests.support.leaky_more_cases import tokens


def _texts() -> list[str]:
    variants = [c["text"] for c in leak_variants.cases()] + leak_variants.BENIGN  # the v8 syntaxes among them
    return case_strings("/project") + soup(6000, 11) + variants


TEXTS = _texts()
# The token formats with no prefix and redis's directives (gate v7), each in a few lines of
# text: the fixture holds one of each.
PREFIXLESS = [
    f"{i}: using {t} for {k}\nnext line {i}.{k}.done"
    for i in range(5)
    for k, t in tokens().items()
    if k in ("telegram", "discord", "terraform")
] + [f"port 700{i}\nrequirepass pw{i}x\n--masterauth 'p {i}'" for i in range(5)]
PREFIXLESS += [c["text"] for c in leak_variants.url_token_cases()] + leak_variants.URL_TOKEN_BENIGN


def test_the_corpus_reaches_every_fast_path():  # positive control for the checks below
    tags = {t for text in TEXTS for t in e.redact_text(text)[1]}
    assert {
        "aws_access_key_id",
        "github_token",
        "basic_auth",
        "cli_secret",
        "key_material",
        "base64_secret",
        "secret_value",
    } <= tags


def test_hints_found_are_exactly_the_hints_present():
    for text in TEXTS:
        low = text.lower()
        plain = {h for h in e.HINTS if h in low} | {c for c in e.CASED if re.search(c, text)}
        assert e.hints_in(low, text) == plain, text


def test_hint_groups_find_each_hint_alone_and_among_others():
    # The guards' claims: "_", "." and "=" are no hints and no hint holds two of them.
    assert not set(e._GATES) & set(e.HINTS)
    assert not [h for h in e.HINTS if sum(g in h for g in e._GATES) > 1]
    assert sorted(h for _, group in e._GROUPS for h, _ in group) == sorted(e.HINTS)
    rng = random.Random(5)
    for h in e.HINTS:
        for text in (h, f"x {h} y", f"{h}{rng.choice(e.HINTS)}", " ".join(rng.sample(e.HINTS, 6)) + h):
            plain = {g for g in e.HINTS if g in text} | {c for c in e.CASED if re.search(c, text)}
            assert e.hints_in(text, text) == plain, text


def test_rules_run_are_the_rules_with_a_present_hint():
    rng = random.Random(7)
    every = sorted({h for r in RULES for h in r.hints})
    for n in (0, 1, 2, 5, 20):
        present = set(rng.sample(every, n))
        assert e.rules_for(present) == [r for r in RULES if not present.isdisjoint(r.hints)]


def test_cased_hints_cover_every_match_of_their_rule():
    cased = [(rule.pattern, rule.cased.source) for rule in RULES if rule.cased]
    assert len(cased) == 3 and all(rule.hints == {rule.cased.source} for rule in RULES if rule.cased)
    hits = 0
    for text in TEXTS + PREFIXLESS:
        for lazy, pattern in cased:
            if lazy.rx().search(text):
                hits += 1
                assert re.search(pattern, text), text
    assert hits > 20


def test_named_pair_trigger_answers_as_its_one_regex():
    plain = re.compile(r"(?:" + NAMED[3:-1] + r"|_key)[\"']\s*,\s*[\"']")
    found = 0
    for text in TEXTS:
        low = text.lower()
        expect = plain.search(low) is not None
        found += expect
        assert named_pair_trigger(low) == expect, text
    assert found > 50


OPS_RULES = [rule for rule in RULES if rule.ops]


def _plain_on_lines(text: str, rule, repl) -> str:
    rx, lines = rule.pattern.rx(), text.split("\n")
    for i, line in enumerate(lines):
        if any(o in line for o in rule.ops) and any(h in line.lower() for h in rule.hints):
            lines[i] = rx.sub(repl, line)
    return "\n".join(lines)


def test_the_rules_tried_on_their_ops_lines_are_all_checked():
    assert len(OPS_RULES) == 11


@pytest.mark.parametrize("rule", OPS_RULES, ids=[f"{i}-{rule.tag}" for i, rule in enumerate(OPS_RULES)])
def test_lines_found_by_find_are_the_lines_a_loop_visits(rule):
    changed = 0
    for text in TEXTS + [c["text"] for c in leak_variants.cases()]:
        fast = e.on_lines(text, rule.pattern, rp.value(rule, set()), rule.ops, rule.hints)
        assert fast == _plain_on_lines(text, rule, rp.value(rule, set())), text
        changed += fast != text
    assert changed > 5


LINE_RULES = [rule for rule in RULES if rule.lines is not None]


@pytest.mark.parametrize("rule", LINE_RULES, ids=[f"{i}-{r.tag}" for i, r in enumerate(LINE_RULES)])
def test_rules_tried_on_their_trigger_lines_match_a_sub_over_the_whole_text(rule):
    """A rule with ``lines`` is tried only on the lines holding its trigger: every
    match must hold it, on one line (the generated variants reach the newer ones)."""
    azure = [f"AZURE_CLIENT_SECRET: Ab{i}8Q~{'x7Yz' * 8}{i}\nnext line" for i in range(5)]  # none in the fixture
    texts = TEXTS + [c["text"] for c in leak_variants.cases(per=1)] + leak_variants.BENIGN + azure + PREFIXLESS
    hits = 0
    for text in texts:
        expect = rule.pattern.rx().sub(lambda m: "<" + m.group(0)[::-1] + ">", text)
        assert e.on_hit_lines(rule.pattern, rule.lines, text, lambda m: "<" + m.group(0)[::-1] + ">") == expect, text
        hits += expect != text
    assert hits > 3


@pytest.mark.parametrize("lazy", [KEY_LINE, BASE64], ids=["key_line", "base64"])
def test_base64_rules_on_run_lines_match_a_sub_over_the_whole_text(lazy):
    hits = 0
    for text in TEXTS:
        seen = []

        def repl(m):
            seen.append(m.group(0))
            return "<" + m.group(0)[::-1] + ">"

        expect = lazy.rx().sub(lambda m: "<" + m.group(0)[::-1] + ">", text)
        assert e.on_run_lines(lazy, text, repl) == expect, text
        hits += bool(seen)
    assert hits > 20


BACK_RULES = [rule for rule in RULES if rule.back]


def test_the_rules_found_one_character_back_are_all_checked():
    assert [rule.tag for rule in BACK_RULES] == ["basic_auth", "cli_secret", "cli_secret", "cli_secret"]


@pytest.mark.parametrize("rule", BACK_RULES, ids=[f"{i}-{rule.tag}" for i, rule in enumerate(BACK_RULES)])
def test_rules_found_one_character_back_match_a_plain_sub(rule):
    rx, hits = rule.pattern.rx(), 0
    for text in TEXTS + [c["text"] for c in leak_variants.cases()]:
        expect = rx.sub(lambda m: "<>", text)
        assert e.sub_from(rule.pattern, rule.starts, text, e.folded(text), lambda m: "<>", rule.back) == expect, text
        hits += expect != text
    assert hits > 10


WORD_RULES = [rule for rule in RULES if rule.lits]
IDS = [f"{i}-{rule.tag}" for i, rule in enumerate(WORD_RULES)]


def test_the_word_rules_with_literal_starts_are_all_checked():
    assert len(WORD_RULES) == 12


@pytest.mark.parametrize("rule", WORD_RULES, ids=IDS)
def test_every_alternative_of_a_word_rule_begins_with_one_of_its_literals(rule):
    from re import _parser

    words, lits = rule.starts.source, rule.lits
    parsed = _parser.parse(words)
    op, arg = parsed[0]
    alternatives = arg[1] if str(op) == "BRANCH" else [parsed]  # one literal start: a single alternative
    for alt in alternatives:
        lead = ""
        for o, v in alt:
            if str(o) != "LITERAL":
                break
            lead += chr(v)
        assert any(lead.startswith(w) for w in lits), (rule, lead)
    assert len(alternatives) >= len(lits)


@pytest.mark.parametrize("rule", WORD_RULES, ids=IDS)
def test_literal_finder_finds_what_the_regex_search_finds(rule):
    rx, lits, found = rule.starts.rx(), rule.lits, 0
    for text in TEXTS:
        low = text.lower()
        fast, pos = e.literal_finder(rx, lits, low), 0
        while True:
            m = rx.search(low, pos)
            expect = -1 if m is None else m.start()
            assert fast(pos) == expect, (text, pos)
            if expect < 0:
                break
            found += 1
            pos = expect + 1 + (pos % 3)  # callers skip ahead by varying amounts, never back
    assert found > 50
