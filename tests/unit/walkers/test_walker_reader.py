"""A walker's read connection keeps a small page cache (actors/walkers/common.py):
its passes read rows once, and SQLite's 2 MiB default filled in each walker as the store grew."""

from __future__ import annotations

from memtree.actors.walkers.common import READ_CACHE_KIB, LazyReader
from memtree.store import db as store_db
from tests.support import make_paths, reap
from tests.support import test_config as make_config
from tests.support.actor_procs import start_writer


def test_a_walkers_reader_bounds_its_page_cache(tmp_path):
    paths = make_paths(tmp_path)
    proc = start_writer(paths, make_config())
    reader = LazyReader(paths.db)
    other = None
    try:
        conn = reader.get()
        assert conn is not None
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -READ_CACHE_KIB
        # Positive control: a connection opened without the bound has SQLite's default.
        other = store_db.open_read(paths.db)
        assert other.execute("PRAGMA cache_size").fetchone()[0] == -2000
    finally:
        reader.reset()
        if other is not None:
            other.close()
        reap(proc)
