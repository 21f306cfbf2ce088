"""The built wheel installs everything under the one `memtree` namespace."""

import os
import shutil
import subprocess
import zipfile

import pytest

from tests.support import PYTHON, REPO, deadline

REPO = REPO
# source folder -> its package in the wheel (pyproject's package-dir)
LAYOUT = {
    "memtree": "memtree",
    "actors": "memtree/actors",
    "supervisor": "memtree/supervisor",
    "hooks": "memtree/hooks",
    "config": "memtree/config",
    "eval": "memtree/eval",
}


def _source_modules() -> set[str]:
    out = set()
    for src, dst in LAYOUT.items():
        for dirpath, dirnames, filenames in os.walk(os.path.join(REPO, src)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = os.path.relpath(dirpath, os.path.join(REPO, src))
            for f in filenames:
                if f.endswith(".py"):
                    out.add(os.path.normpath(os.path.join(dst, rel, f)))
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    # Built from a copy so the checkout gets no build/ or egg-info churn.
    # Build isolation fetches setuptools>=68 from the package index (pyproject's
    # build-system); the venv's own setuptools may be older.
    src = tmp_path_factory.mktemp("src")
    for name in ["pyproject.toml", "README.md", *LAYOUT]:
        path = os.path.join(REPO, name)
        if os.path.isdir(path):
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [PYTHON, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=deadline(300),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (whl,) = [p for p in os.listdir(out) if p.endswith(".whl")]
    with zipfile.ZipFile(out / whl) as z:
        yield {n: z.read(n) for n in z.namelist() if n.endswith((".py", ".txt", ".json"))}, z.namelist()


def test_every_module_is_under_memtree_and_nothing_else_is_top_level(wheel):
    _, names = wheel
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"memtree", "memtree-0.1.0.dist-info"}
    contents, _ = wheel
    assert contents["memtree-0.1.0.dist-info/top_level.txt"].decode().split() == ["memtree"]


def test_every_source_module_is_in_the_wheel(wheel):
    _, names = wheel
    packaged = {n for n in names if n.endswith(".py")}
    assert _source_modules() - packaged == set()
    assert {
        "memtree/supervisor/main.py",
        "memtree/actors/base.py",
        "memtree/config/defaults.py",
        "memtree/cli.py",
    } <= packaged


def test_console_scripts_memtree_and_memtree_hook_are_declared(wheel):
    contents, _ = wheel
    entry = contents["memtree-0.1.0.dist-info/entry_points.txt"].decode()
    scripts = dict(
        line.replace(" ", "").split("=", 1)
        for line in entry.split("[console_scripts]", 1)[1].strip().splitlines()
        if "=" in line
    )
    assert scripts["memtree"] == "memtree.cli:main"
    assert scripts["memtree-hook"] == "memtree.hooks.post_tool_use:main"
