import hashlib
import os
import stat
import subprocess
import tempfile

from memtree import paths


def _git(cwd, *args):
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
        },
    )


def test_project_hash_in_git_is_root_plus_first_commit(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMTREE_HOME", str(tmp_path / "home"))
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "a.txt").write_text("a")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-qm", "first")
    first = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    root = os.path.realpath(repo)
    want = hashlib.sha256(f"{root}:{first}".encode()).hexdigest()[:16]
    assert paths.compute_project(str(repo / "sub")) == (root, want, True)
    # the cached lookup (what the hook uses) agrees, from a subdirectory too
    assert paths.resolve_project(str(repo / "sub")) == (root, want)
    assert paths.resolve_project(str(repo)) == (root, want)


def test_project_hash_outside_git_is_the_absolute_path(tmp_path):
    d = tmp_path / "plain"
    d.mkdir()
    real = os.path.realpath(d)
    assert paths.compute_project(str(d)) == (real, hashlib.sha256(real.encode()).hexdigest()[:16], False)


def test_repo_without_commits_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMTREE_HOME", str(tmp_path / "home"))
    repo = tmp_path / "fresh"
    repo.mkdir()
    _git(repo, "init", "-q")
    root, h = paths.resolve_project(str(repo))
    assert h == hashlib.sha256(os.path.realpath(repo).encode()).hexdigest()[:16]
    assert not (tmp_path / "home" / "roots").exists() or not os.listdir(tmp_path / "home" / "roots")


def test_store_location_honours_memtree_home_and_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMTREE_HOME", str(tmp_path / "h"))
    p = paths.store_paths("/proj", "0123456789abcdef")
    assert p.store_dir == str(tmp_path / "h" / "0123456789abcdef")
    assert p.db == os.path.join(p.store_dir, "store.db")
    paths.prepare_store(p)
    for d in (p.store_dir, p.run_dir, p.log_dir):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    assert p.endpoint("write") == f"ipc://{p.run_dir}/write.sock"


def test_deep_store_moves_sockets_to_a_short_runtime_dir(tmp_path, monkeypatch):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv("MEMTREE_HOME", str(deep))
    short = tmp_path / "r"
    short.mkdir()
    # else this run's short runtime base (tests/conftest.py), not /tmp: nothing left behind there
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(short) if len(str(short)) < 40 else os.environ["XDG_RUNTIME_DIR"])
    p = paths.store_paths("/proj", "0123456789abcdef")
    assert not p.run_dir.startswith(p.store_dir)
    assert p.run_dir.endswith(os.path.join(f"memtree-{os.getuid()}", "0123456789abcdef"))
    assert len(paths.socket_path(p.endpoint("sup-4194304.ctl"))) <= paths.MAX_IPC_PATH
    # a runtime dir that is itself too long is skipped for a shorter one
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    deep.mkdir(parents=True)
    p2 = paths.store_paths("/proj", "0123456789abcdef")
    assert len(paths.socket_path(p2.endpoint("sup-4194304.ctl"))) <= paths.MAX_IPC_PATH
    paths.prepare_store(p)
    assert stat.S_IMODE(os.stat(p.run_dir).st_mode) == 0o700
    # a shallow store keeps its sockets inside the store directory (control)
    shallow = tempfile.mkdtemp(prefix="h", dir="/tmp")
    try:
        monkeypatch.setenv("MEMTREE_HOME", shallow)
        assert paths.store_paths("/proj", "0123456789abcdef").run_dir == os.path.join(
            shallow, "0123456789abcdef", "run"
        )
    finally:
        os.rmdir(shallow)


def test_every_entry_point_starts_from_the_same_directory(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    assert paths.start_dir() == str(tmp_path)
    assert paths.start_dir(fallback="/payload/cwd") == "/payload/cwd"
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "/claude/project")
    assert paths.start_dir(fallback="/payload/cwd") == "/claude/project"  # stable while the agent cd's
    assert paths.start_dir("/explicit") == "/explicit"
