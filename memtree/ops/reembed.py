"""``memtree reembed``: rebuild every vector with the configured model.

Needed after a model change: a store holding vectors of another model or
dimension refuses semantic search (store/vectors.check_model). The work
list is (1) nodes whose vector is of another model, then (2) live nodes
with no vector yet. Each batch is one ``PutVectors`` call to the running
writer, committed before the next, so Ctrl-C stops between batches and a
second run resumes where the first stopped (done nodes have the new model).
Progress goes to stderr as a bar; a finished run says how many it embedded.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from memtree import protocol
from memtree.errors import MemtreeError, Unavailable
from memtree.store import vectors

BAR = 30


def _bar(done: int, total: int, started: float, out) -> None:
    frac = done / total if total else 1.0
    rate = done / max(time.monotonic() - started, 1e-6)
    out.write(f"\rreembed [{'#' * int(frac * BAR):<{BAR}}] {done}/{total} ({rate:.0f}/s)")
    out.flush()


def _todo_count(db, model: str, dim: int) -> int:
    return vectors.other_model_count(db, model, dim) + vectors.backlog_count(db, model)


def _next_batch(db, model: str, dim: int, size: int) -> list[tuple[str, str, str]]:
    return vectors.other_model_nodes(db, model, dim, size) or [r[:3] for r in vectors.backlog(db, model, size)]


def reembed(paths, config, batch: int, out=sys.stderr) -> int:
    """Embed everything that needs it; returns how many vectors were stored."""
    from memtree.paths import socket_path
    from memtree.recall.embeddings import load_provider
    from memtree.runtime.client import Caller
    from memtree.store import db as store_db

    if not os.path.exists(paths.db):
        raise Unavailable(f"no memtree store for this project yet ({paths.db})")
    if not os.path.exists(socket_path(paths.endpoint(protocol.SOCK_WRITE))):
        raise Unavailable("the writer is not running (start `memtree serve`, check `memtree ctl status`)")
    provider = load_provider(config)
    db = store_db.open_read(paths.db)
    writer = Caller(paths.endpoint(protocol.SOCK_WRITE), src="reembed", timeout_ms=int(config.writer.callTimeoutMs))
    total, done, started = _todo_count(db, provider.name, provider.dim), 0, time.monotonic()
    try:
        _bar(done, total, started, out)
        while True:
            rows = _next_batch(db, provider.name, provider.dim, batch)
            if not rows:
                break
            vecs = provider.embed([content for _, _, content in rows])
            res = writer.call(
                protocol.PutVectors(
                    model=provider.name,
                    dim=provider.dim,
                    items=[
                        {"node_id": nid, "content_hash": digest, "vector": vectors.to_wire(vec)}
                        for (nid, digest, _), vec in zip(rows, vecs)
                    ],
                )
            )
            if res["stored"] == 0:  # every node changed under us; the next query sees it
                if rows == _next_batch(db, provider.name, provider.dim, batch):
                    raise MemtreeError(f"the writer stored none of {len(rows)} vectors; see the writer log")
            done += res["stored"]
            _bar(done, max(total, done), started, out)
    except BaseException:
        out.write("\n")  # end the bar's line before the caller's message
        raise
    finally:
        writer.close()
        db.close()
    out.write(f"\nreembed: {done} vectors stored with {provider.name} ({provider.dim} dims)\n")
    return done


def main(argv: list[str] | None = None) -> int:
    from memtree.config.loader import load_config
    from memtree.paths import memtree_home, paths_for_cwd, start_dir

    p = argparse.ArgumentParser(
        prog="memtree reembed",
        description="Rebuild every vector with the configured embedding model (interruptible; run again to resume).",
    )
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument("--batch", type=int, default=64, metavar="N", help="nodes per writer call (default 64)")
    args = p.parse_args(argv)
    if args.batch < 1:
        print("memtree reembed: --batch must be at least 1", file=sys.stderr)
        return 2
    if args.project is not None and not os.path.isdir(args.project):
        print(f"memtree reembed: --project {args.project}: not a directory", file=sys.stderr)
        return 2
    paths = paths_for_cwd(start_dir(args.project))
    config = load_config(paths.project_root, memtree_home())
    try:
        reembed(paths, config, args.batch)
    except KeyboardInterrupt:
        print("reembed: interrupted; what was stored is kept, run `memtree reembed` again to resume", file=sys.stderr)
        return 130
    except MemtreeError as e:
        print(f"memtree reembed: {e.message}", file=sys.stderr)
        return 1
    return 0
