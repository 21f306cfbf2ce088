"""The arguments each MCP tool folds into its one optional ``opts`` string,
and the checks every call's arguments pass (``check_args``).

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

import inspect
import json
import types
import typing

from memtree.errors import BadRequest

if typing.TYPE_CHECKING:
    from memtree.front.tool_table import Spec
from memtree.store.kinds import NEIGHBOR_FILTER_KEYS

OPTS: dict[str, dict[str, str]] = {
    "read": {"ids": "with_ids", "budget": "budget_tokens", "symbol": "symbol"},
    "grep": {"glob": "glob", "case": "case", "context": "context", "budget": "budget_tokens"},
    "bash": {"timeout": "timeout_s", "budget": "budget_tokens"},
    "recall": {
        "op": "op",
        "limit": "limit",
        "budget": "budget_tokens",
        "mode": "mode",
        "depth": "depth",
        "format": "format",
        **{k: "filters." + k for k in NEIGHBOR_FILTER_KEYS},
    },
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


def _json_type(value) -> str:
    for t, name in (
        (bool, "a boolean"),
        (int, "an integer"),
        (float, "a number"),
        (str, "a string"),
        (list, "a list"),
        (dict, "an object"),
    ):
        if isinstance(value, t):
            return name
    return "null" if value is None else type(value).__name__


def hint_options(hint) -> list:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [a for a in typing.get_args(hint) if a is not type(None)]
    return [hint]


def _matches(value, hint) -> bool:
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint) or (object,)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if hint is object:
        return True
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, origin or hint)


def _describe(hint) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", dict: "an object"}
    parts = []
    for h in hint_options(hint):
        parts.append("a list of strings" if typing.get_origin(h) is list else names.get(h, str(h)))
    return " or ".join(parts)


def _coerce(spec: Spec, key: str, target: str, raw: str):
    """One opts value as its argument's type; filters stay strings (lists split on commas)."""
    if target.startswith("filters."):
        return raw.split(",") if target[8:] in ("kind", "status", "edge_kinds") and "," in raw else raw
    opts = hint_options(spec.hints[target])
    if raw == "" and bool in opts:
        return True
    for t in (bool, int, float):
        if t not in opts:
            continue
        if t is bool and raw.lower() in ("true", "false", "yes", "no", "1", "0"):
            return raw.lower() in ("true", "yes", "1")
        if t is not bool:
            try:
                return t(raw)
            except ValueError:
                pass
    if str in opts and raw:
        return raw
    raise BadRequest(f"opts {key}= must be {_describe(spec.hints[target])}, got {raw!r}")


def parse_opts(spec: Spec, opts) -> dict:
    """``"key=value key"`` -> the arguments they stand for; a bare key means true."""
    if not isinstance(opts, str):
        raise BadRequest(f"argument 'opts' must be a string like \"{' '.join(k + '=' for k in spec.opts)}\"")
    out: dict = {}
    for word in opts.replace(";", " ").split():
        key, _, raw = word.partition("=")
        target = spec.opts.get(key)
        if target is None:
            raise BadRequest(f"unknown opts key {key!r}; {spec.name} takes {', '.join(spec.opts) or 'none'}")
        value = _coerce(spec, key, target, raw)
        if target.startswith("filters."):
            out.setdefault("filters", {})[target[8:]] = value
        else:
            out[target] = value
    return out


def check_args(spec: Spec, arguments) -> dict:
    """Arguments checked against the stub's annotations; BadRequest names the
    first bad one. Unknown arguments are errors, not silently ignored. The
    folded arguments are accepted by name too (scripts and older callers)."""
    if not isinstance(arguments, dict):
        raise BadRequest("arguments must be an object")
    params = spec.signature.parameters
    arguments = dict(arguments)
    if spec.opts and "opts" in arguments:
        opts = arguments.pop("opts")
        for name, value in (parse_opts(spec, opts) if opts is not None else {}).items():
            if name == "filters" and isinstance(arguments.get("filters"), dict):
                value = {**arguments["filters"], **value}
            elif arguments.get(name) is not None:
                raise BadRequest(f"{name} is given twice (as an argument and in opts)")
            arguments[name] = value
    unknown = [k for k in arguments if k not in params]
    if unknown:
        shown = list(spec.public) + (["opts"] if spec.opts else [])
        raise BadRequest(f"unknown argument {unknown[0]!r}; expected {', '.join(shown)}")
    out = {}
    for name, p in params.items():
        value = arguments.get(name)
        if value is None:
            if p.default is inspect.Parameter.empty:
                raise BadRequest(f"missing required argument {name!r}")
            continue
        hint = spec.hints[name]
        if not any(_matches(value, h) for h in hint_options(hint)):
            raise BadRequest(f"argument {name!r} must be {_describe(hint)}, got {_json_type(value)}")
        out[name] = value
    return out
