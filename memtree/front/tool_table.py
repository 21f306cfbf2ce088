"""The MCP tool table: each tool's schema (a typed stub the SDK reads), its
description, annotations, and where its implementation lives.

The stubs are never called: ``mcp_front`` validates arguments against their
annotations here (one-line errors naming the argument) and then calls the
implementation ``async def tool(svc, **args) -> str`` in ``module``. Kept
free of zmq/apsw imports: the front loads this before answering initialize.
"""

from __future__ import annotations

import inspect
import os
import types
import typing

from memtree.errors import BadRequest
from memtree.front.opts import OPTS


class Spec:
    """``public`` names the arguments the schema shows; the rest are folded
    into one optional ``opts`` string (``opts`` maps its keys to them), so
    a rarely-set argument costs its key in the description, not a property."""

    def __init__(self, stub, module: str, description: str, read_only: bool = True, destructive: bool = False,
                 open_world: bool = False, func: str | None = None, public: tuple = (), opts: dict | None = None,
                 types_: dict | None = None, served_by: str | None = None):
        self.stub, self.module, self.description = stub, module, description
        # A tool served by name but never listed (old scripts, SDK clients):
        # available exactly when the listed tool that took it over is.
        self.served_by = served_by
        self.name = stub.__name__
        self.func = func or self.name
        self.annotations = {"read_only_hint": read_only, "destructive_hint": destructive,
                            "open_world_hint": open_world}
        self.signature = inspect.signature(stub)
        self.hints = typing.get_type_hints(stub)
        self.public = public or tuple(self.signature.parameters)
        self.opts = opts or {}
        self.types = types_ or {}  # a simpler JSON type shown for a public argument that accepts more


# -- schemas (never called) -------------------------------------------------------
# Every definition is paid for on every request the agent sends (measured by
# eval/claude_code_surface.py): one
# line saying when to use the tool, only the arguments most calls set, the
# rest in ``opts`` (memtree/front/opts.py). A description names the opts keys
# an agent sets unprompted; ``budget=`` is named by every answer it cuts.
# The stubs keep every argument: the front accepts them by name too.

async def read(path: str, lines: str | int | None = None, symbol: str | None = None,
               with_ids: bool | None = None, budget_tokens: int | None = None) -> str: ...
async def grep(pattern: str, path: str | None = None, glob: str | None = None, case: str | bool | None = None,
               context: int | str | None = None, budget_tokens: int | None = None) -> str: ...
async def bash(command: str, timeout_s: float | None = None, budget_tokens: int | None = None) -> str: ...
async def recall(query: str | None = None, ids: list[str] | str | None = None, note: str | None = None,
                 op: str | None = None, mode: str | None = None, limit: int | None = None, filters: dict | None = None,
                 depth: int | None = None, format: str | None = None, budget_tokens: int | None = None) -> str: ...
async def note(text: str, parent_id: str | None = None) -> str: ...
async def forget(node_id: str, reason: str) -> str: ...


_R = "memtree.recall.retrieval"
TOOLS: dict[str, Spec] = {s.name: s for s in (
    Spec(read, "memtree.tools.read", 'For big files: outline, then lines "A-B" or a symbol. opts: ids',
         public=("path", "lines"), opts=OPTS["read"], types_={"lines": "string"}),
    Spec(grep, "memtree.tools.grep", "Ripgrep for many hits, kept. opts: glob= context=N|symbol",
         public=("pattern", "path"), opts=OPTS["grep"]),
    Spec(bash, "memtree.tools.bash", "Commands with long output: preview, all kept. opts: timeout=",
         read_only=False, destructive=True, open_world=True,
         public=("command",), opts=OPTS["bash"]),
    # Also writes (note) and erases (op=forget): not read-only, destructive.
    Spec(recall, _R,
         "Before re-reading: query searches what was kept, ids shows; note= keeps a finding. "
         "opts: op=forget|files limit=",
         read_only=False, destructive=True,
         public=("query", "ids", "note"), types_={"ids": "string"}, opts=OPTS["recall"]),
    Spec(note, _R, "Keep a note for later sessions. opts: parent_id=", read_only=False,
         public=("text",), opts=OPTS["note"], served_by="recall"),
    Spec(forget, _R, "Erase a node for good; reason is audited.", read_only=False, destructive=True,
         served_by="recall"),
)}

# What tools/list shows (and `memtree serve --tools` chooses from), in order.
LISTED = tuple(n for n, s in TOOLS.items() if s.served_by is None)
ENV_TOOLS = "MEMTREE_TOOLS"  # the front's tools, as `memtree serve --tools` set them


def parse_tools(text: str | None) -> tuple[str, ...]:
    """``"read,recall"`` -> the listed tools to serve (None: all); an unknown
    name, or none at all, is a one-line error naming what was wrong."""
    if text is None:
        return LISTED
    names = text.replace(",", " ").split()
    if not names:
        raise BadRequest(f"--tools names no tool; memtree's tools are {', '.join(LISTED)}")
    unknown = [n for n in names if n not in LISTED]
    if unknown:
        raise BadRequest(f"unknown tool {unknown[0]!r} in --tools; memtree's tools are {', '.join(LISTED)}")
    return tuple(n for n in LISTED if n in names)


def served(listed: tuple[str, ...]) -> tuple[str, ...]:
    """Every tool a call may name: the listed ones and the hidden ones they took over."""
    return tuple(n for n, s in TOOLS.items() if n in listed or s.served_by in listed)


_JSON = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def _schema_of(hint) -> dict:
    opts = _options(hint)
    if len(opts) > 1:
        parts = [_schema_of(h) for h in opts]
        if all(set(p) <= {"type", "items"} for p in parts):  # e.g. list[str] | str: one "type" list
            merged = {"type": [p["type"] for p in parts]}
            for p in parts:
                merged.update({k: v for k, v in p.items() if k != "type"})
            return merged
        return {"anyOf": parts}
    (h,) = opts
    if typing.get_origin(h) is list:
        (item,) = typing.get_args(h) or (str,)
        return {"type": "array", "items": _schema_of(item)}
    return {"type": _JSON[h]}


def input_schema(spec: Spec) -> dict:
    """The JSON schema Claude Code sees: the public arguments' types, the
    required names, and ``opts`` when the tool has folded arguments (its keys
    are listed in the description, once)."""
    props = {}
    for name in spec.public:
        props[name] = {"type": spec.types[name]} if name in spec.types else _schema_of(spec.hints[name])
    if spec.opts:
        props["opts"] = {"type": "string"}
    # No "required" list: it is paid on every request, the names say it, and
    # check_args answers a missing one in one line.
    return {"type": "object", "properties": props}


def available(spec: Spec) -> bool:
    """Wrapped tools register only once their module exists in the tree
    (checked by file, so the front imports none of them before initialize)."""
    import memtree

    parts = spec.module.split(".")
    return any(os.path.exists(os.path.join(d, *parts[1:-1], parts[-1] + ".py")) for d in memtree.__path__)


def _json_type(value) -> str:
    for t, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                    (list, "a list"), (dict, "an object")):
        if isinstance(value, t):
            return name
    return "null" if value is None else type(value).__name__


def _options(hint) -> list:
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
    for h in _options(hint):
        parts.append("a list of strings" if typing.get_origin(h) is list else names.get(h, str(h)))
    return " or ".join(parts)


def _coerce(spec: Spec, key: str, target: str, raw: str):
    """One opts value as its argument's type; filters stay strings (lists split on commas)."""
    if target.startswith("filters."):
        return raw.split(",") if target[8:] in ("kind", "status", "edge_kinds") and "," in raw else raw
    opts = _options(spec.hints[target])
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
        if not any(_matches(value, h) for h in _options(hint)):
            raise BadRequest(f"argument {name!r} must be {_describe(hint)}, got {_json_type(value)}")
        out[name] = value
    return out
