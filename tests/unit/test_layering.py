"""The import rules of docs/ARCHITECTURE.md, checked on the source: no cycles
between folders, the layers only import downwards, SQL only under
memtree/store/, and the capture hook's whole import closure is the standard
library plus its own capture modules."""

from __future__ import annotations

import ast
import os
import sys

from tests.support import REPO

REPO = REPO
# Top-level folders installed under the memtree namespace (pyproject.toml).
FOLDERS = {
    "memtree": "memtree",
    "actors": "memtree.actors",
    "supervisor": "memtree.supervisor",
    "hooks": "memtree.hooks",
    "config": "memtree.config",
}
SQL_WORDS = ("SELECT ", "INSERT INTO", "UPDATE nodes", "DELETE FROM", "PRAGMA ", "CREATE TABLE")


def _modules() -> dict[str, str]:
    out = {}
    for folder, pkg in FOLDERS.items():
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, folder)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in filenames:
                if f.endswith(".py") and f != "__main__.py":  # entry scripts, not imported
                    rel = os.path.relpath(os.path.join(dirpath, f), os.path.join(REPO, folder))[:-3].split(os.sep)
                    rel = rel[:-1] if rel[-1] == "__init__" else rel
                    out[".".join([pkg, *rel])] = os.path.join(dirpath, f)
    return out


MODULES = _modules()


def _imports(path: str, name: str) -> set[str]:
    """Every module ``path`` imports, at top level or inside a function."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    pkg = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in MODULES)
    return out


IMPORTS = {m: _imports(p, m) for m, p in MODULES.items()}


def _unit(mod: str) -> str:
    """The folder (or top-level module) a module belongs to: memtree.capture, memtree.paths, memtree.actors ..."""
    parts = mod.split(".")
    if len(parts) > 3 and parts[1:3] == ["store", "write"]:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def _ours(mod: str) -> bool:
    return mod == "memtree" or mod.startswith("memtree.")


def test_the_import_graph_is_read_from_every_module():
    assert len(MODULES) > 80 and "memtree.capture.ingest" in IMPORTS["memtree.actors.writer"]  # positive control


def test_no_import_cycle_between_folders():
    graph: dict[str, set[str]] = {}
    for mod, deps in IMPORTS.items():
        for dep in deps:
            if _ours(dep) and dep in MODULES and _unit(dep) != _unit(mod):
                graph.setdefault(_unit(mod), set()).add(_unit(dep))
    seen, stack, cycles = set(), [], []

    def visit(u: str) -> None:
        if u in stack:
            cycles.append(stack[stack.index(u) :] + [u])
            return
        if u in seen:
            return
        seen.add(u)
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            visit(v)
        stack.pop()

    for u in sorted(graph):
        visit(u)
    assert len(graph) >= 12  # positive control: the graph has its folders
    assert cycles == []


def _importers_of(prefix: str) -> set[str]:
    return {m for m, deps in IMPORTS.items() if any(d == prefix or d.startswith(prefix + ".") for d in deps)}


def test_library_modules_never_import_an_actor_or_the_supervisor():
    lib = {m for m in MODULES if not m.startswith(("memtree.actors", "memtree.supervisor", "memtree.hooks"))}
    # memtree.cli is the command line: `memtree serve` starts the supervisor.
    offenders = {m for m in lib & (_importers_of("memtree.actors") | _importers_of("memtree.supervisor"))}
    assert offenders == {"memtree.cli"}


def test_only_the_writer_imports_the_write_side_of_the_store():
    outside = {m for m in _importers_of("memtree.store.write") if not m.startswith("memtree.store.write")}
    assert outside == {"memtree.actors.writer"}


def test_sql_lives_only_under_memtree_store():
    found = set()
    for mod, path in MODULES.items():
        if mod.startswith("memtree.store"):
            continue
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and any(w in node.value for w in SQL_WORDS)
                and not node.value.lstrip().startswith(("\n", "``"))
            ):
                found.add(mod)
    control = any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "SELECT " in n.value
        for n in ast.walk(ast.parse(open(MODULES["memtree.store.reads"]).read()))
    )
    assert control  # the scan sees SQL where it is
    assert found == set()


def _closure(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        mod = todo.pop()
        if mod in seen:
            continue
        seen.add(mod)
        todo += [d for d in IMPORTS.get(mod, ()) if d in MODULES or not _ours(d)]
        if "." in mod and mod.rpartition(".")[0] in MODULES:
            todo.append(mod.rpartition(".")[0])  # importing a submodule runs its package first
    return seen


# What the capture hook may load: its own capture modules, the gate that
# redacts what it spools, and the stdlib-only helpers they share (config: the
# defaults on every run, the loader's validation once per config change).
HOOK_MAY_IMPORT = (
    "memtree.capture",
    "memtree.gate",
    "memtree.text",
    "memtree.hooks.post_tool_use",
    "memtree.config",
    "memtree.store.uris",
    "memtree.store.kinds",
    "memtree.tokens",
    "memtree.paths",
    "memtree.protocol",
    "memtree.errors",
)
PACKAGES = ("memtree", "memtree.store", "memtree.config", "memtree.hooks")  # their __init__ only


def test_the_capture_hook_imports_only_the_standard_library_and_its_capture_modules():
    closure = _closure("memtree.hooks.post_tool_use")
    third_party = {m.split(".")[0] for m in closure if not _ours(m)} - set(sys.stdlib_module_names) - {"__future__"}
    # _sha2: the stdlib's own sha256 module on Python 3.12+ (memtree.paths tries it, then hashlib);
    # orjson: memtree.protocol binds it on first decode when importable, else json (never on the ack path).
    assert third_party - {"_sha2", "orjson"} == set()
    ours = {m for m in closure if _ours(m) and m not in PACKAGES}
    assert "memtree.capture.zmtp" in ours and "memtree.capture.ingest" in ours  # positive control
    assert sorted(m for m in ours if not m.startswith(HOOK_MAY_IMPORT)) == []
    # Negative control: the session-start hook reads the store through recall, which the capture hook must not.
    assert any(m.startswith("memtree.recall") for m in _closure("memtree.hooks.session_start"))
