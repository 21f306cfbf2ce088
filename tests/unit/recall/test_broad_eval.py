"""The broad recall eval's CI subset (eval/broad_eval.py --small): four
pinned packages ingested through a real writer and embedded by the real embed
walker, every hand-written query of theirs and every second generated one,
run in every mode, a tenth of them also through the recall tool itself. Each
figure must stay within its tolerance of the committed baseline
(eval/broad_baseline.json, made from main's ranking; rewritten only in the
commit that changes the ranking, with its figures)."""

from __future__ import annotations

import ast
import copy
import os
import re

import pytest

from memtree.eval import broad_corpus, broad_eval, broad_gen


@pytest.mark.timeout(900)
def test_the_subset_holds_the_committed_baseline_in_every_mode_and_kind():
    out = broad_eval.evaluate(small=True)
    entry = broad_eval.load_baseline().get("small", {}).get(out["provider"])
    assert entry, f"no committed small-set baseline for embedding provider {out['provider']!r}"
    problems = broad_eval.regressions(out["summary"], entry["summary"])
    assert problems == [], "\n".join(problems)
    # The figures are the recall tool's: its answers (real Services, query embeddings from the
    # running embed walker, the front's budget) name the same hits in the same order.
    assert set(out["tool"]) == {"keyword", "hybrid"}
    for mode, t in out["tool"].items():
        assert t["n"] >= 25 and (t["same_ids"], t["same_emptied"], t["degraded"]) == (t["n"], t["n"], 0), (mode, t)
    # Every kind ran in the gated modes, with the query counts the baseline was made with.
    for mode in ("keyword", "hybrid"):
        assert {k: v["n"] for k, v in out["summary"][mode].items()} == {
            k: v["n"] for k, v in entry["summary"][mode].items()
        }


def test_the_gate_names_a_drop_beyond_tolerance_and_passes_one_within():
    base = {
        "hybrid": {
            "symbol": {"ndcg": 0.9, "recall": 0.9, "mrr": 0.8, "emptied": 0.02, "n": 40},
            "answerable": {"ndcg": 0.7, "recall": 0.7, "mrr": 0.6, "emptied": 0.05, "n": 200},
            "none": {"abstained": 0.5, "flagged": 0.6, "n": 50},
        }
    }
    within = copy.deepcopy(base)
    within["hybrid"]["symbol"]["ndcg"] -= broad_eval.KIND_TOL * 0.9
    within["hybrid"]["answerable"]["emptied"] += broad_eval.ALL_TOL * 0.9
    assert broad_eval.regressions(within, base) == []
    worse = copy.deepcopy(base)
    worse["hybrid"]["symbol"]["mrr"] -= broad_eval.KIND_TOL * 1.5
    worse["hybrid"]["answerable"]["emptied"] += broad_eval.ALL_TOL * 1.5
    worse["hybrid"]["none"]["flagged"] -= broad_eval.NONE_TOL * 1.5
    got = broad_eval.regressions(worse, base)
    assert [g.split(":")[0] for g in got] == ["hybrid/symbol", "hybrid/answerable", "hybrid/none"], got


def _definition_at(text: str, start: int):
    """(The copy's definition may end earlier: a docstring closing a body leaves blank lines.)"""
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and min([node.lineno] + [d.lineno for d in node.decorator_list]) == start
        ):
            return node
    raise AssertionError(f"no definition starting at line {start}")


@pytest.mark.timeout(600)  # a fresh machine downloads the four sdists first
def test_docstring_queries_are_absent_from_the_stripped_copy_and_present_in_the_original():
    root = broad_corpus.fetch(only=broad_eval.SMALL_PACKAGES)
    queries = [q for q in broad_eval.all_queries(root, small=True) if q["kind"] == "docstring"]
    assert len(queries) >= 40
    texts: dict[str, tuple[str, str]] = {}
    for q in queries:
        for rel, start, _end in q["gold"]:
            if rel not in texts:
                original = open(os.path.join(root, rel), encoding="utf-8").read()
                texts[rel] = original, broad_corpus.strip_docstrings(original)
            original, stripped = texts[rel]
            assert len(stripped.splitlines()) == len(original.splitlines()), rel  # the gold lines hold in the copy
            before = ast.get_docstring(_definition_at(original, start))
            assert broad_gen.first_sentence(before) == q["query"], (q["query"], rel, start)
            assert ast.get_docstring(_definition_at(stripped, start)) is None, (q["query"], rel, start)


def _name_parts(symbol: str) -> set[str]:
    return {
        p.lower()
        for w in re.findall(r"[A-Za-z0-9]+", symbol)
        for p in re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+", w)
    }


def test_paraphrases_are_10_to_30_words_and_share_no_word_with_their_gold_names():
    from memtree.eval.broad_queries import HAND

    glue = {"and", "for", "from", "the", "with", "into", "that", "this"}  # too common to give a name away
    paraphrases = [(q, gold) for kind, q, gold in HAND if kind == "paraphrase"]
    assert len(paraphrases) >= 100
    shared = {}
    for q, gold in paraphrases:
        assert 10 <= len(q.split()) <= 30, q
        names = set().union(*(_name_parts(g.rpartition(":")[2]) for g in gold))
        common = {w for w in re.findall(r"[a-z0-9]+", q.lower()) if len(w) >= 3} & names - glue
        if common:
            shared[q] = sorted(common)
    assert shared == {}
    # Control: the check sees a name's parts in a query that uses them.
    assert {"progress", "bar"} <= _name_parts("ProgressBar.set_bar_width")
