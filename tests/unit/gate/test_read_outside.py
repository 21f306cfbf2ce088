"""read and grep stay inside the project (after resolving symlinks) unless path.allowOutside opts in."""

from __future__ import annotations

import os

import pytest

from memtree.errors import Refused
from memtree.tools.grep import grep
from memtree.tools.read import read
from tests.support.tools_harness import Harness

SECRETISH = "outside-the-project marker line 7f3a"


def _outside(tmp_path) -> str:
    folder = tmp_path / "elsewhere"
    folder.mkdir(exist_ok=True)
    path = folder / "notes.txt"
    path.write_text(f"{SECRETISH}\nsecond line\n")
    return str(path)


def test_paths_outside_the_project_are_refused_and_nothing_is_stored(h, tmp_path):
    outside = _outside(tmp_path)
    h.write("inside.txt", "inside the project, readable\n")
    os.symlink(outside, os.path.join(h.root, "link.txt"))
    before = h.counts()
    for path in ("../elsewhere/notes.txt", outside, "link.txt", "sub/../../elsewhere/notes.txt"):
        with pytest.raises(Refused) as e:
            h.run(read, path)
        assert "outside the project" in e.value.message and "path.allowOutside" in e.value.message
    with pytest.raises(Refused):
        h.run(grep, "marker", path="../elsewhere")
    assert h.counts() == before
    assert h.rows("SELECT count(*) FROM nodes WHERE content LIKE ?", (f"%{SECRETISH}%",)) == [(0,)]
    # Positive control: a file inside the project is read and stored.
    assert "inside the project, readable" in h.run(read, "inside.txt")
    assert h.counts() != before


def test_allow_outside_globs_opt_in(tmp_path):
    outside = _outside(tmp_path)
    h = Harness(tmp_path, {"path": {"allowOutside": [str(tmp_path / "elsewhere") + "/*.txt"]}})
    try:
        assert SECRETISH in h.run(read, outside)
        assert SECRETISH in h.run(read, "../elsewhere/notes.txt")
        stored = h.rows("SELECT count(*) FROM nodes WHERE content LIKE ?", (f"%{SECRETISH}%",))[0][0]
        assert stored >= 1
        other = tmp_path / "other.txt"
        other.write_text("not matched by the glob\n")
        with pytest.raises(Refused):
            h.run(read, str(other))
    finally:
        h.close()
