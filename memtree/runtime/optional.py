"""Optional (soft) dependencies: what cannot be imported here, and why, in one line.

A walker or provider that needs one calls ``missing(...)`` and, given a
reason, idles and shows it in ``memtree ctl status`` instead of crashing
(DESIGN.md: a missing soft dependency never crashes a walker).
"""

from __future__ import annotations

import importlib


def missing(*modules: str) -> str | None:
    """None when every module imports; else the first failure, named."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            detail = str(e).splitlines()[0] if str(e) else type(e).__name__
            return f"needs the package {name!r}, which cannot be imported here ({detail})"
    return None
