"""One log format for every actor.

Actors log to stderr; the supervisor points each child's stderr (and, except
for the front, its stdout) at ``<store>/logs/<actor>.log``, so a crash's
traceback lands in the same file as the actor's own lines.
"""

from __future__ import annotations

import logging
import os
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s"


def configure_logging(actor: str, level: str | None = None) -> logging.Logger:
    root = logging.getLogger()
    root.handlers.clear()
    root.setLevel(level or os.environ.get("MEMTREE_LOG_LEVEL", "INFO"))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    return logging.getLogger(actor)
