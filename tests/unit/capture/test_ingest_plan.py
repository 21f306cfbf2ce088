"""memtree.capture.ingest.plan on the real Claude Code payloads and on broken ones."""

from __future__ import annotations

import copy
import json
import os

import pytest

from memtree.capture.ingest import Skip, plan
from memtree.errors import BadRequest
from tests.support import PAYLOAD_DIR
from tests.support import test_config as make_config


def real_payloads() -> list[dict]:
    out = []
    for name in sorted(n for n in os.listdir(PAYLOAD_DIR) if n.endswith(".jsonl")):
        with open(os.path.join(PAYLOAD_DIR, name), encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


def find(pred) -> dict:
    return copy.deepcopy(next(p for p in real_payloads() if pred(p)))


def read_of(start: int) -> dict:
    return find(
        lambda p: (
            p["tool_name"] == "Read"
            and (p.get("tool_response") or {}).get("file", {}).get("startLine") == start
            and p["tool_input"]["file_path"].endswith("big.txt")
        )
    )


CFG = make_config()


def test_a_whole_file_read_of_text_is_cut_into_the_read_tools_windows_with_its_range_and_cap_flag():
    p = read_of(1)
    out = plan(p, CFG)
    f = p["tool_response"]["file"]
    assert out.skip is None and out.session_id == p["session_id"]
    nodes = out.nodes
    # big.txt is text: 200-line windows, as the wrapped read cuts it; together exactly the lines read
    assert [n["source_uri"] for n in nodes] == [
        f"file://{f['filePath']}#L{s}-{min(s + 199, 1603)}" for s in range(1, 1604, 200)
    ]
    assert "".join(n["content"] for n in nodes) == f["content"]
    for n in nodes:
        assert n["kind"] == "file_chunk" and n["parent"] == {"file": f["filePath"]}
        m = n["metadata"]
        assert (m["read"], m["total_lines"], m["truncated_by_token_cap"], m["chunk"]) == (
            [1, 1603],
            2501,
            True,
            "window",
        )


def test_an_offset_read_keeps_its_offset_range_and_stats_the_file(tmp_path):
    p = read_of(100)
    target = tmp_path / "big.txt"
    target.write_text(p["tool_response"]["file"]["content"])
    p["tool_input"]["file_path"] = p["tool_response"]["file"]["filePath"] = str(target)
    [n] = plan(p, CFG).nodes
    assert n["source_uri"] == f"file://{target}#L100-104"
    assert n["metadata"]["truncated_by_token_cap"] is False and n["metadata"]["read"] == [100, 104]
    assert n["mtime"] == os.stat(target).st_mtime_ns
    p["tool_input"]["file_path"] = p["tool_response"]["file"]["filePath"] = str(tmp_path / "gone.txt")
    assert plan(p, CFG).nodes[0]["mtime"] == 0  # a file that is gone has no mtime


MODULE = (
    '"""A module."""\n\nimport os\n\n\nclass Pool:\n    """Workers."""\n\n    size = 4\n\n'
    '    def start(self, count):\n        """Start count workers."""\n        return [os.getpid() for _ in range(count)]\n\n'
    "    def stop(self):\n        return None\n\n\n"
    'def drain_queue(queue, timeout=1.0):\n    """Take every item off the queue."""\n    items = []\n'
    "    while queue:\n        items.append(queue.pop())\n    return items\n"
)


def _python_read(path: str, content: str, start: int = 1, total: int | None = None) -> dict:
    n = content.count("\n")
    return {
        "session_id": "s",
        "cwd": os.path.dirname(path),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": path, **({"offset": start, "limit": n} if start > 1 else {})},
        "tool_response": {
            "type": "text",
            "file": {"filePath": path, "content": content, "numLines": n, "startLine": start, "totalLines": total or n},
        },
    }


def _cuts(out) -> list[tuple]:
    return [(n["metadata"]["symbol"], n["metadata"]["start"], n["metadata"]["end"]) for n in out.nodes]


def test_a_python_read_is_cut_by_symbol_and_a_slice_by_the_files_own_symbols_numbered_from_its_offset(tmp_path):
    path = tmp_path / "pool.py"
    path.write_text(MODULE)
    lines = MODULE.splitlines(keepends=True)
    cfg = make_config({"capture": {"readSymbolMinBytes": 0}})  # one chunk per symbol, as the wrapped read cuts
    whole = plan(_python_read(str(path), MODULE), cfg, str(tmp_path))
    # The wrapped read's cuts (module head 1-3, Pool 4-9, Pool.start, Pool.stop, drain_queue), except that a
    # chunk under capture.filterMinSize (the head, Pool's header, stop) joins its neighbour, not dropped by the filter
    assert _cuts(whole) == [("Pool", 1, 9), ("Pool.start", 10, 13), ("drain_queue", 14, 24)]
    assert "".join(n["content"] for n in whole.nodes) == MODULE
    # A slice from line 12 (inside Pool.start) to 21: cut where the file's symbols are, lines numbered from 12.
    part = "".join(lines[11:21])
    sliced = plan(_python_read(str(path), part, 12, len(lines)), cfg, str(tmp_path))
    assert _cuts(sliced) == [("Pool.start", 12, 13), ("drain_queue", 14, 21)]
    assert [n["content"] for n in sliced.nodes] == ["".join(lines[11:13]), "".join(lines[13:21])]
    assert {n["metadata"]["read"][0] for n in sliced.nodes} == {12}
    # Not the file on disk any more (edited since): the slice is cut by what it holds, still from line 12.
    path.write_text(MODULE.replace("drain_queue", "drain"))
    alone = plan(_python_read(str(path), part, 12, len(lines)), cfg, str(tmp_path))
    assert [n["metadata"]["start"] for n in alone.nodes][0] == 12
    assert "".join(n["content"] for n in alone.nodes) == part and _cuts(alone)[-1][2] == 21
    # Without the project root (the hook's own spool path) the disk is not looked at, and nothing breaks.
    assert "".join(n["content"] for n in plan(_python_read(str(path), part, 12, len(lines)), cfg).nodes) == part


def test_small_symbols_of_a_read_join_so_a_file_of_many_small_functions_is_tens_of_chunks(tmp_path):
    path = tmp_path / "handlers.py"
    text = "".join(f"def handler_{k}(request):\n    return request.get('k{k}') * {k}\n\n\n" for k in range(600))
    path.write_text(text)
    nodes = plan(_python_read(str(path), text), CFG, str(tmp_path)).nodes
    floor = CFG.capture.readSymbolMinBytes
    assert "".join(n["content"] for n in nodes) == text
    assert 1 < len(nodes) <= len(text.encode()) // floor + 1  # 600 definitions, tens of chunks
    assert all(len(n["content"].encode()) >= floor for n in nodes)
    named = [s for n in nodes for s in n["metadata"].get("symbols") or [n["metadata"]["symbol"]]]
    assert named == [f"handler_{k}" for k in range(600)]  # every definition named once, by the chunk holding it
    for n in nodes:
        held = {f"handler_{k}" for k in range(600) if f"def handler_{k}(" in n["content"]}
        assert set(n["metadata"].get("symbols") or [n["metadata"]["symbol"]]) == held
    # positive control: without the floor it is one chunk per function
    assert len(plan(_python_read(str(path), text), make_config({"capture": {"readSymbolMinBytes": 0}})).nodes) == 600


def test_an_unchanged_reread_and_a_failed_read_store_nothing():
    p = read_of(1)
    p["tool_response"] = {"type": "file_unchanged", "file": {"filePath": p["tool_input"]["file_path"]}}
    assert plan(p, CFG).skip == Skip("unchanged", "file unchanged since the last read (no content)")
    assert plan(p, CFG).nodes == []
    failed = find(lambda p: p["tool_name"] == "Read" and p["hook_event_name"] == "PostToolUseFailure")
    assert plan(failed, CFG).nodes == [] and plan(failed, CFG).skip == Skip(
        "unsupported", "Read failed: nothing was read"
    )


def test_grep_content_mode_makes_a_child_per_matching_line_resolved_against_cwd():
    # No project root: the file is not read from disk, each hit stays its own lines, under the output.
    p = find(lambda p: p["tool_name"] == "Grep" and p["tool_input"].get("-C") == 1)
    out = plan(p, CFG)
    parent, *hits = out.nodes
    assert parent["kind"] == "tool_output" and parent["parent"] == {"session": p["session_id"]}
    assert parent["content"].endswith(p["tool_response"]["content"])
    assert parent["content"].splitlines()[0] == "Grep 'greet' glob *.py (content)"
    app = os.path.join(p["cwd"], "src/app.py")
    # Context lines ("path-2-...") and "--" are not hits; the two match lines are.
    assert [(h["parent"], h["kind"], h["source_uri"], h["content"]) for h in hits] == [
        ({"ref": "n0"}, "file_chunk", f"file://{app}#L1-1", "def greet(name):"),
        ({"ref": "n0"}, "file_chunk", f"file://{app}#L6-6", '    print(greet("world"))'),
    ]
    assert parent["metadata"]["mode"] == "content" and parent["metadata"]["case_insensitive"] is True


GREP_MODULE = """import os


def load_settings(path):
    \"\"\"Read the settings file and return its values.\"\"\"
    with open(path) as f:
        text = f.read()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def unrelated_helper(values):
    total = 0
    for v in values:
        total += len(v)
    return total


class Store:
    def save_settings(self, path, values):
        \"\"\"Write the settings back, one key=value a line.\"\"\"
        with open(path, "w") as f:
            for k, v in values.items():
                f.write(f"{k}={v}\\n")
"""


def _grep_of(project: str, rel: str, hits: list[int], lines: list[str]) -> dict:
    p = find(lambda p: p["tool_name"] == "Grep" and p["tool_input"].get("pattern") == "def ")
    p["cwd"] = project
    p["tool_input"] = {"pattern": "settings", "output_mode": "content", "-n": True}
    p["tool_response"] = {"mode": "content", "content": "\n".join(f"{rel}:{n}:{lines[n - 1]}" for n in hits)}
    return p


def test_grep_hits_widen_to_the_symbols_holding_them_once_each_under_the_file(tmp_path):
    (tmp_path / "pkg").mkdir()
    mod = tmp_path / "pkg" / "conf.py"
    mod.write_text(GREP_MODULE)
    lines = GREP_MODULE.splitlines()
    want = {n for n, line in enumerate(lines, 1) if "settings" in line}
    assert want == {4, 5, 19, 20}  # two hits in load_settings, two in Store.save_settings, none in unrelated_helper
    cfg = make_config({"capture": {"readSymbolMinBytes": 0, "filterMinSize": 0}})
    _, *chunks = plan(_grep_of(str(tmp_path), "pkg/conf.py", sorted(want), lines), cfg, str(tmp_path)).nodes
    assert [(c["parent"], c.get("with"), c["metadata"]["symbol"], c["metadata"]["tool"]) for c in chunks] == [
        ({"file": str(mod)}, "n0", "load_settings", "Grep"),
        ({"file": str(mod)}, "n0", "Store.save_settings", "Grep"),
    ]
    for c in chunks:  # each chunk is its symbol's lines from the file, named in its URI
        s, e = c["metadata"]["start"], c["metadata"]["end"]
        assert c["content"] == "".join(GREP_MODULE.splitlines(keepends=True)[s - 1 : e])
        assert c["source_uri"] == f"file://{mod}#L{s}-{e}"
        assert any(s <= n <= e for n in want)
    assert "unrelated_helper" not in "".join(c["content"] for c in chunks)
    # Control: the file changed since the search (a hit line differs), so the hits stay lines, adjacent ones joined.
    mod.write_text(GREP_MODULE.replace("return its values", "return the values"))
    _, *lines_only = plan(_grep_of(str(tmp_path), "pkg/conf.py", sorted(want), lines), cfg, str(tmp_path)).nodes
    assert [
        (c["parent"], c["metadata"]["start"], c["metadata"]["end"], c["metadata"]["chunk"]) for c in lines_only
    ] == [
        ({"ref": "n0"}, 4, 5, "lines"),
        ({"ref": "n0"}, 19, 20, "lines"),
    ]


def test_grep_hits_on_adjacent_lines_of_a_file_not_on_disk_are_one_chunk():
    p = find(lambda p: p["tool_name"] == "Grep" and p["tool_input"].get("pattern") == "def ")
    p["tool_response"]["content"] = "gone.py:3:a = 1\ngone.py:4:b = 2\ngone.py:9:c = 3"
    _, *chunks = plan(p, CFG).nodes
    assert [(c["metadata"]["start"], c["metadata"]["end"], c["content"]) for c in chunks] == [
        (3, 4, "a = 1\nb = 2"),
        (9, 9, "c = 3"),
    ]


def test_grep_hits_resolve_against_the_search_path_when_the_file_is_there(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    p = find(lambda p: p["tool_name"] == "Grep" and p["tool_input"].get("pattern") == "def ")
    p["cwd"] = str(tmp_path / "elsewhere")
    p["tool_input"]["path"] = str(tmp_path / "pkg")
    p["tool_response"]["content"] = "mod.py:1:x = 1"
    [_, hit] = plan(p, CFG).nodes
    assert hit["source_uri"] == f"file://{tmp_path}/pkg/mod.py#L1-1"


def test_grep_filename_and_count_modes_store_one_output_without_children():
    files = find(lambda p: p["tool_name"] == "Grep" and p["tool_response"].get("mode") == "files_with_matches")
    count = find(lambda p: p["tool_name"] == "Grep" and p["tool_response"].get("mode") == "count")
    [f] = plan(files, CFG).nodes
    [c] = plan(count, CFG).nodes
    assert f["content"].splitlines()[1:] == ["big.txt"] and c["content"].splitlines()[1:] == ["big.txt:5"]
    assert c["metadata"]["numMatches"] == 5 and f["content"] != c["content"]


def test_grep_lines_from_secret_files_are_left_out_of_text_and_children():
    p = find(lambda p: p["tool_name"] == "Grep" and p["tool_input"].get("pattern") == "def ")
    p["tool_response"]["content"] = "src/app.py:1:def greet(name):\n.env:2:API_TOKEN_SEED=def-zzz\n.env-3-X=1"
    parent, hit = plan(p, CFG).nodes
    assert ".env" not in parent["content"] and "zzz" not in parent["content"]
    assert hit["content"] == "def greet(name):" and parent["metadata"]["denied_lines"] == 2


def test_bash_success_has_unknown_exit_and_failure_takes_the_exit_code_from_error():
    ok = find(lambda p: p["tool_name"] == "Bash" and p["tool_input"]["command"] == "echo hello; ls")
    bad = find(lambda p: p["tool_name"] == "Bash" and p["hook_event_name"] == "PostToolUseFailure")
    [o] = plan(ok, CFG).nodes
    [b] = plan(bad, CFG).nodes
    assert o["content"] == "$ echo hello; ls\nexit: unknown\n--- stdout ---\nhello\nREADME.md\nbig.txt\nsrc"
    assert b["content"] == "$ echo out; echo err >&2; exit 3\nexit: 3\n--- output ---\nout\nerr"
    assert (o["metadata"]["exit"], b["metadata"]["exit"]) == (None, 3)
    assert o["metadata"]["description"] == "Say hello and list files"
    # the writer keys tool outputs by the hash of the redacted content it stores
    assert o["source_uri"] == b["source_uri"] == "tool:Bash"
    ok["tool_response"]["interrupted"] = True
    assert plan(ok, CFG).nodes[0]["content"].splitlines()[1] == "exit: interrupted"


def test_denied_commands_off_switch_and_other_tools_are_skipped_with_a_reason():
    ok = find(lambda p: p["tool_name"] == "Bash" and p["tool_input"]["command"] == "echo hello; ls")
    assert plan(ok, CFG).skip is None  # positive control
    env = copy.deepcopy(ok)
    env["tool_input"]["command"] = "bash -c 'env | sort'"
    denied = plan(env, CFG).skip
    assert denied.kind == "denied" and denied.detail.startswith("denied command")
    assert plan(ok, make_config({"capture": {"bash": False}})).skip == Skip(
        "off", "capture.bash is off for this project"
    )
    assert plan(ok, make_config({"bash": {"deny": ["^echo "]}})).skip.kind == "denied"
    mcp = find(lambda p: p["tool_name"].startswith("mcp__"))
    unsupported = plan(mcp, CFG)
    assert (unsupported.session_id, unsupported.nodes) == (mcp["session_id"], [])
    assert unsupported.skip == Skip("unsupported", f"unsupported tool {mcp['tool_name']!r}")


def test_denied_read_paths_are_skipped_also_through_dotdot_and_symlinks(tmp_path):
    p = read_of(100)
    (tmp_path / "sub").mkdir()
    (tmp_path / ".env").write_text("X=1\n")
    os.symlink(tmp_path / ".env", tmp_path / "harmless.txt")
    for path in (str(tmp_path / ".env"), str(tmp_path / "sub" / ".." / ".env"), str(tmp_path / "harmless.txt")):
        p["tool_input"]["file_path"] = p["tool_response"]["file"]["filePath"] = path
        assert plan(p, CFG).skip.detail.startswith("denied path"), path
    p["tool_input"]["file_path"] = p["tool_response"]["file"]["filePath"] = str(tmp_path / "notes.txt")
    assert plan(p, CFG).skip is None
    cfg = make_config({"path": {"deny": ["notes.*"]}})
    assert plan(p, cfg).skip.kind == "denied"


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda p: p.pop("session_id"), "'session_id'"),
        (lambda p: p.__setitem__("tool_name", 7), "'tool_name' must be str"),
        (lambda p: p.__setitem__("tool_input", "SECRET-CONTENT"), "'tool_input' must be dict"),
        (lambda p: p["tool_input"].__setitem__("command", ["SECRET-CONTENT"]), "tool_input.'command' must be str"),
        (lambda p: p["tool_response"].__setitem__("stdout", {"SECRET-CONTENT": 1}), "tool_response.'stdout'"),
        (lambda p: p.__setitem__("cwd", "relative/SECRET-CONTENT"), "'cwd' must be an absolute path"),
    ],
)
def test_malformed_payloads_raise_bad_request_naming_the_field_not_the_content(mutate, field):
    p = find(lambda p: p["tool_name"] == "Bash" and p["tool_input"]["command"] == "echo hello; ls")
    mutate(p)
    with pytest.raises(BadRequest) as e:
        plan(p, CFG)
    assert field in e.value.message and "SECRET-CONTENT" not in e.value.message


@pytest.mark.parametrize("bad", [None, [], "text", 3])
def test_a_payload_that_is_not_an_object_is_a_bad_request(bad):
    with pytest.raises(BadRequest, match="must be a JSON object"):
        plan(bad, CFG)


def test_every_real_payload_plans_without_error():
    reasons = [plan(p, CFG).skip for p in real_payloads()]
    assert len(reasons) >= 14 and sum(r is None for r in reasons) >= 10
