"""Every SQL read of nodes / nodes_fts / edges goes through the live predicate,
and each read is pinned to the statuses it filters by.

A read site is a function whose SQL text selects from (or joins) one of those
tables. Each site's filters (the status sets its ``status_clause`` calls name,
store/live.py) must equal its entry in ``PINNED`` exactly, so a new read, a
widened read, or a predicate that filters nothing (a list of every status
instead of the ``ANY_STATUS`` marker, which needs a reason here) fails.
"""

from __future__ import annotations

import ast
import os
import re

from memtree.store import live
from tests.support import REPO

ROOT = REPO
SCANNED = ("memtree", "actors", "supervisor")
READ = re.compile(r"\bSELECT\b[\s\S]*?\b(?:FROM|JOIN)\s+(?:nodes|nodes_fts|edges)\b", re.IGNORECASE)

# "path::function": why this read may ignore the live predicate.
ALLOW: dict[str, str] = {
    "memtree/store/reads.py::_snippet": "the snippet of one rowid its caller (search_fts, snippets) read under the predicate",
    "memtree/store/reads.py::doc_counts": "document frequencies for IDF weights: counts only, no node or content",
    "memtree/store/defined.py::add_names": "the rows its callers select, under the predicate they pass",
    "memtree/store/vector_index.py::_load": "the first-pass cache holds every status as data (filtered per query"
    " as the SQL filters; vectors.knn reranks under the live predicate)",
    "memtree/store/vector_index.py::_sync": "the same cache's changes since its position, every status as data",
}

# "path::function" -> the filters it applies: named sets of store/live.py, CALLER (the caller
# names the statuses; none: live only) or ANY (every status, on purpose; the reason beside it).
_L, _P, _C, _I, _NF = (frozenset(getattr(live, n)) for n in ("LIVE", "PENDING", "CURRENT", "INDEXED", "NOT_FORGOTTEN"))
CALLER, ANY, UNNAMED = "caller", "ANY_STATUS", "unnamed"
PINNED: dict[str, set] = {
    "memtree/store/budget.py::bytes_per_content_byte": {ANY},
    "memtree/store/budget.py::captured_bytes": {ANY},
    "memtree/store/budget.py::children": {ANY},
    "memtree/store/budget.py::victims": {CALLER},
    "memtree/store/compactions.py::latest_summary": {_C},
    "memtree/store/compactions.py::touched": {_C},
    "memtree/store/integrity.py::check": {_I},
    "memtree/store/reads.py::ancestors": {ANY},
    "memtree/store/reads.py::child_ids": {CALLER},
    "memtree/store/reads.py::children": {CALLER},
    "memtree/store/reads.py::chunk_ids_by_start": {_L},
    "memtree/store/reads.py::doc_counts": set(),
    "memtree/store/reads.py::_snippet": set(),
    "memtree/store/reads.py::file_chunks": {CALLER},
    "memtree/store/reads.py::defining": {CALLER},
    "memtree/store/reads.py::edges_of": {CALLER},
    "memtree/store/reads.py::get_node": {CALLER},
    "memtree/store/reads.py::get_nodes": {CALLER},
    "memtree/store/reads.py::node_status": {ANY},
    "memtree/store/reads.py::parent_of": {CALLER},
    "memtree/store/reads.py::recent": {CALLER},
    "memtree/store/reads.py::search_fts": {CALLER},
    "memtree/store/reads.py::_top_rowids": {CALLER},
    "memtree/store/reads.py::snippets": {CALLER},
    "memtree/store/reads.py::summary_of": {_L},
    "memtree/store/recent_work.py::files": {_C},
    "memtree/store/recent_work.py::notes": {_C},
    "memtree/store/recent_work.py::tool_outputs": {_C},
    "memtree/store/recent_work.py::totals": {_C},
    "memtree/store/savings.py::captured_sessions": {ANY},
    "memtree/store/savings.py::_node": {_NF},
    "memtree/store/savings.py::stored_text": {CALLER, _L},
    "memtree/store/subtrees.py::api_summaries_since": {ANY},
    "memtree/store/sweeps.py::cleaned_before": {_NF},
    "memtree/store/sweeps.py::older_gate_count": {_NF},
    "memtree/store/sweeps.py::older_gate_rows": {_NF},
    "memtree/store/sweeps.py::due": {CALLER},
    "memtree/store/sweeps.py::live_chunks_after": {_L},
    "memtree/store/subtrees.py::children": {_L},
    "memtree/store/subtrees.py::oversized": {_L},
    "memtree/store/triage.py::live_owners": {_L},
    "memtree/store/triage.py::pending_batch": {_P},
    "memtree/store/triage.py::pending_count": {_P},
    "memtree/store/vectors.py::backlog": {_L},
    "memtree/store/vectors.py::backlog_count": {_L},
    "memtree/store/vectors.py::embedded_hashes": {_L},
    "memtree/store/vectors.py::embedded_since": {_L},
    "memtree/store/vectors.py::knn": {CALLER},
    "memtree/store/vectors.py::live_vectors": {_L},
    "memtree/store/vectors.py::newest": {_L},
    "memtree/store/vectors.py::unembedded": {_L},
    "memtree/store/vectors.py::other_model_nodes": {_I},
    "memtree/store/vector_index.py::_load": set(),
    "memtree/store/vector_index.py::_sync": set(),
    "memtree/store/vectors.py::_rerank": {CALLER},
    "memtree/store/watched.py::live_chunks": {_C},
    "memtree/store/watched.py::live_files": {_C},
    "memtree/store/write/captures.py::_children_of": {_C},
    "memtree/store/write/captures.py::_file_chunks": {CALLER},
    "memtree/store/write/captures.py::latest_file_capture": {frozenset(("pending", "live", "dropped"))},
    "memtree/store/write/captures.py::recent_output": {_C},
    "memtree/store/write/captures.py::shown_id": {_L},
    "memtree/store/write/forgetting.py::holding_lines": {_NF},
    "memtree/store/write/forgetting.py::same_hash": {_NF},
    "memtree/store/write/forgetting.py::subtree": {ANY},
    "memtree/store/write/forgetting.py::summaries_of": {_NF},
    "memtree/store/write/mutations.py::_content": {ANY},
    "memtree/store/write/mutations.py::_find_root": {_I},
    "memtree/store/write/mutations.py::_summaries_above": {ANY, CALLER},
    "memtree/store/write/mutations.py::node_row": {ANY},
    "memtree/store/schema.py::m007_fts_deferred": {_I},
    "memtree/store/write/fts.py::defer": {ANY},
    "memtree/store/write/fts.py::index_deferred": {_I},
    "memtree/store/defined.py::add_names": set(),
    "memtree/store/write/mutations.py::rebuild_indexes": {_I},
    "memtree/store/write/rescan.py::reredact": {_NF},
    "memtree/store/write/vectors.py::_text": {ANY},
}
# Why each ANY_STATUS read sees every status.
ANY_REASONS: dict[str, str] = {
    "memtree/store/write/fts.py::defer": "the highest rowid of any status marks where deferred rows begin",
    "memtree/store/budget.py::bytes_per_content_byte": "the disk budget counts every stored byte",
    "memtree/store/budget.py::captured_bytes": "the disk budget counts every stored byte",
    "memtree/store/budget.py::children": "a capture's children of every status count and go with it",
    "memtree/store/reads.py::ancestors": "hidden ancestors are shown by id and status, never content",
    "memtree/store/reads.py::node_status": "says why a node is hidden rather than 'not found'",
    "memtree/store/savings.py::captured_sessions": "a session memtree captured in, whatever became of its nodes",
    "memtree/store/subtrees.py::api_summaries_since": "a forgotten summary still spent the API quota",
    "memtree/store/write/forgetting.py::subtree": "forgetting reaches every status",
    "memtree/store/write/mutations.py::_content": "forgetting reaches every status",
    "memtree/store/write/mutations.py::_summaries_above": "summaries quoting a forgotten node go with it, whatever their status",
    "memtree/store/write/mutations.py::node_row": "the writer must see every status to change one",
    "memtree/store/write/vectors.py::_text": "a node's content to embed, whatever its status (stale ones keep vectors)",
}


def _sql_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}" for v in node.values
        )
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


_LIVE_NAMES = {name: getattr(live, name) for name in ("LIVE", "PENDING", "CURRENT", "INDEXED", "NOT_FORGOTTEN")}


def _filter_of(call: ast.Call):
    """What one status_clause(...) call filters by: a frozenset of statuses, ANY or CALLER."""
    arg = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "statuses"), None)
    if arg is None or (isinstance(arg, ast.Constant) and arg.value is None):
        return frozenset(live.LIVE)
    name = arg.id if isinstance(arg, ast.Name) else arg.attr if isinstance(arg, ast.Attribute) else None
    if name == "ANY_STATUS":
        return ANY
    if name in _LIVE_NAMES:
        return frozenset(_LIVE_NAMES[name])
    if isinstance(arg, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in arg.elts):
        return frozenset(e.value for e in arg.elts)
    if isinstance(arg, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in arg.elts):
        return CALLER  # [status]: one the caller names
    if isinstance(arg, ast.Name) or (
        isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr == "get"
    ):
        return CALLER  # a parameter or a filter the caller passed
    return UNNAMED  # built on the spot (list(STATUSES), a comprehension): name the set in store/live.py


def _filters(fn: ast.AST, helpers: set[str]) -> frozenset:
    """Every filter the function applies: its own status_clause calls, CALLER for a predicate helper."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if called == "status_clause":
                out.add(_filter_of(node))
            elif called in helpers:
                out.add(CALLER)
    return frozenset(out)


def read_sites(source: str, rel: str, shared: frozenset = frozenset()) -> dict[str, frozenset]:
    """``path::function`` -> the filters it applies (empty: none), for each function reading nodes/fts/edges.
    ``shared``: predicate helpers of other modules (reads._filters_sql, imported by vectors.knn)."""
    tree = ast.parse(source)
    helpers = (_predicate_helpers(tree) | shared) - {"status_clause"}
    sites: dict[str, frozenset] = {}

    def visit(node, fn, name):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn, name = node, f"{name}.{node.name}" if name else node.name
        if not isinstance(node, ast.Constant) or not isinstance(getattr(node, "_parent", None), ast.JoinedStr):
            text = _sql_text(node)
            if text and READ.search(text):
                sites[f"{rel}::{name or '<module>'}"] = _filters(fn, helpers) if fn is not None else frozenset()
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


def all_sites() -> dict[str, frozenset]:
    sources = _sources()
    # store/reads.py's predicate helpers (e.g. _filters_sql) count where another module imports them.
    shared = frozenset(_predicate_helpers(ast.parse(sources["memtree/store/reads.py"]))) - {"status_clause"}
    out = {}
    for rel, src in sources.items():
        out.update(read_sites(src, rel, shared))
    return out


def test_every_read_site_is_pinned_to_the_statuses_it_filters_by():
    sites = {k: set(v) for k, v in all_sites().items()}
    assert sites == PINNED, "read sites and their status filters changed; pin them here:\n" + "\n".join(
        f"{k}: {sites.get(k)} (pinned {PINNED.get(k)})"
        for k in sorted(set(sites) | set(PINNED))
        if sites.get(k) != PINNED.get(k)
    )


def test_every_read_filters_or_is_allow_listed_and_none_names_every_status():
    sites = all_sites()
    assert sorted(k for k, v in sites.items() if not v) == sorted(ALLOW)
    # Every status, spelt as a list, filters nothing without saying so: ANY_STATUS with a reason instead.
    assert [k for k, v in sites.items() if frozenset(live.STATUSES) in v] == []
    assert sorted(k for k, v in sites.items() if ANY in v) == sorted(ANY_REASONS)


def test_the_scanner_sees_the_retrieval_reads():
    sites = all_sites()
    for fn in ("get_node", "search_fts", "edges_of", "recent"):
        assert sites.get(f"memtree/store/reads.py::{fn}") == {CALLER}


def test_the_scanner_flags_a_read_without_the_predicate_and_one_that_filters_nothing():
    src = (
        "def leaky(conn):\n"
        "    return conn.execute(f\"SELECT n.id FROM nodes n WHERE n.kind = {'?'}\")\n"
        "def fine(conn):\n"
        "    where, p = status_clause('n')\n"
        "    return conn.execute(f'SELECT e.src_id FROM edges e JOIN nodes n ON n.id = e.dst_id WHERE {where}', p)\n"
        "def everything(conn):\n"
        "    where, p = status_clause('n', ('pending', 'live', 'stale', 'superseded', 'pruned', 'dropped', 'forgotten'))\n"
        "    return conn.execute(f'SELECT n.id FROM nodes n WHERE {where}', p)\n"
        "def built(conn):\n"
        "    where, p = status_clause('n', list(STATUSES))\n"
        "    return conn.execute(f'SELECT n.id FROM nodes n WHERE {where}', p)\n"
        "def marked(conn):\n"
        "    where, p = status_clause('n', ANY_STATUS)\n"
        "    return conn.execute(f'SELECT n.id FROM nodes n WHERE {where}', p)\n"
        "def unrelated(conn):\n"
        "    return conn.execute('SELECT name FROM sqlite_master')\n"
    )
    assert read_sites(src, "x.py") == {
        "x.py::leaky": frozenset(),
        "x.py::fine": {frozenset(live.LIVE)},
        "x.py::everything": {frozenset(live.STATUSES)},
        "x.py::built": {UNNAMED},
        "x.py::marked": {ANY},
    }


def test_each_named_set_returns_exactly_its_statuses_from_a_real_table():
    import apsw

    conn = apsw.Connection(":memory:")
    conn.execute("CREATE TABLE nodes (id TEXT PRIMARY KEY, status TEXT NOT NULL)")
    conn.executemany("INSERT INTO nodes VALUES (?, ?)", [(f"id-{s}", s) for s in live.STATUSES])

    def ids(statuses) -> set:
        where, params = live.status_clause("n", statuses)
        return {r[0] for r in conn.execute(f"SELECT n.id FROM nodes n WHERE {where}", params)}

    assert ids(None) == {"id-live"}  # the default: live only
    for name in ("LIVE", "PENDING", "CURRENT", "INDEXED", "NOT_FORGOTTEN"):
        assert ids(getattr(live, name)) == {f"id-{s}" for s in getattr(live, name)}, name
    assert ids(live.ANY_STATUS) == {f"id-{s}" for s in live.STATUSES}
    assert live.check_statuses(live.ANY_STATUS) == live.STATUSES
