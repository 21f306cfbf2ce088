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


def test_the_adaptation_is_small_package_data():
    import os

    assert os.path.getsize(embeddings.ADAPTATION) < 400_000
    with np.load(embeddings.ADAPTATION, allow_pickle=False) as art:
        assert set(art.files) <= {"token_weight", "map"} and "token_weight" in art.files
        rows = StaticProvider(adapt=False).table.shape[0]
        assert art["token_weight"].shape == (rows,) and np.isfinite(art["token_weight"]).all()
