"""Every SQL read of nodes / nodes_fts / edges goes through the live predicate.

A read site is a function whose SQL text selects from (or joins) one of those
tables. It passes when the same function calls ``status_clause`` (store/live.py)
or when it is on the allow-list below, each entry with the reason it may see
every status.
"""

from __future__ import annotations

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ("memtree", "actors", "supervisor")
READ = re.compile(r"\bSELECT\b[\s\S]*?\b(?:FROM|JOIN)\s+(?:nodes|nodes_fts|edges)\b", re.IGNORECASE)

# "path::function": why this read may ignore the live predicate.
ALLOW: dict[str, str] = {
    # "memtree/x.py::function": "why it may see every status",
    "memtree/store/reads.py::doc_counts": "document frequencies for IDF weights: counts only, no node or content",
    "memtree/store/vector_index.py::_load": "the first-pass cache holds every status as data (filtered per query"
                                            " as the SQL filters; vectors.knn reranks under the live predicate)",
    "memtree/store/vector_index.py::_sync": "the same cache's changes since its position, every status as data",
}


def _sql_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                       for v in node.values)
    return None


def _called(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
    return names


def _predicate_helpers(tree: ast.AST) -> set[str]:
    """status_clause plus this module's functions that call it (one level:
    e.g. reads._filters_sql builds the WHERE for search and recent)."""
    helpers = {"status_clause"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "status_clause" in _called(node):
            helpers.add(node.name)
    return helpers


def read_sites(source: str, rel: str, shared: frozenset = frozenset()) -> dict[str, bool]:
    """``path::function`` -> uses status_clause, for each function reading nodes/fts/edges.
    ``shared``: predicate helpers of other modules (reads._filters_sql, imported by vectors.knn)."""
    tree = ast.parse(source)
    helpers = _predicate_helpers(tree) | shared
    sites: dict[str, bool] = {}

    def visit(node, fn, name):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn, name = node, f"{name}.{node.name}" if name else node.name
        if not isinstance(node, ast.Constant) or not isinstance(getattr(node, "_parent", None), ast.JoinedStr):
            text = _sql_text(node)
            if text and READ.search(text):
                key = f"{rel}::{name or '<module>'}"
                sites[key] = sites.get(key, True) and fn is not None and bool(_called(fn) & helpers)
        for child in ast.iter_child_nodes(node):
            child._parent = node
            visit(child, fn, name)

    visit(tree, None, "")
    return sites


def _sources() -> dict[str, str]:
    out = {}
    for top in SCANNED:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith(".py"):
                    path = os.path.join(dirpath, f)
                    with open(path, encoding="utf-8") as fh:
                        out[os.path.relpath(path, ROOT)] = fh.read()
    return out


def all_sites() -> dict[str, bool]:
    sources = _sources()
    # store/reads.py's predicate helpers (e.g. _filters_sql) count where another module imports them.
    shared = frozenset(_predicate_helpers(ast.parse(sources["memtree/store/reads.py"]))) - {"status_clause"}
    out = {}
    for rel, src in sources.items():
        out.update(read_sites(src, rel, shared))
    return out


def test_every_read_of_nodes_uses_the_live_predicate_or_is_allow_listed():
    bad = sorted(k for k, ok in all_sites().items() if not ok and k not in ALLOW)
    assert not bad, "SQL reads without status_clause (use store/live.py or allow-list with a reason):\n" + "\n".join(bad)


def test_allow_list_has_no_dead_entries():
    sites = all_sites()
    dead = sorted(k for k in ALLOW if k not in sites or sites[k])
    assert not dead, f"allow-list entries that no longer read without the predicate: {dead}"


def test_the_scanner_sees_the_retrieval_reads():
    sites = all_sites()
    for fn in ("get_node", "search_fts", "edges_of", "recent"):
        assert sites.get(f"memtree/store/reads.py::{fn}") is True


def test_the_scanner_flags_a_read_without_the_predicate():
    src = (
        "def leaky(conn):\n"
        "    return conn.execute(f\"SELECT n.id FROM nodes n WHERE n.kind = {'?'}\")\n"
        "def fine(conn):\n"
        "    where, p = status_clause('n')\n"
        "    return conn.execute(f'SELECT e.src_id FROM edges e JOIN nodes n ON n.id = e.dst_id WHERE {where}', p)\n"
        "def unrelated(conn):\n"
        "    return conn.execute('SELECT name FROM sqlite_master')\n"
    )
    assert read_sites(src, "x.py") == {"x.py::leaky": False, "x.py::fine": True}
