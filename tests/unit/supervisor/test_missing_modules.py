"""A built-in actor or a tool whose module is missing is a startup error naming
it (a broken install, or a move that missed one module string), never a system
that quietly runs without it; only an actor the user added may be missing."""

import os
import shutil
import signal
import subprocess

from tests.conftest import REPO
from tests.support import COLD_START_S, PYTHON, spawn, wait_until

_TREE = ("memtree", "actors", "supervisor", "config", "hooks")


def _tree_without(tmp_path, *missing: str) -> str:
    """A copy of the product tree with ``missing`` files removed (a checkout maps
    actors/ supervisor/ ... into memtree itself: memtree/__init__.py)."""
    tree = tmp_path / "tree"
    for top in _TREE:
        shutil.copytree(os.path.join(REPO, top), tree / top, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(REPO, "pyproject.toml"), tree)
    for rel in missing:
        os.unlink(tree / rel)
    return str(tree)


# The checkout's editable install maps memtree.actors & co. back to this worktree
# for any module the copy lacks; without its finder the copy is all there is,
# as in an installed wheel.
_ONLY_THE_TREE = (
    "import runpy, sys; sys.meta_path[:] = [f for f in sys.meta_path if 'Editable' not in "
    "getattr(f, '__name__', type(f).__name__)]; sys.argv[0] = '-m'; "
    "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)"
)


def _run(tree: str, tmp_path, module: str, *argv: str) -> subprocess.CompletedProcess:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = {"PYTHONPATH": tree, "MEMTREE_HOME": str(tmp_path / "home")}
    proc = spawn(
        [PYTHON, "-c", _ONLY_THE_TREE, module, *argv],
        env=env,
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=COLD_START_S)
    finally:
        try:  # a serve that started after all must not outlive the test
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr.strip()


def test_the_copied_tree_is_the_one_imported(tmp_path):
    # The control: the copy, not the checkout, is what the runs below import.
    tree = _tree_without(tmp_path)
    with open(os.path.join(tree, "probe.py"), "w") as f:  # on PYTHONPATH with the tree
        f.write("import memtree.actors.writer as w, memtree.tools.grep as g\nprint(w.__file__, g.__file__)\n")
    done = _run(tree, tmp_path, "probe")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        os.path.join(tree, "actors", "writer.py"),
        os.path.join(tree, "memtree", "tools", "grep.py"),
    ]


def test_a_missing_walker_module_is_a_startup_error_naming_it(tmp_path):
    tree = _tree_without(tmp_path, "actors/walkers/dedupe.py")
    assert _one_line_error(_run(tree, tmp_path, "memtree.cli", "serve", "--no-front")) == (
        "memtree serve: built-in actor walker.dedupe: module memtree.actors.walkers.dedupe cannot be found"
        " (a broken install?)"
    )


def test_a_missing_writer_module_is_a_startup_error_naming_it(tmp_path):
    tree = _tree_without(tmp_path, "actors/writer.py")
    assert _one_line_error(_run(tree, tmp_path, "memtree.cli", "serve", "--no-front")) == (
        "memtree serve: built-in actor writer: module memtree.actors.writer cannot be found (a broken install?)"
    )


def test_a_missing_tool_module_is_a_startup_error_naming_it_for_serve_and_the_front(tmp_path):
    tree = _tree_without(tmp_path, "memtree/tools/grep.py")
    expected = "tool module not found (grep: memtree.tools.grep): memtree is not installed whole"
    assert _one_line_error(_run(tree, tmp_path, "memtree.cli", "serve")) == f"memtree serve: {expected}"
    # The front run on its own (no supervisor) refuses too, instead of listing three tools
    # (its log goes to stderr then: one log line, then the error).
    done = _run(tree, tmp_path, "memtree.actors.mcp_front")
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"memtree mcp: {expected}"


def test_a_user_added_actor_whose_module_is_missing_is_skipped_and_the_rest_run(system_factory):
    s = system_factory
    off = {name: {"enabled": False} for name in s.expected}  # one cheap actor is enough to watch
    s.write_config(
        actors={
            **off,
            "extra.gone": {"module": "tests.support.actors.gone"},
            "extra.sleepy": {"module": "tests.support.actors.sleepy"},
        }
    )
    s.serve()
    wait_until(lambda: s.actor("extra.sleepy", {"RUNNING"}), timeout=COLD_START_S, what="extra.sleepy RUNNING")
    assert [a["name"] for a in s.status()] == ["extra.sleepy"]
    assert "extra.gone: module tests.support.actors.gone is not importable, skipped" in s.log_tail(lines=40)
