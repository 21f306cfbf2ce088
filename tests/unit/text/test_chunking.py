"""Chunking is pure: chunks tile the file exactly; symbols match ast's ranges."""

from __future__ import annotations

import ast
import glob
import os

import mcp

from memtree.text.chunking import WINDOW_LINES, chunk_text, split_lines

SOURCES = sorted(glob.glob(os.path.join(os.path.dirname(mcp.__file__), "**", "*.py"), recursive=True))


def test_chunks_tile_every_line_of_real_files_exactly_once():
    assert len(SOURCES) > 20
    for path in SOURCES:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = split_lines(text)
        assert "".join(lines) == text
        chunked = chunk_text(path, text)
        covered = [n for c in chunked.chunks for n in range(c["start"], c["end"] + 1)]
        assert covered == list(range(1, len(lines) + 1)), path
        for c in chunked.chunks:
            assert c["content"] == "".join(lines[c["start"] - 1 : c["end"]])
            assert c["end"] - c["start"] < WINDOW_LINES


def test_methods_are_named_class_dot_method_with_ast_ranges():
    text = "import os\n\n\nclass A:\n    x = 1\n\n    @staticmethod\n    def f():\n        return 1\n\n    def g(self):\n        pass\n\n\ndef h():\n    pass\n"
    chunked = chunk_text("m.py", text)
    assert [(c["symbol"], c["kind"], c["start"], c["end"]) for c in chunked.chunks] == [
        # blank lines and comments above a symbol belong to its chunk
        (None, "module", 1, 1),
        ("A", "class", 2, 5),
        ("A.f", "method", 6, 9),
        ("A.g", "method", 10, 12),
        ("h", "function", 13, 16),
    ]
    assert {s.name: (s.start, s.end) for s in chunked.symbols} == {
        "A": (4, 12),
        "A.f": (7, 9),
        "A.g": (11, 12),
        "h": (15, 16),
    }
    tree = ast.parse(text)
    assert tree.body[1].end_lineno == 12


def test_form_feeds_do_not_shift_line_numbers_and_syntax_errors_fall_back_to_windows():
    text = "a = 1\x0c\nb = 2\n"
    assert len(split_lines(text)) == 2
    broken = chunk_text("b.py", "def (:\n" * 450)
    assert broken.parse_error and [c["kind"] for c in broken.chunks] == ["window"] * 3


def test_parsing_user_code_emits_no_warnings_for_its_escape_sequences():
    import warnings

    from memtree.text.chunking import chunk_python

    text = 'import re\n\n\ndef words(s):\n    return re.split("\\s+", s)\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        chunked = chunk_python(text)
    assert [str(w.message) for w in caught] == []
    assert [s.name for s in chunked.symbols] == ["words"]  # still parsed as Python, not windows


def test_a_read_slice_is_cut_by_the_files_symbols_tiling_exactly_the_lines_read():
    import random

    from memtree.text.chunking import chunk_read

    rnd = random.Random(16)
    checked = 0
    for path in SOURCES[:40]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = split_lines(text)
        if len(lines) < 50:
            continue
        whole = {n: c["symbol"] for c in chunk_text(path, text).chunks for n in range(c["start"], c["end"] + 1)}
        for _ in range(5):
            start = rnd.randint(1, len(lines) - 10)
            end = rnd.randint(start, len(lines))
            part = "".join(lines[start - 1 : end])
            for min_bytes, symbol_min, source in ((0, 0, text), (0, 0, None), (50, 0, text), (50, 512, text)):
                chunks = chunk_read(path, part, start, source, min_bytes, symbol_min)
                covered = [n for c in chunks for n in range(c["start"], c["end"] + 1)]
                assert covered == list(range(start, end + 1)), (path, start, end, min_bytes)
                assert "".join(c["content"] for c in chunks) == part
                for c in chunks:
                    assert c["content"] == "".join(lines[c["start"] - 1 : c["end"]])
                    if source is not None and min_bytes == symbol_min == 0:  # the file's own cuts, clipped to the slice
                        assert {whole[n] for n in range(c["start"], c["end"] + 1)} == {c["symbol"]}
                    if min_bytes and len(chunks) > 1:
                        assert len(c["content"].encode()) >= min_bytes
                    if symbol_min and len(chunks) > 1 and c["kind"] != "window":
                        assert len(c["content"].encode()) >= symbol_min
                    if source is not None:  # a joined chunk names every symbol it holds, none it does not
                        held = {whole[n] for n in range(c["start"], c["end"] + 1)} - {None}
                        assert set(c.get("symbols") or [c["symbol"]]) - {None} == held, (path, c["start"])
            checked += 1
    assert checked >= 50


def test_a_text_chunked_again_comes_from_the_memo_equal_and_unshared_and_the_memo_stays_bounded():
    from memtree.text import chunking

    memo = chunking._Memo(max_chars=40_000)
    texts = [f"def f{i}():\n    return {i}\n" * 200 for i in range(12)]  # ~5 KB each
    for t in texts:
        memo.put(t, chunking._chunk_python(t, split_lines(t)))
    assert memo.held <= 40_000
    kept = [t for t in texts if memo.get(t) is not None]
    assert kept == texts[-len(kept) :] and 0 < len(kept) < len(texts)  # the oldest went first
    memo.put("x" * 20_000, chunking._chunk_python("x = 1\n", ["x = 1\n"]))  # over a quarter: never kept
    assert memo.get("x" * 20_000) is None

    path = max(SOURCES, key=os.path.getsize)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    first, again = chunk_text(path, text), chunk_text(path, text)
    fresh = chunking._chunk_python(text, split_lines(text))
    assert [(c["start"], c["end"], c["symbol"], c["content"]) for c in again.chunks] == [
        (c["start"], c["end"], c["symbol"], c["content"]) for c in fresh.chunks
    ]
    assert [repr(s) for s in again.symbols] == [repr(s) for s in fresh.symbols]
    again.chunks[0]["symbol"] = "changed by a caller"
    assert chunk_text(path, text).chunks[0]["symbol"] == first.chunks[0]["symbol"] != "changed by a caller"
