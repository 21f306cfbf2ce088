"""The PYTHONPATH memtree's own processes run with: nothing from the user's project.

Actors start with ``-P`` (the cwd, the project, is not put on sys.path), but
PYTHONPATH is honoured: a user whose shell points it into the project (say
``PYTHONPATH=src``) would have the project's ``json.py``, ``zmq/`` or
``memtree/`` shadow ours. The supervisor gives each child the environment of
``child_env()``: PYTHONPATH without entries inside the project (an empty entry
is the cwd, the project too), plus the folder holding the ``memtree`` package
when memtree is not importable from the site dirs (a checkout run through
PYTHONPATH). The user's own value travels in ``ENV_USER`` and
``restore_user_pythonpath()`` puts it back in an actor's environment once its
interpreter has started, so commands run for the user (the ``bash`` tool)
see the PYTHONPATH the user set. Standard library only.
"""

from __future__ import annotations

import os
import sys

from memtree.gate.paths import inside

ENV_USER = "MEMTREE_USER_PYTHONPATH"  # "" when the user had none (Python treats an empty one as unset)


def memtree_root() -> str:
    """The folder that holds the ``memtree`` package in use."""
    import memtree

    return os.path.dirname(os.path.dirname(os.path.abspath(memtree.__file__)))


def _real(path: str, cwd: str) -> str:
    return os.path.realpath(os.path.join(cwd, path))


def needs_pythonpath(root: str) -> bool:
    """Whether this interpreter imports memtree (in ``root``) only through PYTHONPATH:
    asks every import finder (an editable install's included) with PYTHONPATH's
    entries left out of the path."""
    import importlib.machinery

    env = os.environ.get("PYTHONPATH")
    from_env = {_real(p, os.getcwd()) for p in env.split(os.pathsep)} if env else set()
    path = [p for p in sys.path if p and _real(p, os.getcwd()) not in from_env]
    want = os.path.join(os.path.realpath(root), "memtree", "__init__.py")
    for finder in sys.meta_path:
        try:
            if isinstance(finder, type) and issubclass(finder, importlib.machinery.PathFinder):
                spec = finder.find_spec("memtree", path)
            elif hasattr(finder, "find_spec"):
                spec = finder.find_spec("memtree", None)
            else:
                continue
        except (ImportError, ValueError, TypeError):
            continue
        if spec is not None and spec.origin and os.path.realpath(spec.origin) == want:
            return False
    return True


def sanitized(pythonpath: str | None, project_root: str, cwd: str | None = None) -> str | None:
    """``pythonpath`` without the entries inside ``project_root``, with memtree's own
    folder when it is needed to import memtree; None when nothing is left."""
    cwd = cwd or project_root
    project = os.path.realpath(project_root)
    entries = (pythonpath or "").split(os.pathsep) if pythonpath else []
    root = os.path.realpath(memtree_root())
    kept = []
    for entry in entries:
        real = _real(entry, cwd) if entry else project  # "" is the cwd
        if inside(project, real) and real != root:
            continue
        if real not in kept:
            kept.append(real)
    if root not in kept and needs_pythonpath(root):
        kept.insert(0, root)
    return os.pathsep.join(kept) or None


def child_env(env: dict, project_root: str) -> dict:
    """``env`` for a memtree child process started in ``project_root``."""
    out = dict(env)
    user = env.get(ENV_USER, env.get("PYTHONPATH", ""))  # a nested start keeps the first value
    clean = sanitized(env.get("PYTHONPATH"), project_root)
    if clean is None:
        out.pop("PYTHONPATH", None)
    else:
        out["PYTHONPATH"] = clean
    out[ENV_USER] = user
    return out


def restore_user_pythonpath() -> None:
    """After start-up (sys.path is fixed by then): the user's PYTHONPATH back, for
    the commands this process runs on the user's behalf."""
    user = os.environ.pop(ENV_USER, None)
    if user is None:
        return
    if not user:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = user
