"""memtree.text.budget: the one place budgets are checked and enforced."""

from __future__ import annotations

import pytest

from memtree import tokens
from memtree.errors import BadRequest
from memtree.text import budget

TEXTS = [
    "",
    "short",
    "one line that is rather long " * 200,  # a single long line
    "\n".join(f"line {i}: " + "x" * (i % 37) for i in range(2000)),
    "ünïcödé ✓ 漢字 " * 300,
    '{"json": [1, 2, 3]}\n' * 500,
]
BUDGETS = [1, 2, 5, 20, 37, 100, 1000, 20000]


@pytest.mark.parametrize("budget_tokens", BUDGETS)
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_enforced_text_never_exceeds_the_budget(text, budget_tokens):
    out = budget.enforce(text, budget_tokens)
    assert tokens.count(out) <= budget_tokens


def test_text_within_budget_comes_back_unchanged():
    text = "a\nb\nc"
    assert budget.enforce(text, 100) == text


def test_a_cut_says_so_in_its_last_line_and_keeps_whole_lines():
    text = "\n".join(f"line number {i}" for i in range(1000))
    out = budget.enforce(text, 200)
    *kept, last = out.split("\n")
    assert last.startswith("[memtree: cut to fit budget_tokens=200")
    assert f"of {tokens.count(text)} tokens shown" in last
    assert kept and all(line in text.split("\n") for line in kept)
    assert kept == text.split("\n")[: len(kept)]


def test_one_long_line_is_cut_to_a_prefix_with_the_notice():
    text = "y" * 10000
    out = budget.enforce(text, 100)
    head, last = out.rsplit("\n", 1)
    assert head and set(head) == {"y"} and last.startswith("[memtree: cut")


@pytest.mark.parametrize("value,expected", [(None, budget.DEFAULT_BUDGET), (1, 1), (20000, 20000)])
def test_valid_budgets(value, expected):
    assert budget.check(value) == expected


@pytest.mark.parametrize("value", [0, -5, 20001, True, 2.5, "100"])
def test_invalid_budgets_are_clear_errors_naming_the_argument(value):
    with pytest.raises(BadRequest) as e:
        budget.check(value)
    assert "budget_tokens" in e.value.message and "\n" not in e.value.message


def test_a_cut_answer_names_the_exact_call_for_all_of_it():
    text = "\n".join(f"row {i} " + "x" * 40 for i in range(400))
    total = tokens.count(text)
    out = budget.enforce(text, 300, 'recall(ids=["01ABC"], budget_tokens={budget})')
    assert tokens.count(out) <= 300
    assert out.splitlines()[-1].endswith(f'all of it: recall(ids=["01ABC"], budget_tokens={total})]'), out
    huge = "y" * (budget.MAX_BUDGET * 4)
    last = budget.enforce(huge, 300, 'recall(ids=["01ABC"], budget_tokens={budget})').splitlines()[-1]
    assert "over the 20000-token cap" in last and "budget_tokens=" not in last.split("shown;")[1]
