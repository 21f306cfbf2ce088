"""Source distributions from PyPI for the evals: real code nobody here wrote.

Fetched with pip (the ordinary client, through whatever index this machine is
allowed to reach), source only, no dependencies, into a cache outside the repo.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys


def download(name: str, version: str, dest: str, filename: str | None = None, timeout: float = 600) -> str:
    """The path of ``name==version``'s .tar.gz sdist in ``dest``, downloaded if
    missing; ``filename`` when the index names it otherwise (a normalised name)."""
    pattern = os.path.join(dest, filename or f"{name}-{version}.tar.gz")
    found = glob.glob(pattern)
    if not found:
        os.makedirs(dest, exist_ok=True)
        argv = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*argv, f"{name}=={version}", "-d", dest], check=True, timeout=timeout)
        found = glob.glob(pattern)
    if not found:
        raise SystemExit(f"pip download {name}=={version} left no {os.path.basename(pattern)} in {dest}")
    return found[0]
