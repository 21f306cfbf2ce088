"""Where a project's store lives: project hash, store directory, socket endpoints.

Standard library only, and only cheap imports at module level: the capture
hook imports this under ``python -I -S`` where every millisecond counts
(dataclasses alone costs ~35 ms cold), so heavier modules load on demand.
"""

import os

try:  # hashlib loads OpenSSL (~7 ms under -I -S); the builtin sha256 is enough here
    from _sha256 import sha256 as _sha256
except ImportError:  # pragma: no cover - Python 3.12+ renamed the module
    try:
        from _sha2 import sha256 as _sha256
    except ImportError:
        from hashlib import sha256 as _sha256

# IPC socket paths longer than this fail at bind/connect (sun_path is 108 bytes).
MAX_IPC_PATH = 107
# The longest socket file name we create ("sup-4194304.ctl.sock" plus slack).
_LONGEST_SOCK_NAME = 32


def memtree_home() -> str:
    return os.path.abspath(os.path.expanduser(os.environ.get("MEMTREE_HOME") or "~/.memtree"))


def run_git(cwd: str, *args: str, timeout: float = 5):
    """``git args`` in ``cwd`` (text captured, no stdin): the CompletedProcess, or None where git
    could not run (not installed, timed out)."""
    import subprocess

    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError):
        return None


def _git(cwd: str, *args: str) -> str | None:
    out = run_git(cwd, *args)
    return out.stdout.strip() if out is not None and out.returncode == 0 and out.stdout.strip() else None


def find_git_root(cwd: str) -> str | None:
    """The nearest ancestor holding ``.git``, found without spawning git."""
    d = os.path.abspath(cwd)
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def _hash16(text: str) -> str:
    return _sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def compute_project(cwd: str) -> tuple[str, str, bool]:
    """(project root, project hash, hash is final) as DESIGN.md defines them.

    hash = sha256(git root + ":" + first commit sha)[:16]; outside git, or when
    git fails (no commits yet), sha256(absolute workspace path)[:16]. Only the
    first form is final: a repository without commits gets one later.
    """
    cwd = os.path.realpath(cwd)
    root = _git(cwd, "rev-parse", "--show-toplevel")
    if root:
        firsts = _git(root, "rev-list", "--max-parents=0", "HEAD")
        if firsts:
            first = sorted(firsts.split())[0]
            return root, _hash16(f"{root}:{first}"), True
        return root, _hash16(root), False
    return cwd, _hash16(cwd), False


def _cache_path(home: str, root: str) -> str:
    return os.path.join(home, "roots", _hash16(root))


def resolve_project(cwd: str) -> tuple[str, str]:
    """Like compute_project, cached per git root so the hook need not spawn git
    (two git calls cost more than the rest of the hook)."""
    home = memtree_home()
    root = find_git_root(os.path.realpath(cwd))
    if root is None and "GIT_DIR" not in os.environ:
        # No .git above: git would fail too, so this is compute_project's
        # outside-git answer without spawning git (the hook runs here).
        real = os.path.realpath(cwd)
        return real, _hash16(real)
    if root is not None:
        try:
            with open(_cache_path(home, root), encoding="utf-8") as f:
                cached_root, cached_hash = f.read().split("\n")[:2]
            if cached_root == root and len(cached_hash) == 16:
                return cached_root, cached_hash
        except (OSError, ValueError):
            pass
    root2, phash, final = compute_project(cwd)
    if final and root2 == root:
        remember_project(root2, phash)
    return root2, phash


def remember_project(root: str, phash: str) -> None:
    home = memtree_home()
    path = _cache_path(home, root)
    try:
        makedirs_private(os.path.dirname(path))
        tmp = f"{path}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8") as f:
            f.write(f"{root}\n{phash}\n")
        os.replace(tmp, path)
    except OSError:
        pass  # a cache miss only costs a git call next time


class StorePaths:
    """Every file and socket of one project's store."""

    __slots__ = ("project_root", "project_hash", "store_dir", "run_dir")

    def __init__(self, project_root: str, project_hash: str, store_dir: str, run_dir: str):
        self.project_root = project_root
        self.project_hash = project_hash
        self.store_dir = store_dir
        self.run_dir = run_dir

    def __repr__(self) -> str:
        return f"StorePaths({self.store_dir!r}, run_dir={self.run_dir!r})"

    @property
    def db(self) -> str:
        return os.path.join(self.store_dir, "store.db")

    @property
    def spool(self) -> str:
        return os.path.join(self.store_dir, "spool.jsonl")

    @property
    def log_dir(self) -> str:
        return os.path.join(self.store_dir, "logs")

    def log_file(self, actor: str) -> str:
        return os.path.join(self.log_dir, f"{actor}.log")

    def lock_file(self, name: str) -> str:
        return os.path.join(self.run_dir, f"{name}.lock")

    def endpoint(self, name: str) -> str:
        return endpoint(self.run_dir, name)


def endpoint(run_dir: str, name: str) -> str:
    """The one place a ZeroMQ endpoint is built."""
    return f"ipc://{run_dir}/{name}.sock"


def socket_path(ep: str) -> str:
    return ep[len("ipc://") :] if ep.startswith("ipc://") else ep


def _fits(run_dir: str) -> bool:
    return len(run_dir) + 1 + _LONGEST_SOCK_NAME <= MAX_IPC_PATH


def _runtime_dir(project_hash: str) -> str:
    """A short per-user directory for sockets, keyed by the project hash."""
    # tempfile.gettempdir()'s choice without importing tempfile (it pulls in re,
    # random, shutil: ~25 ms in the hook, which resolves this path on every call).
    env = os.environ
    bases = [env.get("XDG_RUNTIME_DIR"), env.get("TMPDIR"), env.get("TEMP"), env.get("TMP"), "/tmp"]
    for base in bases:
        if base and os.path.isdir(base):
            run_dir = os.path.join(base, f"memtree-{os.getuid()}", project_hash)
            if _fits(run_dir):
                return run_dir
    return os.path.join("/tmp", f"memtree-{os.getuid()}", project_hash)


def store_paths(project_root: str, project_hash: str, home: str | None = None) -> StorePaths:
    home = home or memtree_home()
    store_dir = os.path.join(home, project_hash)
    run_dir = os.path.join(store_dir, "run")
    if not _fits(run_dir):  # too deep for sun_path
        run_dir = _runtime_dir(project_hash)
    return StorePaths(project_root, project_hash, store_dir, run_dir)


def start_dir(explicit: str | None = None, fallback: str | None = None) -> str:
    """Where the project is resolved from, the same for every entry point:
    an explicit --project, else Claude Code's CLAUDE_PROJECT_DIR (stable while
    the agent cd's around; set for MCP servers, hooks and its Bash tool), else
    ``fallback`` (the hook passes the payload's cwd), else the process cwd."""
    return explicit or os.environ.get("CLAUDE_PROJECT_DIR") or fallback or os.getcwd()


def paths_for_cwd(cwd: str) -> StorePaths:
    root, phash = resolve_project(cwd)
    return store_paths(root, phash)


def makedirs_private(path: str) -> None:
    """``path`` and every missing parent, each 0700 (os.makedirs makes parents 0755)."""
    missing = []
    d = os.path.abspath(path)
    while not os.path.isdir(d):
        missing.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)  # whatever the umask


def prepare_store(paths: StorePaths) -> None:
    """Create MEMTREE_HOME and the store, run and log directories, all 0700
    (the store's own directories are made 0700 even if they existed)."""
    for d in (paths.store_dir, paths.run_dir, paths.log_dir):
        makedirs_private(d)
        os.chmod(d, 0o700)
        if d == paths.run_dir and not d.startswith(paths.store_dir):
            os.chmod(os.path.dirname(d), 0o700)  # the per-user runtime dir
