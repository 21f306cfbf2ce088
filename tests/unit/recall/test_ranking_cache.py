"""ranking's per-word term cache is bounded in bytes: only words of ordinary length are kept."""

from memtree.recall import ranking


def test_long_words_are_split_but_never_cached_and_short_ones_are():
    ranking._cached_terms.cache_clear()
    long_word = "retry" + "x" * 5000 + "Backoff"
    both = set(ranking.terms(f"{long_word} retry_backoff"))
    assert ranking._cached_terms.cache_info().currsize == 1  # retry_backoff; the 5,012-character word is not held
    assert both == set(ranking._split_terms(long_word)) | {"retry_backoff", "retr", "backoff"}
    assert ranking._word_terms(long_word) == ranking._split_terms(long_word)
    assert ranking._cached_terms.cache_info().currsize == 1
