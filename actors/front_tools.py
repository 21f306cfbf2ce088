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

class Spec:
    def __init__(self, stub, module: str, description: str, read_only: bool = True, destructive: bool = False,
                 open_world: bool = False, func: str | None = None, arg_notes: dict | None = None):
        self.stub, self.module, self.description = stub, module, description
        self.arg_notes = arg_notes or {}
        self.name = stub.__name__
        self.func = func or self.name
        self.annotations = {"read_only_hint": read_only, "destructive_hint": destructive,
                            "open_world_hint": open_world}
        self.signature = inspect.signature(stub)
        self.hints = typing.get_type_hints(stub)


# -- schemas (never called) -------------------------------------------------------
# Every definition is paid for on every request the agent sends: one line
# saying when to use the tool, names that explain themselves, and notes only
# where a value's form is not obvious.

async def read(path: str, lines: str | int | None = None, symbol: str | None = None,
               with_ids: bool | None = None, budget_tokens: int | None = None) -> str: ...
async def grep(pattern: str, path: str | None = None, glob: str | None = None, case: str | bool | None = None,
               context: int | None = None, budget_tokens: int | None = None) -> str: ...
async def bash(command: str, timeout_s: float | None = None, budget_tokens: int | None = None) -> str: ...
async def recall(query: str | None = None, ids: list[str] | str | None = None, op: str | None = None,
                 mode: str | None = None, limit: int | None = None, filters: dict | None = None,
                 depth: int | None = None, format: str | None = None, budget_tokens: int | None = None) -> str: ...
async def note(text: str, parent_id: str | None = None) -> str: ...
async def forget(node_id: str, reason: str) -> str: ...


_R = "memtree.retrieval"
TOOLS: dict[str, Spec] = {s.name: s for s in (
    Spec(read, "memtree.tools.read",
         "Read a file like Read, keeping it for recall: lines or a Python symbol, else its outline and start.",
         arg_notes={"lines": '"START-END"', "symbol": '"name" or "Class.method"', "with_ids": "chunk node ids"}),
    Spec(grep, "memtree.tools.grep",
         "Ripgrep the project like Grep (path:line:text); every hit is kept for recall.",
         arg_notes={"case": "smart|sensitive|insensitive"}),
    Spec(bash, "memtree.tools.bash",
         "Run a shell command in the project root; a long output is cut to a preview, all of it kept for recall.",
         read_only=False, destructive=True, open_world=True),
    Spec(recall, _R,
         "Find what memtree kept (earlier reads, greps, commands, notes): query searches, ids shows nodes "
         "(several: composed to fit), neither lists recent.",
         arg_notes={"op": {"enum": ["search", "files", "get", "recent", "compose", "neighbors", "path"]},
                    "mode": "keyword|semantic|hybrid",
                    "filters": "status, kind, since ('2h'), until, parent_id, session_id, edge_kinds",
                    "format": "mixed|raw|outline"}),
    Spec(note, _R, "Keep a finding or decision for later recall, in this or a later session.", read_only=False),
    Spec(forget, _R, "Erase a kept node for good (never captured again); reason is audited.",
         read_only=False, destructive=True),
)}


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
    """The JSON schema Claude Code sees, derived from the stub: types, the
    required names, and a short note only where the spec gives one."""
    props, required = {}, []
    for name, p in spec.signature.parameters.items():
        prop = _schema_of(spec.hints[name])
        note = spec.arg_notes.get(name)
        if isinstance(note, dict):
            prop.update(note)
        elif note:
            prop["description"] = note
        props[name] = prop
        if p.default is inspect.Parameter.empty:
            required.append(name)
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


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


def check_args(spec: Spec, arguments) -> dict:
    """Arguments checked against the stub's annotations; BadRequest names the
    first bad one. Unknown arguments are errors, not silently ignored."""
    if not isinstance(arguments, dict):
        raise BadRequest("arguments must be an object")
    params = spec.signature.parameters
    unknown = [k for k in arguments if k not in params]
    if unknown:
        raise BadRequest(f"unknown argument {unknown[0]!r}; expected {', '.join(params)}")
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
