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

BUDGET = "budget_tokens: answer size cap in tokens (default 2000, max 20000)."


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

async def note(text: str, parent_id: str | None = None) -> str: ...
async def get(node_id: str, budget_tokens: int | None = None, status: list[str] | None = None) -> str: ...
async def recent(since: str | int | None = None, kind: str | list[str] | None = None, limit: int | None = None,
                 status: list[str] | None = None, budget_tokens: int | None = None) -> str: ...
async def search(query: str, mode: str | None = None, limit: int | None = None, filters: dict | None = None,
                 budget_tokens: int | None = None) -> str: ...
async def neighbors(node_id: str, depth: int | None = None, edge_kinds: list[str] | None = None,
                    budget_tokens: int | None = None) -> str: ...
async def path_to_root(node_id: str, budget_tokens: int | None = None) -> str: ...
async def compose(node_ids: list[str], budget_tokens: int, format: str = "mixed", query: str | None = None,
                  depth: int = 2) -> str: ...
async def forget(node_id: str, reason: str) -> str: ...
async def read(path: str, lines: str | int | None = None, symbol: str | None = None,
               budget_tokens: int | None = None) -> str: ...
async def grep(pattern: str, path: str | None = None, glob: str | None = None, case: str | bool | None = None,
               context: int | None = None, budget_tokens: int | None = None) -> str: ...
async def bash(command: str, timeout_s: float | None = None, budget_tokens: int | None = None) -> str: ...


_R = "memtree.retrieval"
TOOLS: dict[str, Spec] = {s.name: s for s in (
    Spec(read, "memtree.tools.read",
         "Read a file (path relative to the project root) as a budget-bounded slice: an outline with "
         "line ranges, or lines=\"START-END\" / symbol=\"name\". Chunks are stored; the answer lists node ids. "
         + BUDGET),
    Spec(grep, "memtree.tools.grep",
         "Ripgrep the project for a regex; stores all hits, returns a bounded preview with node ids. "
         "path/glob narrow it, case is smart|sensitive|insensitive, context is lines around each hit. " + BUDGET),
    Spec(bash, "memtree.tools.bash",
         "Run a shell command in the project root; stores stdout/stderr/exit code and returns a bounded "
         "preview plus the node id. timeout_s caps the run. " + BUDGET,
         read_only=False, destructive=True, open_world=True),
    Spec(search, _R,
         "Search memtree's stored notes, file chunks and tool outputs by keywords (BM25). Live nodes only "
         "unless filters.status names others. mode: keyword (semantic/hybrid not available yet). limit 1-100. "
         "filters: status, kind, since, until (epoch ms, '2h', or ISO time), parent_id, session_id. " + BUDGET),
    Spec(get, _R, "Show one stored node in full by id (live only unless status names others). " + BUDGET),
    Spec(recent, _R,
         "List the newest stored nodes. since: epoch ms, '30m'/'2h'/'7d' or ISO time; kind: node kind(s); "
         "limit 1-100 (default 20); status: list nodes in these statuses instead of live. " + BUDGET),
    Spec(neighbors, _R,
         "Nodes linked to a node: parent, children and edges (supersedes, derived_from, references, "
         "summarizes, follows), to depth 1-5 (default 1). edge_kinds narrows them. Live nodes only. " + BUDGET),
    Spec(path_to_root, _R, "The chain from a node up to its root (session or file), root last. " + BUDGET),
    Spec(compose, "memtree.compose",
         "Recall a few nodes and their surroundings (parent, children, edges to depth, default 2) packed "
         "into exactly budget_tokens: whole nodes where they fit, else summaries or one-line outlines, plus "
         "a manifest of what was included, summarised, truncated, outlined or dropped. format: "
         "mixed|raw|outline; query ranks what is kept."),
    Spec(note, _R,
         "Store a note (a finding, decision or observation) for later recall; optional parent_id hangs it "
         "under a node. Returns the new id (pending until the filter makes it live).",
         read_only=False),
    Spec(forget, _R,
         "Forget a node: its content is erased, it leaves every index, and the same content is never "
         "captured again. reason is kept in the audit log.",
         read_only=False, destructive=True),
)}


_JSON = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def _schema_of(hint) -> dict:
    opts = _options(hint)
    if len(opts) > 1:
        parts = [_schema_of(h) for h in opts]
        if all(list(p) == ["type"] for p in parts):
            return {"type": [p["type"] for p in parts]}
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
        if name in spec.arg_notes:
            prop["description"] = spec.arg_notes[name]
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
