"""``memtree redact --rescan``: re-apply the current redaction gate to the whole store.

Reads the ids of rows cleaned by an older gate (``metadata.redaction``) from a
read-only connection and sends them to the writer in batches (``Redact``), so
only the writer writes. A progress bar goes to stderr; one summary line to
stdout.
"""

from __future__ import annotations

import argparse
import os
import sys

BATCH = 200


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = width * done // total if total else width
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} rows"


def main(argv: list[str] | None = None) -> int:
    from memtree import protocol
    from memtree.errors import MemtreeError
    from memtree.gate import REDACTION_VERSION
    from memtree.paths import paths_for_cwd, start_dir
    from memtree.runtime.client import Caller
    from memtree.store import sweeps
    from memtree.store.db import open_read

    p = argparse.ArgumentParser(prog="memtree redact", description="Re-apply the current redaction rules.")
    p.add_argument(
        "--rescan",
        action="store_true",
        required=True,
        help="re-redact every stored row cleaned by an older rule set (needs the writer running)",
    )
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    args = p.parse_args(argv)
    paths = paths_for_cwd(start_dir(args.project))
    if not os.path.exists(paths.db):
        print(f"memtree redact: no store yet for {paths.project_root}", file=sys.stderr)
        return 1
    conn = open_read(paths.db)
    try:
        ids = sweeps.cleaned_before(conn, REDACTION_VERSION)
    finally:
        conn.close()
    writer = Caller(paths.endpoint(protocol.SOCK_WRITE), src="redact", timeout_ms=10000)
    changed = 0
    try:
        for i in range(0, len(ids), BATCH):
            try:
                res = writer.call(protocol.Redact(ids=ids[i : i + BATCH]))
            except MemtreeError as e:
                print(
                    f"\nmemtree redact: the writer did not answer ({e.message}); is `memtree serve` running?",
                    file=sys.stderr,
                )
                return 1
            changed += len(res.get("changed") or [])
            print(_bar(min(i + BATCH, len(ids)), len(ids)), end="", file=sys.stderr, flush=True)
    finally:
        writer.close()
    print(file=sys.stderr)
    print(f"rescanned {len(ids)} rows under redaction rules v{REDACTION_VERSION}; {changed} changed")
    return 0
