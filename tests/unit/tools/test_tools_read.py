"""The wrapped read tool against a real writer process and a real SQLite file."""

from __future__ import annotations

import ast
import os
import re

import pytest

from memtree import tokens
from memtree.errors import BadRequest, NotFound, Refused
from memtree.text.chunking import WINDOW_LINES, split_lines
from memtree.tools.read import read
from tests.support import REPO
from tests.support.tools_harness import numbered

REPO = REPO
SOURCE = os.path.join(REPO, "actors", "base.py")  # a real Python file with classes, methods, functions


def _copy_source(h) -> tuple[str, list[str]]:
    with open(SOURCE, encoding="utf-8") as f:
        text = f.read()
    h.write("pkg/base.py", text)
    return "pkg/base.py", split_lines(text)


def _ast_range(text: str, name: str) -> tuple[int, int]:
    cls, _, meth = name.partition(".")
    for node in ast.parse(text).body:
        if getattr(node, "name", None) == cls:
            if meth:
                node = next(n for n in node.body if getattr(n, "name", None) == meth)
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            return first, node.end_lineno
    raise AssertionError(name)


def _chunk_ids(out: str) -> list[str]:
    return re.findall(r"L\d+-\d+ ([0-9A-Z]{26})", out)


def test_symbol_slices_are_exactly_the_symbols_lines(h):
    rel, lines = _copy_source(h)
    text = "".join(lines)
    for name in ("Actor.run", "run_actor", "Actor.socket", "SingletonLock.try_acquire"):
        out = h.run(read, rel, symbol=name, with_ids=True, budget_tokens=20000)
        lo, hi = _ast_range(text, name)
        want = {i: lines[i - 1].rstrip("\r\n") for i in range(lo, hi + 1)}
        assert numbered(out) == want, name
        assert f"symbol {name} lines {lo}-{hi}" in out
        ids = _chunk_ids(out)
        assert ids, out
        stored = {r[0] for r in h.rows("SELECT id FROM nodes WHERE kind='file_chunk' AND status='live'")}
        assert set(ids) <= stored


def test_line_slice_is_exact_and_numbered_like_cat_n(h):
    rel, lines = _copy_source(h)
    out = h.run(read, rel, lines="5-12", budget_tokens=5000)
    assert numbered(out) == {i: lines[i - 1].rstrip("\n") for i in range(5, 13)}
    assert "\n5\t" in out or out.startswith("5\t")


def test_second_read_of_unchanged_file_reuses_chunks(h):
    rel, _ = _copy_source(h)
    first = h.run(read, rel, lines="1-400", with_ids=True, budget_tokens=20000)
    before = h.counts()
    second = h.run(read, rel, lines="1-400", with_ids=True, budget_tokens=20000)
    assert h.counts() == before
    assert _chunk_ids(first) == _chunk_ids(second) and _chunk_ids(first)
    assert "chunks reused" in second


def test_edit_makes_old_chunks_stale_then_superseded_with_edges_and_audit(h):
    rel, _ = _copy_source(h)
    old_ids = set(_chunk_ids(h.run(read, rel, lines="1-400", with_ids=True, budget_tokens=20000)))
    full = os.path.join(h.root, rel)
    with open(full, "a", encoding="utf-8") as f:
        f.write("\n\ndef added_later():\n    return 42\n")
    st = os.stat(full)
    os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # mtime surely advanced
    plain = h.run(read, rel, symbol="added_later", budget_tokens=2000)
    assert "return 42" in plain and "changed since the last read" in plain
    h.run(read, rel, symbol="added_later", with_ids=True, budget_tokens=2000)  # the read that supersedes
    status = dict(h.rows("SELECT id, status FROM nodes WHERE kind='file_chunk'"))
    assert {i for i in old_ids if status[i] == "superseded"} == old_ids
    new_live = {i for i, s in status.items() if s == "live"}
    assert new_live and not (new_live & old_ids)
    edges = h.rows("SELECT src_id, dst_id FROM edges WHERE kind='supersedes'")
    assert {d for _, d in edges} == old_ids
    assert {s for s, _ in edges} <= new_live
    for old in old_ids:
        moves = h.rows("SELECT from_status, to_status FROM audit WHERE node_id=? ORDER BY seq", (old,))
        assert ("live", "stale") in moves and ("stale", "superseded") in moves, moves


def test_read_of_a_file_the_hook_captured_supersedes_the_capture_without_calling_it_a_change(h):
    from memtree import protocol

    full = h.write("pkg/small.py", "def one():\n    return 1\n\n\ndef two():\n    return 2\n")
    payload = {
        "session_id": "s1",
        "cwd": h.root,
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": full},
        "tool_response": {
            "type": "text",
            "file": {"filePath": full, "content": open(full).read(), "numLines": 6, "startLine": 1, "totalLines": 6},
        },
    }

    async def capture(svc):
        return await svc.call(protocol.Ingest(payload=payload))

    [captured] = h.run(capture)["stored"]
    h.run(lambda svc: svc.call(protocol.SetStatus(ids=[captured], status="live", expect=["pending"])))
    out = h.run(read, "pkg/small.py", symbol="two", with_ids=True)
    assert "1 earlier capture(s) of this version superseded" in out and "changed since" not in out
    reasons = {
        r
        for (r,) in h.rows(
            "SELECT reason FROM audit WHERE node_id = ? AND to_status IN ('stale', 'superseded')", (captured,)
        )
    }
    assert reasons == {"re-chunked by read (same file version)"}


def test_a_capture_of_a_version_the_read_stored_stores_nothing_new_and_names_reads_chunks(h):
    """read cuts one chunk per symbol, a native Read joins small ones (capture.readSymbolMinBytes):
    the contents differ, so the filter's hash check alone would keep both copies of every line."""
    from memtree import protocol
    from memtree.eval import payloads

    text = "".join(f"def handler_{k}(request):\n    return request.get('k{k}') * {k}\n\n\n" for k in range(40))
    full = h.write("pkg/handlers.py", text)
    h.run(read, "pkg/handlers.py")
    read_ids = {r[0] for r in h.rows("SELECT id FROM nodes WHERE kind = 'file_chunk' AND status = 'live'")}
    assert len(read_ids) == 40

    def capture(content: str, start: int = 1, tool_use_id: str = "toolu_1"):
        payload = payloads.read(full, content, h.root, tool_use_id=tool_use_id, start=start)
        return h.run(lambda svc: svc.call(protocol.Ingest(payload=payload)))

    def chunk_count() -> int:
        return h.rows("SELECT count(*) FROM nodes WHERE kind = 'file_chunk'")[0][0]

    whole = capture(text)
    assert whole["stored"] == [] and set(whole["deduped"]) <= read_ids and whole["deduped"], whole
    lines = split_lines(text)
    part = capture("".join(lines[20:60]), start=21, tool_use_id="toolu_2")  # an offset/limit slice
    assert part["stored"] == [] and set(part["deduped"]) <= read_ids and part["deduped"], part
    assert chunk_count() == 40
    # Control: another version of the file is stored (joined, so fewer chunks than read's 40).
    os.utime(full, ns=(os.stat(full).st_atime_ns, os.stat(full).st_mtime_ns + 10**9))
    changed = capture(text, tool_use_id="toolu_3")
    assert changed["stored"] and not changed.get("deduped"), changed
    assert chunk_count() == 40 + len(changed["stored"])


@pytest.mark.parametrize("budget", [1, 5, 20, 100, 1000, None])
def test_budget_is_never_exceeded(h, budget):
    rel, _ = _copy_source(h)
    limit = budget or 2000
    for kw in ({}, {"lines": "1-215"}, {"symbol": "Actor"}, {"lines": "100-100"}):
        out = h.run(read, rel, budget_tokens=budget, **kw)
        assert tokens.count(out) <= limit, (kw, tokens.count(out))


def test_cut_answer_names_the_exact_call_for_the_rest(h):
    rel, lines = _copy_source(h)
    out = h.run(read, rel, lines=f"1-{len(lines)}", budget_tokens=400)
    shown = numbered(out)
    m = re.search(
        r'left out for budget_tokens=400: lines (\d+)-(\d+).*read\(path="pkg/base.py", lines="(\d+)-(\d+)"\)', out
    )
    assert m, out
    a, b = int(m.group(3)), int(m.group(4))
    assert a == max(shown) + 1 and b == len(lines)
    rest = h.run(read, rel, lines=f"{a}-{b}", budget_tokens=20000)
    assert min(numbered(rest)) == a and max(numbered(rest)) == b


def test_outline_lists_symbols_with_ranges_and_ids_then_the_start(h):
    rel, lines = _copy_source(h)
    out = h.run(read, rel, with_ids=True)
    assert re.search(r"\n\d+-\d+\tdef run_actor\t[0-9A-Z]{26}", out)
    assert re.search(r"\n\d+-\d+\t  def Actor\.run\t[0-9A-Z]{26}", out)
    body = numbered(out)
    assert min(body) == 1 and body[1] == lines[0].rstrip("\n")
    assert tokens.count(out) <= 2000


@pytest.mark.parametrize("bad", ["1-x", "0-3", "5-2", "-3", "1-2-3", "a b"])
def test_bad_line_ranges_are_clear_errors_and_store_nothing(h, bad):
    rel, _ = _copy_source(h)
    message = h.refused(read, rel, lines=bad)
    assert "lines" in message and repr(bad) in message


def test_lines_naming_a_symbol_reads_that_symbol(h):
    """The schema shows only ``lines``: a name there reads the symbol, as symbol= does."""
    rel, _ = _copy_source(h)
    assert h.run(read, rel, lines="Actor.run") == h.run(read, rel, symbol="Actor.run")
    with pytest.raises(NotFound) as e:  # control: a name that is no symbol there
        h.run(read, rel, lines="Actor.nothing_here")
    assert "Actor.nothing_here" in e.value.message
    # A bare method name, as a grep hit shows it, when one class has it; an ambiguous one is refused.
    bare, full = h.run(read, rel, lines="tick_soon"), h.run(read, rel, symbol="Actor.tick_soon")
    assert bare.splitlines()[:-1] == full.splitlines()[:-1]
    # The trailer names the symbol only when it says more than was asked (its class).
    node = re.search(r"memtree (\w{26})", full).group(1)
    assert (bare.splitlines()[-1], full.splitlines()[-1]) == (f"[Actor.tick_soon; memtree {node}]", f"[memtree {node}]")
    with pytest.raises(NotFound):
        h.run(read, rel, lines="__init__")  # SingletonLock.__init__ and Actor.__init__


def test_unknown_symbol_names_the_symbols_there_are(h):
    rel, _ = _copy_source(h)
    with pytest.raises(NotFound) as e:
        h.run(read, rel, symbol="Nope.nothing")
    assert "Actor.run" in e.value.message


def test_secret_paths_are_refused_before_anything_is_stored(h):
    h.write(".env", "API_KEY=abc123abc123abc123\n")
    h.write("keys/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nxxxx\n")
    h.write("sub/ok.txt", "fine\n")
    os.symlink(os.path.join(h.root, ".env"), os.path.join(h.root, "innocent.txt"))
    h.write("control.py", "def f():\n    return 1\n")
    h.run(read, "control.py")  # the store exists and the writer answers
    before = h.counts()
    for path in (".env", "keys/id_rsa", "innocent.txt", "sub/../.env", os.path.join(h.root, ".env")):
        with pytest.raises(Refused) as e:
            h.run(read, path)
        assert "refused" in e.value.message
    assert h.counts() == before
    h.run(read, "sub/ok.txt")  # positive control: an ordinary file is stored
    assert h.counts()[0] > before[0]
    stored = {r[0] for r in h.rows("SELECT source_uri FROM nodes")}
    assert not [u for u in stored if ".env" in u or "id_rsa" in u or "innocent" in u]


def test_broken_python_and_other_files_are_cut_into_windows(h):
    h.write("broken.py", "def f(:\n" + "x = 1\n" * 250)
    h.write("notes.txt", "".join(f"line {i}\n" for i in range(1, 451)))
    out = h.run(read, "broken.py", lines="1-3")
    assert "does not parse" in out
    h.run(read, "notes.txt", lines="440-450")
    spans = h.rows(
        "SELECT json_extract(metadata,'$.start'), json_extract(metadata,'$.end') FROM nodes "
        "WHERE kind='file_chunk' AND source_uri LIKE '%notes.txt%' ORDER BY 1"
    )
    assert spans == [(1, WINDOW_LINES), (WINDOW_LINES + 1, 2 * WINDOW_LINES), (2 * WINDOW_LINES + 1, 450)]


@pytest.mark.parametrize("expr", ["1+" * 100000 + "1", "-" * 100000 + "1"])
def test_a_deeply_nested_python_expression_falls_back_to_windows(h, expr):
    h.write("deep.py", "def first():\n    return 1\n" + f"x = {expr}\n" + "y = 2\n" * 250)
    out = h.run(read, "deep.py", lines="1-2")
    assert "nested too deeply" in out and numbered(out) == {1: "def first():", 2: "    return 1"}
    spans = h.rows(
        "SELECT json_extract(metadata,'$.start'), json_extract(metadata,'$.end') FROM nodes "
        "WHERE kind='file_chunk' AND source_uri LIKE '%deep.py%' ORDER BY 1"
    )
    assert spans == [(1, WINDOW_LINES), (WINDOW_LINES + 1, 253)]


def test_missing_file_and_directory_are_clear_errors(h):
    with pytest.raises(NotFound):
        h.run(read, "nope.py")
    os.makedirs(os.path.join(h.root, "adir"))
    with pytest.raises(BadRequest) as e:
        h.run(read, "adir")
    assert "directory" in e.value.message


def test_a_fifo_is_refused_at_once_and_stores_nothing(h):
    h.write("control.txt", "something\n")
    assert "something" in h.run(read, "control.txt")  # positive control
    os.mkfifo(os.path.join(h.root, "pipe.txt"))  # no writer: a blocking open would never return
    message = h.refused(read, "pipe.txt")
    assert "not a regular file" in message and "\n" not in message


def test_empty_file_is_answered_and_stores_nothing(h):
    h.write("control.txt", "something\n")
    h.run(read, "control.txt")
    h.write("empty.txt", "")
    before = h.counts()
    out = h.run(read, "empty.txt")
    assert "empty file" in out and "nothing stored" in out
    assert h.counts() == before


def test_a_forgotten_chunk_read_again_from_a_changed_file_is_refused_and_audited(h):
    from memtree import protocol

    full = h.write("pkg/plans.py", "def keep():\n    return 1\n\n\ndef secret_plan():\n    return 'launch codes'\n")
    [plan_id] = _chunk_ids(h.run(read, "pkg/plans.py", symbol="secret_plan", with_ids=True))
    h.run(lambda svc: svc.call(protocol.Forget(node_id=plan_id, reason="user asked")))
    st = os.stat(full)
    os.utime(full, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # a new version, same text
    out = h.run(read, "pkg/plans.py", with_ids=True, budget_tokens=5000)
    stored = {c for (c,) in h.rows("SELECT content FROM nodes WHERE kind = 'file_chunk' AND status = 'live'")}
    assert not any("launch codes" in c for c in stored)
    assert any("def keep" in c for c in stored)  # positive control: the rest of the file is stored
    assert "(forgotten)" in out
    refused = h.rows("SELECT actor, reason FROM audit WHERE action = 'refused'")
    assert refused == [("test", "content was forgotten (tombstoned)")]
