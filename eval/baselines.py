"""The evals' baseline files: figures kept per subset and per embedding
provider, so a run is only compared with one made under the same conditions."""

from __future__ import annotations

import orjson


def load(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            return orjson.loads(f.read())
    except FileNotFoundError:
        return {}


def store(path: str, subset: str, provider: str, entry: dict) -> None:
    data = load(path)
    data.setdefault(subset, {})[provider] = entry
    with open(path, "wb") as f:  # sorted and indented: a baseline change reads well in a diff
        f.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
