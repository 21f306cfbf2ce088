"""A fresh store file and the write connection to it, for the store tests
that run write-side code in-process (no writer process)."""

from __future__ import annotations

import pytest

from memtree.store import db as store_db


@pytest.fixture()
def path(tmp_path):
    return str(tmp_path / "store.db")


@pytest.fixture()
def db(path):
    conn = store_db.open_write(path)
    yield conn
    conn.close()
