"""The arguments each MCP tool folds into its one optional ``opts`` string.

Every schema property is paid for on every request the agent sends, so the
rarely-set arguments travel as ``opts="key=value key"`` instead (a bare key
means true). This table is the one place that maps an opts key to the
argument it stands for; ``filters.X`` is a key of recall's filters object.
The front parses opts with it, and every "the exact call that gets the rest"
an answer names is written with it (``call_repr``), so the agent is only ever
told calls the schema shows. Stdlib only: the front loads it before
answering initialize.
"""

from __future__ import annotations

import json

from memtree.store.kinds import NEIGHBOR_FILTER_KEYS

OPTS: dict[str, dict[str, str]] = {
    "read": {"ids": "with_ids", "budget": "budget_tokens", "symbol": "symbol"},
    "grep": {"glob": "glob", "case": "case", "context": "context", "budget": "budget_tokens"},
    "bash": {"timeout": "timeout_s", "budget": "budget_tokens"},
    "recall": {"op": "op", "limit": "limit", "budget": "budget_tokens", "mode": "mode", "depth": "depth",
               "format": "format", **{k: "filters." + k for k in NEIGHBOR_FILTER_KEYS}},
    "note": {"parent_id": "parent_id"},
    "forget": {},
}


def _word(key: str, value) -> str:
    if value is True:
        return key
    if isinstance(value, list):
        value = ",".join(str(v) for v in value)
    return f"{key}={'true' if value is True else 'false' if value is False else value}"


def call_repr(tool: str, **args) -> str:
    """An exact call the agent can copy, e.g. ``read(path="x.py", lines="1-9", opts="budget=2000")``."""
    back = {target: key for key, target in OPTS.get(tool, {}).items()}
    parts, folded = [], []
    for k, v in args.items():
        if v is None:
            continue
        if k == "filters" and isinstance(v, dict) and tool == "recall":
            folded += [_word(fk, fv) for fk, fv in v.items() if fv is not None]
        elif k in back and not (tool == "read" and k == "symbol"):
            folded.append(_word(back[k], v))
        else:
            parts.append(f"{k}={json.dumps(v)}")
    if folded:
        parts.append(f"opts={json.dumps(' '.join(folded))}")
    return f"{tool}({', '.join(parts)})"
