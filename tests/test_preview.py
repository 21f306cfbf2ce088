"""Previews of large native outputs and the exact replacement shapes Claude Code accepts."""

from __future__ import annotations

from memtree import tokens
from memtree.capture import preview, rewrite

CFG = rewrite.settings(None)
SRC = '''"""A module."""

import os


class Store:
    """Holds things."""

    def __init__(self, path):
        self.path = path

    @property
    def size(self):
        return os.path.getsize(self.path)


def helper(x):
    # a comment at the margin inside the body is not an end
    return x + 1


async def fetch(url):
    return url
'''


def _read_payload(path: str, content: str, **ti) -> dict:
    lines = content.count("\n") + 1
    return {"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {"file_path": path, **ti},
            "tool_response": {"type": "text", "file": {"filePath": path, "content": content, "numLines": lines,
                                                       "startLine": 1, "totalLines": lines}}}


def _bash_payload(stdout: str, stderr: str = "", **extra) -> dict:
    return {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "make test"},
            "tool_response": {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False,
                              "noOutputExpected": False, **extra}}


def test_outline_gives_each_definition_its_exact_line_range():
    got = [(indent, label.split("(")[0], a, b) for indent, label, a, b in preview.outline(SRC.split("\n"))]
    assert got == [(0, "class Store", 6, 14), (4, "def __init__", 9, 10), (4, "def size", 13, 14),
                   (0, "def helper", 17, 19), (0, "async def fetch", 22, 23)]


def test_read_of_a_large_file_becomes_an_outline_in_the_read_shape_with_how_to_get_lines():
    big = SRC + "".join(f"\ndef f{i}(a, b):\n    return a * {i} + b\n" for i in range(300))
    out = rewrite.updated_output(_read_payload("/p/mod.py", big), "01NODE", CFG)
    assert set(out) == {"type", "file"} and out["type"] == "text"
    f = out["file"]
    assert set(f) == {"filePath", "content", "numLines", "startLine", "totalLines"}
    assert (f["filePath"], f["startLine"], f["totalLines"]) == ("/p/mod.py", 1, big.count("\n") + 1)
    assert f["numLines"] == f["content"].count("\n") + 1
    text = f["content"]
    assert "01NODE" in text and "offset" in text and "limit" in text
    assert "class Store  L6-14" in text and "def helper  L17-19" in text and "def f0  L25-26" in text
    assert "more top-level definitions and all members not listed" in text  # 300 do not fit: says so
    assert tokens.count(text) <= CFG["previewTokens"]
    assert "return a * 299 + b" not in text  # bodies stay in the store


def test_targeted_small_and_unknown_outputs_are_left_alone():
    big = "x = 1\n" * 5000
    assert rewrite.updated_output(_read_payload("/p/a.py", big, offset=1, limit=2000), "01N", CFG) is None
    assert rewrite.updated_output(_read_payload("/p/a.py", big, limit=10), "01N", CFG) is None
    assert rewrite.updated_output(_read_payload("/p/a.py", "x = 1\n" * 20), "01N", CFG) is None
    assert rewrite.updated_output(_bash_payload("ok\n" * 10), "01N", CFG) is None
    assert rewrite.updated_output({**_bash_payload("y\n" * 9000), "hook_event_name": "PostToolUseFailure"},
                                  "01N", CFG) is None
    assert rewrite.updated_output(_bash_payload("y\n" * 9000), "01N", {**CFG, "rewrite": False}) is None
    # positive control: the same large output with rewrite on is rewritten
    assert rewrite.updated_output(_bash_payload("y\n" * 9000), "01N", CFG) is not None


def test_bash_keeps_the_lines_that_matter_and_drops_the_persisted_wrapper():
    log = "\n".join("FAILED tests/test_x.py::test_%d - AssertionError" % i if i in (700, 1400)
                    else f"tests/test_x.py::test_{i} PASSED" for i in range(3000))
    out = rewrite.updated_output(_bash_payload(log, persistedOutputPath="/tmp/x.txt", persistedOutputSize=99999),
                                 "01BASH", CFG)
    assert set(out) == {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"}
    assert out["stderr"] == "" and out["interrupted"] is False
    text = out["stdout"]
    assert "701: FAILED tests/test_x.py::test_700 - AssertionError" in text
    assert "1401: FAILED tests/test_x.py::test_1400" in text
    assert "1: tests/test_x.py::test_0 PASSED" in text and "3000: tests/test_x.py::test_2999 PASSED" in text
    assert "test_1500 PASSED" not in text and "01BASH" in text
    assert f"[Claude Code kept the first {len(log):,} chars of 99,999; all of it: /tmp/x.txt]" in text
    assert tokens.count(text) <= CFG["previewTokens"]


def test_grep_is_shown_in_content_mode_with_numfiles_and_filenames():
    lines = [f"src/m{i % 7}.py:{i}:    call_thing({i})" for i in range(900)]
    resp = {"mode": "content", "numFiles": 0, "filenames": [], "content": "\n".join(lines), "numLines": 900}
    payload = {"hook_event_name": "PostToolUse", "tool_name": "Grep",
               "tool_input": {"pattern": "call_thing", "output_mode": "content", "-n": True}, "tool_response": resp}
    out = rewrite.updated_output(payload, "01GREP", CFG)
    assert set(out) == {"mode", "numFiles", "filenames", "content", "numLines"}
    assert out["mode"] == "content" and out["filenames"] == [] and isinstance(out["numFiles"], int)
    assert "src/m0.py:0:    call_thing(0)" in out["content"] and "01GREP" in out["content"]
    assert "129  src/m0.py" in out["content"]  # matches per file: 900 lines over 7 files
    files = {"mode": "files_with_matches", "numFiles": 2000, "filenames": [f"pkg/mod_{i}.py" for i in range(2000)]}
    out2 = rewrite.updated_output({**payload, "tool_response": files}, "01GREP2", CFG)
    assert out2["mode"] == "content" and out2["numFiles"] == 2000 and "pkg/mod_0.py" in out2["content"]


def test_a_secret_in_a_large_output_is_redacted_in_the_preview():
    secret = "AKIA" + "QWERTYUIOPASDFGH"
    log = "\n".join([f"aws_access_key_id = {secret}"] + [f"line {i}" for i in range(4000)])
    out = rewrite.updated_output(_bash_payload(log), "01S", CFG)
    assert secret not in out["stdout"] and "[REDACTED" in out["stdout"]


def test_file_unchanged_is_answered_with_the_preview_again():
    big = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(400))
    out = rewrite.unchanged_output("/p/m.py", big, 1200, "01OLD", CFG)
    assert out["type"] == "text" and out["file"]["filePath"] == "/p/m.py"
    assert "unchanged since your last Read" in out["file"]["content"]
    assert "def f0  L1-2" in out["file"]["content"] and "01OLD" in out["file"]["content"]
    assert rewrite.unchanged_output("/p/m.py", "def f(): pass\n", 1, "01OLD", CFG) is None


def test_a_log_read_shows_head_tail_and_errors():
    text = "\n".join("ERROR disk full" if i == 2500 else f"INFO tick {i}" for i in range(5000))
    out = rewrite.updated_output(_read_payload("/var/app.log", text), "01LOG", CFG)["file"]["content"]
    assert "2501: ERROR disk full" in out and "1: INFO tick 0" in out and "5000: INFO tick 4999" in out
    assert "INFO tick 2000" not in out


def test_a_code_preview_shows_the_module_docstring_but_not_its_imports():
    doc = '"""Ledger of pangolin payments."""\n'
    imports = "".join(f"import mod_{i}\n" for i in range(30))
    body = "".join(f"def f_{i}(x):\n    return x + {i}\n\n\n" for i in range(400))
    text = preview.read_text("/p/ledger.py", doc + imports + "\n" + body, 1700, "01ABC", 1000)
    assert "1: \"\"\"Ledger of pangolin payments.\"\"\"" in text and "import mod_" not in text
    assert "f_0  L" in text  # control: the outline is there
