from memtree import tokens


def test_count_is_conservative_for_ascii_and_non_ascii():
    assert tokens.count("") == 0
    assert tokens.count("a" * 35) == 10
    assert tokens.count("a" * 36) == 11
    assert tokens.count("日本語") == 3  # each non-ASCII character is a token
    assert tokens.count('{"a": 1}', is_json=True) == 4


def test_fit_returns_the_longest_prefix_within_budget():
    text = "word " * 1000
    for budget in (0, 1, 5, 20, 100, 1000, 5000):
        cut = tokens.fit(text, budget)
        assert tokens.count(cut) <= budget
        assert text.startswith(cut)
        if cut != text:  # one more character would not fit
            assert tokens.count(text[: len(cut) + 1]) > budget


def test_fit_lines_keeps_whole_lines():
    text = "".join(f"line {i}\n" for i in range(100))
    kept, n = tokens.fit_lines(text, 30)
    assert tokens.count(kept) <= 30 and kept == "".join(f"line {i}\n" for i in range(n)) and n > 0
