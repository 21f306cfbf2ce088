"""Deferred FTS indexing inside a writer transaction (memtree.store.write.fts):
on a real SQLite file, the index after COMMIT is exactly what the triggers
alone would have made, whatever the transaction did to its own new rows."""

from __future__ import annotations

from memtree.store import fts_index, integrity
from memtree.store.write import fts, mutations
from memtree.store.write.mutations import Tx
from tests.support import test_config as make_config
from tests.support.store_rows import insert, writer_tx


def matching(db, word: str) -> set[str]:
    return {
        r[0]
        for r in db.execute(
            "SELECT n.id FROM nodes_fts f JOIN nodes n ON n.rowid = f.rowid WHERE nodes_fts MATCH ?", (word,)
        )
    }


def test_new_rows_changed_within_the_transaction_are_indexed_as_they_end(db, path):
    insert(db, "old-kept", "zebra before the batch")
    insert(db, "old-pruned", "zebra before the batch, pruned in it")
    insert(db, "old-rewritten", "zebra before, then yak")

    def work():
        for name in ("new-kept", "new-pruned", "new-deleted", "new-rewritten", "new-pending"):
            insert(db, name, f"zebra {name}", "pending" if name == "new-pending" else "live")
        insert(db, "new-dropped", "zebra dropped at once", "dropped")
        db.execute("UPDATE nodes SET status = 'pruned' WHERE id IN ('new-pruned', 'old-pruned')")
        db.execute("DELETE FROM nodes WHERE id = 'new-deleted'")
        db.execute("UPDATE nodes SET content = 'yak only now' WHERE id IN ('new-rewritten', 'old-rewritten')")
        db.execute("UPDATE nodes SET status = 'live' WHERE id = 'new-dropped'")  # out of every index, then back in

    writer_tx(db, work)
    assert matching(db, "zebra") == {"old-kept", "new-kept", "new-pending", "new-dropped"}
    assert matching(db, "yak") == {"old-rewritten", "new-rewritten"}
    assert integrity.check(path)[0] == []
    assert db.execute("SELECT count(*) FROM fts_defer").fetchone()[0] == 0


def test_a_batch_of_rows_flushes_one_segment_and_without_deferring_one_each(db):
    def segments_written(work) -> int:
        before = fts_index.structure(db)
        work()
        return fts_index.structure(db).writes - (before.writes if before else 0)

    def rows(prefix: str):
        return lambda: [insert(db, f"{prefix}{i}", f"alpaca row {i}") for i in range(40)]

    deferred = segments_written(lambda: writer_tx(db, rows("d")))

    def plain():
        with db:  # a transaction of the triggers alone: another connection's writes
            rows("p")()

    assert segments_written(plain) == 40  # FTS5 flushes at each trigger-firing statement's savepoint
    assert deferred == 1
    assert len(matching(db, "alpaca")) == 80


def test_a_rebuild_inside_a_deferring_transaction_indexes_each_row_once(db, path):
    insert(db, "before", "llama before")

    def work():
        insert(db, "early", "llama early")
        mutations.rebuild_indexes(Tx(db, make_config(), "test"), "test")
        insert(db, "late", "llama late")

    writer_tx(db, work)
    assert matching(db, "llama") == {"before", "early", "late"}
    assert db.execute("SELECT count(*) FROM nodes_fts_docsize").fetchone()[0] == 3
    assert integrity.check(path)[0] == []


def test_a_rolled_back_transaction_leaves_the_triggers_indexing_again(db):
    db.execute("BEGIN IMMEDIATE")
    fts.defer(db)
    insert(db, "gone", "heron gone")
    db.execute("ROLLBACK")
    insert(db, "direct", "heron direct")  # autocommit, as any other connection writes
    assert matching(db, "heron") == {"direct"}
