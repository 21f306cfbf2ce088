"""The wrapped tools (read, grep, bash): each does the work, stores the full
output through the writer and returns a slice that fits the caller's budget.

A tool is ``async def tool(svc, **args) -> str`` (see memtree/front/services.py).
Bad arguments raise memtree.errors.BadRequest with a message naming the
argument; the front turns it into a clear tool error.
"""

from __future__ import annotations

import os

from memtree import gate, tokens
from memtree.errors import BadRequest, Refused
from memtree.front.opts import call_repr  # noqa: F401  (the tools' import point)
from memtree.text import budget


def check_budget(value) -> int:
    return budget.check(value)


def resolve_path(svc, path, what: str = "path") -> tuple[str, str]:
    """(absolute real path, path to show the agent) for a path argument.

    Relative paths are taken from the project root. Refused, before anything
    is opened or stored, when the path as given, with ``..`` folded, or after
    resolving symlinks is on the secret-path denylist (gate.path_denied
    checks all three).
    """
    if not isinstance(path, str) or not path.strip():
        raise BadRequest(f"{what} must be a non-empty string (a file path relative to the project root, or absolute)")
    if "\x00" in path:
        raise BadRequest(f"{what} contains a NUL byte")
    root = svc.project_root
    reason = gate.path_denied(path, svc.config.path.deny, base_dir=root)
    if reason:
        raise Refused(f"{path}: refused, {reason} (secret files are never read or stored by memtree)")
    full = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    why = gate.refused_outside(full, root, getattr(svc.config.path, "allowOutside", None))
    if why:
        raise Refused(
            f"{path}: refused, it is {why}; "
            f"to allow it, add a glob matching {full} to path.allowOutside in .memtree/config.json"
        )
    return full, display_path(root, full)


def display_path(root: str, full: str) -> str:
    """Project-relative when inside the project, else absolute."""
    rel = os.path.relpath(full, root)
    return full if rel == ".." or rel.startswith("../") else rel


def count(text: str) -> int:
    return tokens.count(text)


def finish(text: str, budget_tokens: int) -> str:
    """The last guard: the promise is never more than ``budget_tokens``."""
    if tokens.count(text) <= budget_tokens:
        return text
    return tokens.fit(text, budget_tokens)


__all__ = ["check_budget", "call_repr", "resolve_path", "display_path", "finish", "BadRequest", "Refused"]
