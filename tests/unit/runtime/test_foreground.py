"""The foreground marks (memtree/runtime/foreground.py): a waiter in another
process waits while the writer's mark or a front's is up and goes on once it
is down, never longer than asked, and never for a mark a dead holder left;
each front holds a word of its own, and a dead front's word is taken again;
the embed walker's child computes the same vectors a slice at a time behind
it; a real writer puts its mark up for its batches of ordinary requests only,
and a real front for the tool call it is answering."""

from __future__ import annotations

import contextlib
import os
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from memtree import protocol
from memtree.actors.walkers.embed_compute import SLICE_TEXTS, embed_stepping_aside
from memtree.recall.embeddings import StaticProvider
from memtree.runtime import foreground
from tests.support import REPO, deadline, held_up, make_paths, reap, wait_until
from tests.support import test_config as make_config
from tests.support.actor_procs import running_writer

_WAITER = (
    "import sys; from memtree.runtime import foreground; w = foreground.Watch(sys.argv[1]);"
    " print('ready', flush=True); print(w.wait(most_s=60), flush=True)"
)


def _value(store_dir: str) -> int:
    with open(foreground.path_for(store_dir), "rb") as f:
        return struct.unpack("<q", f.read(8))[0]


@pytest.mark.timeout(60)
def test_a_waiter_in_another_process_waits_while_the_mark_is_up_and_goes_on_once_it_is_down(tmp_path):
    mark = foreground.Mark(str(tmp_path))
    proc = None
    try:
        with held_up(mark):  # a slow start of the waiter must not find it stale
            proc = subprocess.Popen(
                [sys.executable, "-c", _WAITER, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True
            )
            assert proc.stdout.readline().strip() == "ready"
            with pytest.raises(subprocess.TimeoutExpired):  # still waiting: the mark is up
                proc.wait(timeout=0.3)
        mark.down()
        out, _ = proc.communicate(timeout=deadline(10))
        assert proc.returncode == 0
        assert 0.3 <= float(out) < 60
    finally:
        if proc is not None:
            reap(proc)
        mark.close()


def test_no_wait_without_a_mark_up_or_without_the_file(tmp_path):
    assert foreground.Watch(str(tmp_path)).wait() == 0.0  # no writer yet: no file
    mark = foreground.Mark(str(tmp_path))
    watch = foreground.Watch(str(tmp_path))
    assert watch.wait() == 0.0
    mark.up()
    assert watch.wait(most_s=0.05) >= 0.05  # positive control: the same watch waits for an up mark
    mark.close()


def test_a_watch_follows_the_file_a_new_writer_made_after_the_old_one_was_deleted(tmp_path):
    """A mapping outlives its file's name: a watch still mapping a deleted
    file would never see the marks of a writer that made the file again."""
    old = foreground.Mark(str(tmp_path))
    watch = foreground.Watch(str(tmp_path))
    old.up()
    assert watch.marked()  # positive control: mapped, and the old file's mark seen
    old.down()
    old.close()
    os.unlink(foreground.path_for(str(tmp_path)))
    new = foreground.Mark(str(tmp_path))
    new.up()
    try:
        wait_until(watch.marked, timeout=deadline(5 * foreground.LOOK_AGAIN_S), what="the new file's mark")
        new.down()
        assert not watch.marked()
    finally:
        new.close()
        watch.close()


def test_a_wait_gives_up_after_most_s_and_a_stale_mark_is_not_waited_for(tmp_path):
    mark = foreground.Mark(str(tmp_path))
    watch = foreground.Watch(str(tmp_path))
    with held_up(mark, most_s=40):  # never stale: a wait that did not give up would last 40 s
        waited = watch.wait(most_s=0.2)
    assert 0.2 <= waited < 30
    # A writer killed mid-batch left its mark up long ago: not waited for (60 s if it were).
    with open(foreground.path_for(str(tmp_path)), "r+b") as f:
        f.write(struct.pack("<q", time.monotonic_ns() - int(2 * foreground.STALE_S * 1e9)))
    assert watch.wait(most_s=60) < 30
    mark.close()


def test_a_wait_lingers_past_the_end_of_a_batch_as_long_as_asked(tmp_path):
    mark = foreground.Mark(str(tmp_path))
    mark.up()
    ended = time.monotonic()
    mark.down()
    assert foreground.Watch(str(tmp_path), linger_s=0).wait(most_s=5) == 0.0
    waited = foreground.Watch(str(tmp_path), linger_s=0.3).wait(most_s=5)
    assert time.monotonic() - ended >= 0.3 and 0 < waited < 5
    mark.close()


def test_a_starting_writer_puts_down_a_mark_its_predecessor_left_up(tmp_path):
    old = foreground.Mark(str(tmp_path))
    old.up()
    assert _value(str(tmp_path)) > 0
    new = foreground.Mark(str(tmp_path))
    assert _value(str(tmp_path)) == 0
    old.close()
    new.close()


def test_the_compute_child_embeds_the_same_vectors_a_slice_at_a_time_each_after_the_mark(tmp_path):
    provider = StaticProvider()
    texts = [
        f"def handler_{i}(request):\n    return parse(request.body, limit={i})" for i in range(2 * SLICE_TEXTS + 1)
    ]
    whole = provider.embed(texts)
    mark = foreground.Mark(str(tmp_path))
    watch = foreground.Watch(str(tmp_path))
    assert np.array_equal(embed_stepping_aside(provider, texts, watch), whole)
    assert watch.waited_s == 0.0
    with held_up(mark):  # held for every slice: each waits its most
        assert np.array_equal(embed_stepping_aside(provider, texts, watch), whole)
    assert watch.waited_s >= 3 * foreground.WAIT_MAX_S
    assert np.array_equal(embed_stepping_aside(provider, texts[:1], watch), whole[:1])
    mark.close()


def _watch_file(store_dir: str, stop: threading.Event, seen: list) -> None:
    """Reads the mark as fast as it can, counting the reads that found it up."""
    watch = foreground.Watch(store_dir)
    while not stop.is_set():
        if watch.marked():
            seen.append(1)


@pytest.mark.timeout(120)
def test_a_writer_marks_its_batches_of_ordinary_requests_and_not_its_heavy_ones(tmp_path):
    paths = make_paths(tmp_path)
    with running_writer(paths, make_config()) as caller:
        store = paths.store_dir
        for content, expect_up in (("x" * 40_000, False), ("a short note", True)):  # heavy, then ordinary
            # The writer puts the mark down after it has answered a batch: the readiness
            # Ping's (and the last phase's) may still be up as the reply comes back.
            wait_until(lambda: _value(store) <= 0, timeout=deadline(10), what="the mark down before the phase")
            stop, seen = threading.Event(), []
            poller = threading.Thread(target=_watch_file, args=(store, stop, seen))
            poller.start()
            try:
                for i in range(60):
                    caller.call(protocol.AddNode(kind="note", content=f"{content} {i}"))
            finally:
                stop.set()
                poller.join(deadline(10))
            assert bool(seen) is expect_up, (content[:12], len(seen))
            wait_until(lambda: _value(store) < 0, timeout=deadline(10), what="the mark down after the batches")


_MARK_ON = (
    "import sys; from memtree.runtime import foreground; m = foreground.Mark(sys.argv[1]); m.up(); m.down();"
    " print('off' if m._map is None else 'on', flush=True)"
)


@pytest.mark.timeout(60)
def test_a_writer_starting_on_a_full_disk_runs_without_the_mark(tmp_path):
    disk = str(tmp_path / "disk")
    os.makedirs(disk)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", disk], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")
    try:
        full, room = os.path.join(disk, "full"), str(tmp_path)
        os.makedirs(full)
        fd = os.open(os.path.join(disk, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, bytes(4096))
        os.close(fd)
        for where, expect in ((full, "off"), (room, "on")):  # and a positive control with room
            got = subprocess.run(
                [sys.executable, "-c", _MARK_ON, where], cwd=REPO, capture_output=True, text=True, timeout=deadline(20)
            )
            assert (got.returncode, got.stdout.strip()) == (0, expect), (where, got.returncode, got.stderr[-300:])
    finally:
        subprocess.run(["umount", "-l", disk], check=False)


_FRONT = (
    "import fcntl, sys; from memtree.runtime import foreground\n"
    "if sys.argv[2] == 'lockf': del fcntl.F_OFD_SETLK  # a system without open-file-description locks\n"
    "m = foreground.Mark(sys.argv[1], front=True); m.up(); print(m.slot, flush=True); sys.stdin.read()"
)


def _words(store_dir: str) -> tuple[int, ...]:
    with open(foreground.path_for(store_dir), "rb") as f:
        return struct.unpack(f"<{foreground.SLOTS}q", f.read(foreground.FILE_BYTES))


def _front(store_dir: str, locks: str) -> tuple[subprocess.Popen, int]:
    """A process holding a front's mark up: (it, its word)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _FRONT, store_dir, locks],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    assert line.isdigit(), (line, proc.poll())
    return proc, int(line)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("locks", ["ofd", "lockf"])
def test_each_front_holds_a_word_of_its_own_and_a_dead_fronts_word_is_taken_again(tmp_path, locks):
    store = str(tmp_path)
    writer = foreground.Mark(store)
    watch = foreground.Watch(store, linger_s=0)
    first = second = None
    try:
        assert writer.slot == foreground.WRITER_SLOT and not watch.marked()  # control: nothing up yet
        first, a = _front(store, locks)
        second, b = _front(store, locks)
        assert {a, b} == {1, 2}
        words = _words(store)
        assert words[a] > 0 and words[b] > 0 and words[foreground.WRITER_SLOT] == 0
        assert watch.marked() and watch.wait(most_s=0.2) >= 0.2  # a front's mark alone is waited for
        first.kill()  # with its mark up: its word's lock goes with it
        reap(first)
        third, c = _front(store, locks)
        try:
            assert c == a  # the dead front's word, put down and up again by its new holder
            assert _words(store)[b] > 0
        finally:
            third.stdin.close()
            reap(third)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.stdin.close()
                reap(proc)
        writer.close()
        watch.close()


def test_a_fronts_nested_holds_put_the_mark_down_with_the_last(tmp_path):
    store = str(tmp_path)
    mark = foreground.Mark(store, front=True)
    watch = foreground.Watch(store, linger_s=0)
    try:
        with mark.hold():
            with mark.hold():
                assert watch.marked()
            assert watch.marked()  # the outer call still runs
        assert not watch.marked() and _words(store)[mark.slot] < 0
    finally:
        mark.close()
        watch.close()


def test_an_older_releases_one_word_file_is_not_mapped_until_a_writer_grows_it(tmp_path):
    """A foreground.bin of one word (an older release's writer) is not mapped
    until a writer of this one grows it; that writer's word is kept."""
    store = str(tmp_path)
    with open(foreground.path_for(store), "wb") as f:
        f.write(struct.pack("<q", -5))
    watch = foreground.Watch(store)
    try:
        assert watch.wait(most_s=5) == 0.0 and not watch.marked()
        fd = foreground._open(foreground.path_for(store))
        os.close(fd)
        assert os.path.getsize(foreground.path_for(store)) == foreground.FILE_BYTES and _value(store) == -5
        mark = foreground.Mark(store)
        try:
            mark.up()
            wait_until(watch.marked, timeout=deadline(5 * foreground.LOOK_AGAIN_S), what="the grown file's mark")
        finally:
            mark.close()
    finally:
        watch.close()
