"""A project file as it is on disk, read the one safe way for captures.

The writer looks at the file a native Read returned part of: the rewrite
outlines a Read cut at the token cap from it, and the ingest plan cuts a
slice by the file's own symbols. Only a regular file inside the project
(after resolving symlinks), opened non-blocking so a FIFO or device never
stalls the writer, and only up to ``max_bytes``. What is read only shapes
what the Read returned; none of it is stored. Standard library only.
"""

from __future__ import annotations

import os
import stat

from memtree.gate.paths import inside

MAX_BYTES = 2_000_000


def project_file_text(path: str, root: str | None, max_bytes: int = MAX_BYTES) -> str | None:
    """The text of ``path`` when it is a regular file inside ``root`` of at most
    ``max_bytes`` bytes, else None (decoded as UTF-8, bad bytes replaced)."""
    if not root:
        return None
    full = os.path.realpath(path)
    if not inside(root, full):
        return None
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace") if len(data) <= max_bytes else None
