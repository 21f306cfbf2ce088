"""The wrapped grep tool: real ripgrep, a real writer process, a real SQLite file."""

from __future__ import annotations

import os
import re

import pytest

from memtree import tokens
from memtree.errors import BadRequest, Refused
from memtree.tools.grep import grep
from tests.support.tools_harness import Harness, stored_node_id


def _children(h, node_id: str) -> set[str]:
    return {r[0] for r in h.rows("SELECT source_uri FROM nodes WHERE parent_id=?", (node_id,))}


def test_hits_are_stored_as_one_node_with_a_child_per_hit(h):
    a = h.write("src/a.py", "x = 1\nneedle_one = 2\ny = 3\nneedle_two = 4\n")
    b = h.write("src/b.txt", "needle_three\n")
    h.write("src/c.txt", "nothing here\n")
    out = h.run(grep, "needle_\\w+")
    node = stored_node_id(out)
    # Native Grep's lines, then only what the model cannot see: the node id.
    assert out.splitlines() == [
        "src/a.py:2:needle_one = 2",
        "src/a.py:4:needle_two = 4",
        "src/b.txt:1:needle_three",
        f"[memtree {node}]",
    ]
    assert _children(h, node) == {f"file://{a}#L2-2", f"file://{a}#L4-4", f"file://{b}#L1-1"}
    kind, content, meta = h.rows(
        "SELECT kind, content, json_extract(metadata,'$.hits') FROM nodes WHERE id=?", (node,)
    )[0]
    assert kind == "tool_output" and meta == 3 and "needle_three" in content
    assert "src/a.py:2:needle_one = 2" in out.splitlines()


def test_same_search_twice_is_stored_once(h):
    h.write("a.txt", "needle\n" * 3)
    first = stored_node_id(h.run(grep, "needle"))
    before = h.counts()
    second = h.run(grep, "needle")
    assert stored_node_id(second) == first and second.splitlines()[-1] == f"[memtree {first}]"
    assert h.counts() == before


def test_invalid_regex_is_one_clear_line_and_stores_nothing(h):
    h.write("a.txt", "needle\n")
    h.run(grep, "needle")
    message = h.refused(grep, "(unclosed")
    assert "regex parse error" in message and "\n" not in message


def test_secret_files_are_never_searched_or_stored(h):
    control = h.write("app/config.py", "TOKEN_NAME = 'needle'\n")
    h.write(".env", "needle=1\n")
    h.write("app/.env.local", "needle=2\n")
    h.write("home/.ssh/config", "needle\n")
    h.write("keys/id_rsa", "needle\n")
    h.write("certs/server.pem", "needle\n")
    os.symlink(os.path.join(h.root, ".env"), os.path.join(h.root, "app", "looks_fine.txt"))
    out = h.run(grep, "needle")
    assert _children(h, stored_node_id(out)) == {f"file://{control}#L1-1"}
    stored = " ".join(r[0] for r in h.rows("SELECT content FROM nodes"))
    assert "needle=1" not in stored and "needle=2" not in stored
    before = h.counts()
    for path in (".env", "sub/../.env", "keys/id_rsa", "app/looks_fine.txt"):
        with pytest.raises(Refused):
            h.run(grep, "needle", path=path)
    assert h.counts() == before


def test_config_path_deny_extends_the_denylist(tmp_path):
    h = Harness(tmp_path, {"path": {"deny": ["private"]}})
    try:
        keep = h.write("pub/a.txt", "needle\n")
        h.write("private/b.txt", "needle\n")
        out = h.run(grep, "needle")
        assert _children(h, stored_node_id(out)) == {f"file://{keep}#L1-1"}
    finally:
        h.close()


def test_path_glob_case_and_context_narrow_the_search(h):
    h.write("a/x.py", "Needle\nneedle\n")
    h.write("b/y.txt", "needle\n")

    def hits(out):
        return {line for line in out.splitlines() if not line.startswith("[")}

    assert hits(h.run(grep, "needle", path="a", case="sensitive")) == {"a/x.py:2:needle"}
    assert hits(h.run(grep, "needle", glob="*.txt")) == {"b/y.txt:1:needle"}
    assert hits(h.run(grep, "NEEDLE", case="insensitive", path="a")) == {"a/x.py:1:Needle", "a/x.py:2:needle"}
    h.write("c/z.txt", "before\nneedle\nafter\n")
    out = h.run(grep, "needle", path="c", context=1)
    assert {"c/z.txt-1-before", "c/z.txt-3-after"} <= set(out.splitlines()), out


@pytest.mark.parametrize("kw", [{"case": "loud"}, {"context": -1}, {"context": "2"}, {"glob": 3}, {"path": "nope"}])
def test_bad_arguments_are_clear_errors(h, kw):
    with pytest.raises(BadRequest):
        h.run(grep, "x", **kw)
    with pytest.raises(BadRequest):
        h.run(grep, "")


def test_no_match_stores_nothing(h):
    h.write("a.txt", "needle\n")
    h.run(grep, "needle")
    before = h.counts()
    assert "No matches" in h.run(grep, "haystack_zzz")
    assert h.counts() == before


@pytest.mark.parametrize("budget", [1, 5, 20, 100, 1000, None])
def test_budget_is_never_exceeded_and_the_rest_is_counted(h, budget):
    for i in range(40):
        h.write(f"d{i}/f.py", "".join(f"hit number {j} in file {i}\n" for j in range(10)))
    out = h.run(grep, "hit number", budget_tokens=budget)
    assert tokens.count(out) <= (budget or 2000)
    if budget and budget >= 100:
        m = re.search(r"not shown: (\d+) of 400 hits in (\d+) of 40 files", out)
        assert m, out
        shown = len(re.findall(r"^d\d+/f\.py:\d+:hit number", out, re.M))
        assert int(m.group(1)) == 400 - shown


def test_a_hit_on_a_line_over_16_mb_is_left_out_and_counted_and_the_rest_stored(h):
    h.write("minified.js", "var needle='" + "a" * (17 * 1024 * 1024) + "';\n")
    h.write("small.txt", "the needle is here\n")
    out = h.run(grep, "needle")
    assert "1 hits on lines over 1024 KB left out" in out, out[:500]
    node = stored_node_id(out)
    children = h.rows("SELECT json_extract(metadata,'$.path') FROM nodes WHERE parent_id=?", (node,))
    assert {c[0] for c in children} == {os.path.join(h.root, "small.txt")}


# -- context="symbol": each hit inside the definition around it ----------------------------------

_PY = '''import os


class Box:
    """A box."""

    def open(self):
        lid = self.lid
        return lid.lift()

    def close(self):
        return self.lid.drop()


def helper():
    return Box().open()


LIMIT = 3
'''


def test_symbol_context_shows_each_hit_inside_its_definition(h):
    h.write("box.py", _PY)
    out = h.run(grep, r"lid\.lift|Box\(\)|LIMIT", context="symbol")
    node = stored_node_id(out)
    # The method (innermost, not the class) and the function, numbered as native
    # Read numbers lines; a module-level hit stays one grep line.
    assert out.splitlines() == [
        "box.py Box.open L7-9:",
        "7\t    def open(self):",
        "8\t        lid = self.lid",
        "9\t        return lid.lift()",
        "box.py helper L15-16:",
        "15\tdef helper():",
        "16\t    return Box().open()",
        "box.py:19:LIMIT = 3",
        f"[memtree {node}]",
    ]
    # Stored as any grep: one node, one child per hit.
    assert _children(h, node) == {f"file://{h.root}/box.py#L{n}-{n}" for n in (9, 16, 19)}


def test_symbol_context_shows_a_definition_once_for_all_its_hits(h):
    h.write("box.py", _PY)
    out = h.run(grep, "lid", context="symbol")
    blocks = [line for line in out.splitlines() if line.startswith("box.py ")]
    assert blocks == ["box.py Box.open L7-9:", "box.py Box.close L11-12:"]  # open holds two hits, shown once
    assert _children(h, stored_node_id(out)) == {f"file://{h.root}/box.py#L{n}-{n}" for n in (8, 9, 12)}


def test_symbol_context_names_a_long_definition_instead_of_showing_it(h):
    body = "".join(f"    step_{i} = {i}\n" for i in range(100))
    h.write("long.py", f"def big():\n{body}    return 'needle'\n\n\ndef small():\n    return 'needle'\n")
    out = h.run(grep, "needle", context="symbol")
    lines = out.splitlines()
    assert lines[0] == "long.py:102:    return 'needle'  (in big L1-102)"  # 102 lines: over SYMBOL_MAX_LINES
    assert lines[1:4] == ["long.py small L105-106:", "105\tdef small():", "106\t    return 'needle'"]


def test_symbol_context_in_other_languages_uses_the_outline(h):
    h.write("web/app.js", "const x = 1;\n\nfunction handle(req) {\n  return req.needle;\n}\n")
    out = h.run(grep, "needle", context="symbol")
    assert out.splitlines()[:4] == [
        "web/app.js handle L3-5:",
        "3\tfunction handle(req) {",
        "4\t  return req.needle;",
        "5\t}",
    ]


def test_symbol_context_is_the_only_word_context_takes(h):
    h.write("a.py", "needle = 1\n")
    message = h.refused(grep, "needle", context="symbols")
    assert '"symbol"' in message and "\n" not in message
    assert h.run(grep, "needle", context="symbol").splitlines()[0] == "a.py:1:needle = 1"  # positive control
