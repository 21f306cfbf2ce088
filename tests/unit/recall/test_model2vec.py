"""A user's own static model in model2vec's folder format (issue 16 point 3):
loaded from the folder only, pooled as the bundled table is, refused with a
clear error when the folder disagrees with itself; vectors checked for unit
length where they are written and where a query is embedded."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import save_file
from tokenizers import Tokenizer, models, pre_tokenizers

from memtree.recall import embeddings
from memtree.recall.embeddings import Model2VecProvider, ProviderUnavailable, check_unit
from tests.support import test_config as make_config

VOCAB = ["[UNK]", "parse", "interval", "seconds", "cache", "evict", "oldest", "entry"]


def _folder(tmp_path, dim: int = 8, declared: int | None = None):
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(VOCAB)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    rng = np.random.default_rng(16)
    save_file(
        {"embeddings": rng.normal(size=(len(VOCAB), dim)).astype(np.float32)}, str(tmp_path / "model.safetensors")
    )
    if declared is not None:
        (tmp_path / "config.json").write_text(json.dumps({"hidden_dim": declared, "normalize": True}))
    return str(tmp_path)


def test_a_model2vec_folder_embeds_unit_vectors_that_put_related_texts_nearer(tmp_path):
    folder = _folder(tmp_path, dim=8, declared=8)
    cfg = make_config({"embeddingModel": f"model2vec:{folder}"})
    p = embeddings.load_provider(cfg)
    assert isinstance(p, Model2VecProvider) and (p.name, p.dim) == (f"model2vec:{folder}", 8)
    assert embeddings.model_name(cfg) == p.name  # what vectors are stored under, known without loading
    vecs = p.embed(["parse interval seconds", "parse the interval", "cache evict oldest entry"])
    assert vecs.shape == (3, 8) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]  # shared tokens pool nearer than none shared


def test_a_folder_that_disagrees_with_itself_or_lacks_a_file_is_refused_naming_what(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with pytest.raises(ProviderUnavailable, match="config.json says 384 dimensions but model.safetensors has 8"):
        Model2VecProvider(_folder(tmp_path / "a", dim=8, declared=384))
    with pytest.raises(ProviderUnavailable, match="no tokenizer.json there"):
        Model2VecProvider(str(tmp_path / "b"))
    assert Model2VecProvider(_folder(tmp_path / "b", dim=8)).dim == 8  # control: no config.json is fine


def test_vectors_that_are_not_unit_length_are_refused_at_write_and_query_time():
    good = np.eye(3, dtype=np.float32)
    assert check_unit(good, "m").shape == (3, 3)
    assert check_unit(np.zeros((1, 3)), "m").shape == (1, 3)  # a text with no known token
    with pytest.raises(ProviderUnavailable, match=r"m \(write\): vector 1 has norm 2, not 1"):
        check_unit(np.array([[1, 0, 0], [2, 0, 0]], dtype=np.float32), "m (write)")
    with pytest.raises(ProviderUnavailable, match="norm nan"):
        check_unit(np.array([[np.nan, 0, 0]], dtype=np.float32), "m")
