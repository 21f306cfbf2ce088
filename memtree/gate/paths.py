"""Path denial: files memtree must not store.

- ``path_denied(path, extra, base_dir)``: secret files (DESIGN.md's list plus
  a few more), checked on the path as given and on its realpath, so ``..`` and
  symlinks do not get around it.
- ``refused_outside(path, root, globs, base_dir)``: the project rule. memtree
  stores files inside the project, and outside it only what
  ``path.allowOutside`` names; one rule for the wrapped read/grep
  (memtree/tools) and for hook captures of native Read/Grep
  (memtree/capture/ingest.py). Paths are compared after resolving symlinks,
  so a link inside the project pointing out of it is outside.

Standard library only (the hook's spool path imports it).
"""

from __future__ import annotations

import fnmatch
import os

DENY_DIRS = {".ssh", ".gnupg"}
DENY_NAMES = (
    ".env*",
    ".envrc",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "credentials.json",
    "service-account*.json",
    "*.tfstate",
    "*.tfstate.backup",
    ".htpasswd",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    ".vault-token",
)
# (directory, file name) pairs: files that hold nothing but credentials.
_DENY_IN_DIR = {(".aws", "credentials"), (".docker", "config.json"), (".kube", "config"), ("gh", "hosts.yml")}


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def _check(path: str, extra_globs, base_dir: str | None) -> str | None:
    parts = _parts(path)
    if not parts:
        return None
    lower = [p.lower() for p in parts]
    for d in lower[:-1]:
        if d in DENY_DIRS:
            return f"secret directory {d}/"
    if lower[-1] in DENY_DIRS:
        return f"secret directory {lower[-1]}/"
    if len(lower) >= 2 and (lower[-2], lower[-1]) in _DENY_IN_DIR:
        return f"secret file {lower[-2]}/{lower[-1]}"
    for pat in DENY_NAMES:
        if fnmatch.fnmatchcase(lower[-1], pat):
            return f"secret file pattern {pat}"
    rel = None
    if base_dir and os.path.isabs(path):
        rel = os.path.relpath(path, base_dir)
    for pat in extra_globs or ():
        p = pat.rstrip("/")
        if "/" in p:
            cands = [path.replace("\\", "/")] + ([rel.replace("\\", "/")] if rel else [])
            if any(fnmatch.fnmatchcase(c, p) or fnmatch.fnmatchcase(c, p + "/*") for c in cands):
                return f"matches path.deny pattern {pat!r}"
        elif any(fnmatch.fnmatchcase(c, p) for c in parts):
            return f"matches path.deny pattern {pat!r}"
    return None


def path_denied(path: str, extra_globs=(), base_dir: str | None = None) -> str | None:
    """Why a file at ``path`` must not be stored, or None.

    Checks the path as given, made absolute against ``base_dir`` with ``..``
    folded, and its realpath (symlinks resolved). Glob patterns from config
    ``path.deny`` without a ``/`` match any path component; with a ``/`` they
    match the whole path (absolute, or relative to ``base_dir``).
    """
    if not isinstance(path, str) or not path:
        return None
    full = path if os.path.isabs(path) else os.path.join(base_dir or os.getcwd(), path)
    candidates = [path, os.path.normpath(full)]
    try:
        candidates.append(os.path.realpath(full))
    except (OSError, ValueError):
        pass
    for cand in candidates:
        reason = _check(cand, extra_globs, base_dir)
        if reason:
            return reason
    return None


# -- the project rule ------------------------------------------------------------


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
