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
import typing

from memtree.errors import BadRequest, ConfigError
from memtree.front.opts import OPTS, hint_options


class Spec:
    """``public`` names the arguments the schema shows; the rest are folded
    into one optional ``opts`` string (``opts`` maps its keys to them), so
    a rarely-set argument costs its key in the description, not a property."""

    def __init__(
        self,
        stub,
        module: str,
        description: str,
        read_only: bool = True,
        destructive: bool = False,
        open_world: bool = False,
        func: str | None = None,
        public: tuple = (),
        opts: dict | None = None,
        types_: dict | None = None,
        served_by: str | None = None,
    ):
        self.stub, self.module, self.description = stub, module, description
        # A tool served by name but never listed (old scripts, SDK clients):
        # available exactly when the listed tool that took it over is.
        self.served_by = served_by
        self.name = stub.__name__
        self.func = func or self.name
        self.annotations = {"read_only_hint": read_only, "destructive_hint": destructive, "open_world_hint": open_world}
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


async def read(
    path: str,
    lines: str | int | None = None,
    symbol: str | None = None,
    with_ids: bool | None = None,
    budget_tokens: int | None = None,
) -> str: ...
async def grep(
    pattern: str,
    path: str | None = None,
    glob: str | None = None,
    case: str | bool | None = None,
    context: int | str | None = None,
    budget_tokens: int | None = None,
) -> str: ...
async def bash(command: str, timeout_s: float | None = None, budget_tokens: int | None = None) -> str: ...
async def recall(
    query: str | None = None,
    ids: list[str] | str | None = None,
    note: str | None = None,
    op: str | None = None,
    mode: str | None = None,
    limit: int | None = None,
    filters: dict | None = None,
    depth: int | None = None,
    format: str | None = None,
    budget_tokens: int | None = None,
) -> str: ...
async def note(text: str, parent_id: str | None = None) -> str: ...
async def forget(node_id: str, reason: str) -> str: ...


_R = "memtree.recall.retrieval"
TOOLS: dict[str, Spec] = {
    s.name: s
    for s in (
        Spec(
            read,
            "memtree.tools.read",
            'For big files: outline, then lines "A-B" or a symbol. opts: ids',
            public=("path", "lines"),
            opts=OPTS["read"],
            types_={"lines": "string"},
        ),
        Spec(
            grep,
            "memtree.tools.grep",
            "Ripgrep for many hits, kept. opts: glob= context=N|symbol",
            public=("pattern", "path"),
            opts=OPTS["grep"],
        ),
        Spec(
            bash,
            "memtree.tools.bash",
            "Commands with long output: preview, all kept. opts: timeout=",
            read_only=False,
            destructive=True,
            open_world=True,
            public=("command",),
            opts=OPTS["bash"],
        ),
        # Also writes (note) and erases (op=forget): not read-only, destructive.
        Spec(
            recall,
            _R,
            "Before re-reading: query searches what was kept, ids shows; note= keeps a finding. "
            "opts: op=forget|files limit=",
            read_only=False,
            destructive=True,
            public=("query", "ids", "note"),
            types_={"ids": "string"},
            opts=OPTS["recall"],
        ),
        Spec(
            note,
            _R,
            "Keep a note for later sessions. opts: parent_id=",
            read_only=False,
            public=("text",),
            opts=OPTS["note"],
            served_by="recall",
        ),
        Spec(
            forget,
            _R,
            "Erase a node for good; reason is audited.",
            read_only=False,
            destructive=True,
            served_by="recall",
        ),
    )
}

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
    opts = hint_options(hint)
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


def missing_modules() -> list[str]:
    """``"<tool>: <module>"`` for each tool whose module is not in the tree (a
    broken install, or a move that missed a module string). Checked by file,
    so the front imports none of them before initialize."""
    import memtree

    out = []
    for spec in TOOLS.values():
        parts = spec.module.split(".")
        if not any(os.path.exists(os.path.join(d, *parts[1:-1], parts[-1] + ".py")) for d in memtree.__path__):
            out.append(f"{spec.name}: {spec.module}")
    return out


def check_modules() -> None:
    """A missing tool module is a startup error naming it, never a tool quietly left out of tools/list."""
    missing = missing_modules()
    if missing:
        raise ConfigError(f"tool module not found ({'; '.join(missing)}): memtree is not installed whole")
