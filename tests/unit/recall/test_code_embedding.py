"""The bundled embedding adapted to code (issue 16 point 3): identifiers split
into the words a question uses, keywords and punctuation gone, the same
preparation on chunks and queries; the learned adaptation loads from the
package, keeps every vector unit length, and goes under its own model name."""

from __future__ import annotations

import numpy as np
import pytest

from memtree.recall import code_text, embeddings
from memtree.recall.embeddings import StaticProvider, check_unit


def test_identifiers_split_into_words_and_python_boilerplate_is_dropped():
    assert code_text.words("def list_directory(self, path):") == ["list", "directory", "path"]
    assert code_text.words("class HTTPServerError(BaseHTTPRequestHandler):") == [
        "http",
        "server",
        "error",
        "base",
        "http",
        "request",
        "handler",
    ]
    assert code_text.words("os.path.getmtime; parseURL2 -> x") == ["os", "path", "getmtime", "parse", "url", "2"]
    # A question keeps its content words (positive control: "return" is dropped, "oldest" is not).
    assert code_text.prepare("Return the oldest entry in the cache") == "the oldest entry the cache"
    assert code_text.prepare("(self): return None") == ""


def test_the_adapted_table_gives_unit_vectors_under_its_own_name_and_the_raw_table_another():
    adapted, raw = StaticProvider(), StaticProvider(adapt=False)
    assert (adapted.name, adapted.dim) == (embeddings.LOCAL_MODEL, 256)
    assert raw.name == embeddings.RAW_MODEL != adapted.name  # vectors of one are refused as mixed with the other
    texts = ["def evict_oldest(self):\n    self._cache.popitem(last=False)", "drop the least recently used entry", ""]
    vecs = adapted.embed(texts)
    check_unit(vecs, "adapted")
    assert np.allclose(np.linalg.norm(vecs[:2], axis=1), 1.0, atol=1e-3) and not vecs[2].any()
    # Nothing but boilerplate keeps its raw tokens: still a unit vector, not a zero one (no cosine).
    check_unit(adapted.embed(["(self): pass", "..."]), "boilerplate", allow_zero=False)
    with pytest.raises(embeddings.ProviderUnavailable, match="norm 0"):
        check_unit(adapted.embed([""]), "query", allow_zero=False)
    assert not np.allclose(adapted.embed(texts[:1]), raw.embed(texts[:1]), atol=1e-3)


# code2 ships the rows its training moved (~11k of 32k) as int8 with a scale each, ~2.7 MB:
# a full float16 delta table would be 16 MB, a rank-32 SVD ~0.7 MB lost a third of the
# DEV gain (eval/train_code_embed.py). The cap sits just above what ships.
MAX_ADAPTATION_BYTES = 2_900_000


def test_the_adaptation_is_small_package_data():
    import os

    assert os.path.getsize(embeddings.ADAPTATION) < MAX_ADAPTATION_BYTES
    rows, dim = StaticProvider(adapt=False).table.shape
    with np.load(embeddings.ADAPTATION, allow_pickle=False) as art:
        assert set(art.files) == {"token_weight", "delta_rows", "delta_q", "delta_scale"}
        moved = art["delta_rows"].shape[0]
        assert art["token_weight"].shape == (rows,) and 0 < moved < rows
        assert art["delta_q"].shape == (moved, dim) and art["delta_q"].dtype == np.int8
        assert len(set(art["delta_rows"].tolist())) == moved and art["delta_rows"].max() < rows
        assert all(np.isfinite(art[k]).all() for k in ("token_weight", "delta_scale"))


def test_the_adapted_table_is_row_plus_delta_times_weight_and_a_misfit_is_refused_naming_the_sizes():
    table = np.ones((10, 4), np.float16)
    art = {
        "token_weight": np.full(10, 2, np.float16),
        "delta_rows": np.array([3, 7], np.uint16),
        "delta_q": np.full((2, 4), 4, np.int8),
        "delta_scale": np.full(2, 0.5, np.float16),
    }
    want = np.full((10, 4), 2.0, np.float32)
    want[[3, 7]] = (1 + 4 * 0.5) * 2
    assert np.array_equal(embeddings.adapted_table(table, art), want)
    assert (table == 1).all()  # the table it was given is left as it was
    with pytest.raises(embeddings.ProviderUnavailable, match=r"delta_q \(2, 5\).*table of shape \(10, 4\)"):
        embeddings.adapted_table(table, {**art, "delta_q": np.ones((2, 5), np.int8)})
    with pytest.raises(embeddings.ProviderUnavailable, match=r"token_weight \(9,\)"):
        embeddings.adapted_table(table, {**art, "token_weight": np.ones(9, np.float16)})
    with pytest.raises(embeddings.ProviderUnavailable, match="delta_rows"):
        embeddings.adapted_table(table, {**art, "delta_rows": np.array([3, 10], np.uint16)})  # row 10 of 10
    with pytest.raises(embeddings.ProviderUnavailable, match="delta_q"):
        embeddings.adapted_table(table, {k: v for k, v in art.items() if k != "delta_scale"})
