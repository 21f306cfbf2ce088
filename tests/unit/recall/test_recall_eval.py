"""The recall eval's CI subset (eval/recall_eval.py --small): hybrid search
must not drop more than 0.02 below the committed baseline (per metric, all
answerable queries), nor abstain on fewer no-answer queries. The corpus is
fetched from PyPI at pinned versions and ingested through a real writer."""

from __future__ import annotations

import pytest

from memtree.eval import recall_eval

TOLERANCE = 0.02


@pytest.mark.timeout(600)
def test_hybrid_stays_within_002_of_the_committed_baseline_on_the_small_set():
    out = recall_eval.evaluate(small=True)
    base = recall_eval.load_baseline().get("small", {}).get(out["provider"])
    assert base, f"no committed small-set baseline for embedding provider {out['provider']!r}"
    now, then = out["summary"]["hybrid"], base["hybrid"]
    for metric in ("ndcg", "recall", "mrr"):
        assert now["all"][metric] >= then["all"][metric] - TOLERANCE, (metric, now["all"], then["all"])
    assert now["abstain"]["no_answer"] >= then["abstain"]["no_answer"] - TOLERANCE, (now["abstain"], then["abstain"])
    # Control: the plain BM25 baseline computed in the same run is below hybrid on this set.
    assert out["summary"]["bm25"]["all"]["ndcg"] < now["all"]["ndcg"]
