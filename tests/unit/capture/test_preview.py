"""Previews of large native outputs and the exact replacement shapes Claude Code accepts."""

from __future__ import annotations

import os

from memtree import tokens
from memtree.capture import preview, rewrite
from memtree.eval import payloads
from memtree.text.outline import outline

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
    return payloads.read(path, content, "/p", **ti)


def _bash_payload(stdout: str, stderr: str = "", **extra) -> dict:
    return {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make test"},
        "tool_response": {
            "stdout": stdout,
            "stderr": stderr,
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
            **extra,
        },
    }


def test_outline_gives_each_definition_its_exact_line_range():
    got = [(indent, label.split("(")[0], a, b) for indent, label, a, b in outline(SRC.split("\n"))]
    assert got == [
        (0, "class Store", 6, 14),
        (4, "def __init__", 9, 10),
        (4, "def size", 13, 14),
        (0, "def helper", 17, 19),
        (0, "async def fetch", 22, 23),
    ]


def _as_cli_shows(content: str) -> list[str]:
    """What the model sees of a Read replacement: Claude Code numbers every line from startLine 1 (§1.4)."""
    return [f"{n}\t{line}" for n, line in enumerate(content.split("\n"), 1)]


def test_a_small_outline_has_the_exact_shape_file_lines_first_then_memtree_line_then_rows():
    text = preview.read_text("/p/mod.py", SRC, 23, "01NODE", 800)
    assert _as_cli_shows(text) == [
        '1\t"""A module."""',  # a real file line, numbered right by the CLI
        "2\t[memtree] Above: file lines 1-1. Below: Outline (L<n> = file line n) of mod.py: 23 lines, ~95 tokens, "
        "whole in memtree node 01NODE; numbers at the left are not file lines. Exact lines: Read with offset and "
        "limit; Edit works as usual.",
        "3\tclass Store L6-14",
        "4\t    def __init__(self, path) L9-10",
        "5\t    def size(self) L13-14",
        "6\tdef helper(x) L17-19; async def fetch(url) L22-23",
    ]  # memberless rows share a line
    spooled = preview.read_text("/p/mod.py", SRC, 23, None, 800)
    assert "whole kept by memtree, being stored (later: memtree recall query='mod.py')" in spooled
    assert "memtree node" not in spooled


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
    assert "class Store L6-14" in text and "def helper L17-19" in text and "def f0 L25-26" in text
    assert "more top-level definitions and all members not listed" in text  # 300 do not fit: says so
    assert tokens.count(text) <= CFG["previewTokens"]
    assert "return a * 299 + b" not in text  # bodies stay in the store
    # The file's own first line comes first; after memtree's line no row poses as a numbered file line.
    rows = text.split("\n")
    assert rows[0] == '"""A module."""' and rows[1].startswith("[memtree] Above: file lines 1-1. Below: Outline")
    assert not [r for r in rows[2:] if r.split(":", 1)[0].strip().isdigit()]


def _classes(n: int, methods) -> str:
    return "".join(
        f"class C{i}:\n" + "".join(f"    def m{j}(self):\n        return {j}\n\n" for j in range(methods(i))) + "\n"
        for i in range(n)
    )


def test_outline_tiers_indented_while_few_then_members_inline_then_the_biggest_members_that_fit():
    few = preview.read_text("/p/few.py", _classes(3, lambda i: 2), 40, "01N", 800).split("\n")
    assert few[1:] == [
        "class C0 L1-6",
        "    def m0(self) L2-3",
        "    def m1(self) L5-6",
        "class C1 L9-14",
        "    def m0(self) L10-11",
        "    def m1(self) L13-14",
        "class C2 L17-22",
        "    def m0(self) L18-19",
        "    def m1(self) L21-22",
    ]
    # More than MAX_INDENTED_ROWS rows: one row per class, members inline.
    many = preview.read_text("/p/many.py", _classes(10, lambda i: 3), 400, "01N", 800).split("\n")
    assert many[1] == "class C0 L1-9: m0 L2, m1 L5, m2 L8" and len(many) == 11
    # Over budget: top level for all, members for the biggest classes that fit, and it says so.
    text = preview.read_text("/p/big.py", _classes(12, lambda i: 2 + (20 if i == 7 else 0)), 600, "01N", 240)
    rows = text.split("\n")
    with_members = {r.split(" L", 1)[0] for r in rows[1:] if ": m0 L" in r}
    assert with_members == {"class C7", "class C0", "class C1", "class C2"}  # the biggest first, then in order
    assert "m21 L" in text and "class C11 L149-154" in text
    assert rows[-1].startswith("… members of 8 definitions not listed") and tokens.count(text) <= 240


def test_a_read_cut_at_the_token_cap_is_outlined_whole_from_disk_inside_the_project(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    whole = "".join(f"def f{i}(x):\n" + "    x += 1\n" * 72 + "    return x\n\n" for i in range(60))  # 4,500 lines
    (proj / "m.py").write_text(whole)
    cut = "".join(whole.splitlines(keepends=True)[:2000])

    def payload(path, content, cwd):
        p = _read_payload(str(path), content)
        p["cwd"] = str(cwd)
        p["tool_response"]["file"].update(numLines=2000, totalLines=4500, truncatedByTokenCap=True)
        return p

    text = rewrite.updated_output(payload(proj / "m.py", cut, proj), "01CAP", CFG, str(proj))["file"]["content"]
    assert (
        "of m.py: all 4,500 lines, ~14.0k tokens (read from disk past the cut above), the part read in memtree "
        "node 01CAP" in text
    ) and "def f59 L4426-4499" in text
    assert "Truncated" not in text  # the CLI's own note says that; the preview does not repeat it
    again = rewrite.unchanged_output(str(proj / "m.py"), cut, 4500, "01CAP", CFG, root=str(proj))["file"]["content"]
    assert "unchanged since your last Read" in again and "all 4,500 lines" in again
    assert "def f59 L4426-4499" in again
    # Negative controls: outside the project, or the file on disk no longer starts with what was read.
    outside = rewrite.updated_output(
        payload(proj / "m.py", cut, tmp_path / "elsewhere"), "01CAP", CFG, str(tmp_path / "elsewhere")
    )
    (proj / "m.py").write_text("# changed\n" + whole)
    changed = rewrite.updated_output(payload(proj / "m.py", cut, proj), "01CAP", CFG, str(proj))
    # A FIFO in the project (a payload naming one): never opened for a blocking read, the part read outlined.
    os.mkfifo(proj / "pipe.py")
    fifo = rewrite.updated_output(payload(proj / "pipe.py", cut, proj), "01CAP", CFG, str(proj))
    for t in (outside["file"]["content"], changed["file"]["content"], fifo["file"]["content"]):
        assert "lines 1-2,000 of 4,500, ~" in t and "def f0 L1-74" in t and "f59" not in t


def test_targeted_small_and_unknown_outputs_are_left_alone():
    big = "x = 1\n" * 5000
    assert rewrite.updated_output(_read_payload("/p/a.py", big, offset=1, limit=2000), "01N", CFG) is None
    assert rewrite.updated_output(_read_payload("/p/a.py", big, limit=10), "01N", CFG) is None
    assert rewrite.updated_output(_read_payload("/p/a.py", "x = 1\n" * 20), "01N", CFG) is None
    assert rewrite.updated_output(_bash_payload("ok\n" * 10), "01N", CFG) is None
    assert (
        rewrite.updated_output({**_bash_payload("y\n" * 9000), "hook_event_name": "PostToolUseFailure"}, "01N", CFG)
        is None
    )
    assert rewrite.updated_output(_bash_payload("y\n" * 9000), "01N", {**CFG, "rewrite": False}) is None
    # positive control: the same large output with rewrite on is rewritten
    assert rewrite.updated_output(_bash_payload("y\n" * 9000), "01N", CFG) is not None


def test_bash_keeps_the_lines_that_matter_and_drops_the_persisted_wrapper():
    log = "\n".join(
        f"FAILED tests/test_x.py::test_{i} - AssertionError"
        if i in (700, 1400)
        else f"tests/test_x.py::test_{i} PASSED"
        for i in range(3000)
    )
    out = rewrite.updated_output(
        _bash_payload(log, persistedOutputPath="/tmp/x.txt", persistedOutputSize=99999), "01BASH", CFG
    )
    assert set(out) == {"stdout", "stderr", "interrupted", "isImage", "noOutputExpected"}
    assert out["stderr"] == "" and out["interrupted"] is False
    text = out["stdout"]
    assert text.startswith("[memtree] stdout of `make test`: 3,000 lines, ~")
    assert "whole: memtree recall ids=01BASH. Shown: lines 1-" in text and ", 2 of 2 error/warning lines, last " in text
    assert "701: FAILED tests/test_x.py::test_700 - AssertionError" in text
    assert "1401: FAILED tests/test_x.py::test_1400" in text
    assert "1: tests/test_x.py::test_0 PASSED" in text and "3000: tests/test_x.py::test_2999 PASSED" in text
    assert "test_1500 PASSED" not in text and "01BASH" in text
    assert f"[Claude Code kept the first {len(log):,} chars of 99,999; all of it: /tmp/x.txt]" in text
    assert tokens.count(text) <= CFG["previewTextTokens"] + 30  # + Claude Code's persisted-output line


# A test run's output: its failures, tracebacks and compiler errors are the lines that matter.
LOG = (
    ["collected 900 items"]
    + [f"tests/test_a.py::test_{i} PASSED" for i in range(300)]
    + [
        "tests/test_a.py::test_300 FAILED",
        "Traceback (most recent call last):",
        "E   ValueError: bad input",
        "src/x.c:12:3: error: expected ';'",
        "npm ERR! code ELIFECYCLE",
        "warning: unused variable `x`",
    ]
    + [f"tests/test_b.py::test_{i} PASSED" for i in range(300)]
    + ["3 failed, 597 passed in 2.1s"]
)
# A changelog's prose uses the same words without being an error report.
PROSE = (
    ["Version 8.1.7", "-------------"]
    + [f"-   Fix issue {i} with completion. :issue:`{i}`" for i in range(300)]
    + [
        "-   Bash version detection issues a warning instead of an error.",
        "-   Don't fail when writing to a",
        "    stream with strict errors. ``EOFError`` tracebacks are shown.",
        "-   Show error when a value fails",
    ]
    + [f"-   Improve help text {i}." for i in range(300)]
)


def test_lines_that_matter_are_log_verdicts_not_the_same_words_in_prose():
    assert {i for i in range(len(LOG)) if preview.is_signal(LOG[i])} == {301, 302, 303, 304, 305, 306, 607}
    assert {i for i in range(len(PROSE)) if preview.is_signal(PROSE[i])} == set()
    _h, middle, tail, shown = preview.excerpt_rows(LOG, 400)
    assert middle == [301, 302, 303, 304, 305, 306] and tail[-1] == 607 and "6 of 6 error/warning lines" in shown
    head, middle, tail, shown = preview.excerpt_rows(PROSE, 400)
    assert middle == [] and head[0] == 0 and tail[-1] == len(PROSE) - 1 and "error/warning" not in shown
    text = rewrite.updated_output(_bash_payload("\n".join(PROSE)), "01P", CFG)["stdout"]
    assert "Show error when" not in text and "1: Version 8.1.7" in text and "Improve help text 299." in text


def test_grep_is_shown_in_content_mode_with_numfiles_and_filenames():
    lines = [f"src/m{i % 7}.py:{i}:    call_thing({i})" for i in range(900)]
    resp = {"mode": "content", "numFiles": 0, "filenames": [], "content": "\n".join(lines), "numLines": 900}
    payload = {
        "hook_event_name": "PostToolUse",
        "tool_name": "Grep",
        "tool_input": {"pattern": "call_thing", "output_mode": "content", "-n": True},
        "tool_response": resp,
    }
    out = rewrite.updated_output(payload, "01GREP", CFG)
    assert set(out) == {"mode", "numFiles", "filenames", "content", "numLines"}
    assert out["mode"] == "content" and out["filenames"] == [] and isinstance(out["numFiles"], int)
    rows = out["content"].split("\n")
    assert rows[0] == (
        "[memtree] Grep 'call_thing' (content): 900 lines in 7 files, ~8.7k tokens, whole in memtree "
        "node 01GREP. Narrow with path/glob, or page with head_limit/offset."
    )
    # matches per file, most first: 900 lines over 7 files
    assert rows[1] == "Per file (in src/): m0.py 129, m1.py 129, m2.py 129, m3.py 129, m4.py 128, m5.py 128, m6.py 128"
    assert rows[2:5] == ["src/m0.py", "0:    call_thing(0)", "src/m1.py"]  # grouped under their file
    shown = sum(1 for r in rows[2:-1] if not r.startswith("src/"))
    assert rows[-1] == f"… {900 - shown:,} more lines (Grep with offset={shown} goes on)"
    assert tokens.count(out["content"]) <= CFG["previewTextTokens"]
    # Context lines (-A/-B) stay with their file; a colon in the text or a dash in a name does not split a row.
    ctx = ["src/b-2.py:7:    hit({'k': 1})", "src/b-2.py-8-    after: 2", "--", "src/c.py:9:hit"] * 200
    got = rewrite.updated_output({**payload, "tool_response": {**resp, "content": "\n".join(ctx)}}, "01C", CFG)
    assert got["content"].split("\n")[2:9] == [
        "src/b-2.py",
        "7:    hit({'k': 1})",
        "8-    after: 2",
        "--",
        "src/c.py",
        "9:hit",
        "src/b-2.py",
    ]
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
    assert "def f0 L1-2" in out["file"]["content"] and "01OLD" in out["file"]["content"]
    assert out["file"]["content"].startswith(
        "[memtree] File unchanged since your last Read, which showed this "
        "preview. Outline (L<n> = file line n) of m.py: 1,200 lines, ~"
    )
    assert rewrite.unchanged_output("/p/m.py", "def f(): pass\n", 1, "01OLD", CFG) is None


def test_a_log_read_shows_head_tail_and_errors():
    text = "\n".join("ERROR disk full" if i == 2500 else f"INFO tick {i}" for i in range(5000))
    out = rewrite.updated_output(_read_payload("/var/app.log", text), "01LOG", CFG)["file"]["content"]
    rows = out.split("\n")
    # The head is the file's own lines, so the CLI's numbers are right for them.
    assert rows[:15] == [f"INFO tick {i}" for i in range(15)]
    assert (
        rows[15].startswith(
            "[memtree] Above: file lines 1-15. Below: Excerpt (lines 1-15, 1 of 1 error/warning lines, last "
        )
        and "numbers at the left are not file lines" in rows[15]
    )
    assert rows[16:18] == ["…", "2501: ERROR disk full"] and rows[-1] == "5000: INFO tick 4999"
    assert "INFO tick 2000" not in out and tokens.count(out) <= CFG["previewTextTokens"]


def test_a_code_preview_shows_the_module_docstring_but_not_its_imports():
    doc = '"""Ledger of pangolin payments."""\n'
    imports = "".join(f"import mod_{i}\n" for i in range(30))
    body = "".join(f"def f_{i}(x):\n    return x + {i}\n\n\n" for i in range(400))
    text = preview.read_text("/p/ledger.py", doc + imports + "\n" + body, 1700, "01ABC", 1000)
    assert text.split("\n")[0] == '"""Ledger of pangolin payments."""' and "import mod_" not in text
    assert "f_0 L" in text  # control: the outline is there


def test_a_restructuredtext_document_is_outlined_by_its_underlined_headings():
    doc = ".. currentmodule:: pkg\n\n" + "".join(
        f"Version 1.{i}\n-----------\n\nReleased 2020-01-{i + 10:02d}\n\n"
        + "".join(f"-   Fix issue {j} that made things fail. :issue:`{j}`\n" for j in range(40))
        + "\n"
        for i in range(9)
    )
    (lines := doc.split("\n")).pop()
    text = rewrite.updated_output(_read_payload("/p/CHANGES.rst", doc), "01DOC", CFG)["file"]["content"]
    rows = text.split("\n")
    assert rows[0] == ".. currentmodule:: pkg" and rows[1].startswith("[memtree] Above: file lines 1-1. Below: Outline")
    assert rows[2].startswith("Version 1.0 L3-48; Version 1.1 L49-94; ")  # sections share lines
    assert lines[2] == "Version 1.0" and lines[48] == "Version 1.1"
    assert "Fix issue" not in text  # control: the prose is not in the preview, its sections are


def test_markdown_headings_skip_fenced_code_and_hash_lines_that_are_not_headings():
    section = "".join(f"Prose line {j} about the tool.\n" for j in range(60))
    doc = (
        "# Tool\n\n"
        + section
        + "## Install\n\n```bash\n# install it\npip install tool\n```\n\n"
        + section
        + "#hashtag in prose\n\n## Use\n\n~~~\n## not a heading either\n~~~\n"
        + section
        + "### Details\n"
        + section
    )
    text = rewrite.updated_output(_read_payload("/p/README.md", doc), "01MD", CFG)["file"]["content"]
    outline = text.split("Outline", 1)[1]
    labels = {r.split(" L", 1)[0].strip() for row in outline.split("\n")[1:] for r in row.split("; ") if " L" in r}
    assert labels == {"# Tool", "## Install", "## Use", "### Details"}, outline
