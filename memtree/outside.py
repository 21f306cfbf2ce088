"""The project rule: memtree stores files inside the project, and outside it
only what ``path.allowOutside`` names. One rule for the wrapped read/grep
(memtree/tools) and for hook captures of native Read/Grep (memtree/capture/ingest.py).

Paths are compared after resolving symlinks, so a link inside the project
pointing out of it is outside. Standard library only (the hook's spool path
imports it).
"""

from __future__ import annotations

import fnmatch
import os


def inside(root: str, full: str) -> bool:
    """Whether the real path ``full`` is the project root or under it."""
    real_root = os.path.realpath(root)
    return full == real_root or full.startswith(real_root.rstrip(os.sep) + os.sep)


def allowed_outside(full: str, globs) -> bool:
    """Whether a glob of ``path.allowOutside`` matches ``full`` (a glob naming a folder covers its files)."""
    for g in globs or ():
        if not isinstance(g, str):
            continue
        g = os.path.expanduser(g)
        if fnmatch.fnmatchcase(full, g) or fnmatch.fnmatchcase(full, g.rstrip("/") + "/*"):
            return True
    return False


def refused_outside(path: str, root: str, globs, base_dir: str | None = None) -> str | None:
    """Why ``path`` (relative to ``base_dir``, default ``root``) may not be stored, or None."""
    full = os.path.realpath(os.path.join(base_dir or root, os.path.expanduser(path)))
    if inside(root, full) or allowed_outside(full, globs):
        return None
    return f"outside the project {root} (after resolving symlinks), not in path.allowOutside"
