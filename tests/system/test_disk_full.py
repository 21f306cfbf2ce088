"""A full disk under a running system: a real tmpfs holds the store, real hooks
capture into it. The writer must not crash-loop, must say what is wrong, must
recover by itself when space returns, and must not lose anything it acknowledged;
captures that could be stored nowhere are counted and shown by `ctl status`."""

from __future__ import annotations

import errno
import os
import subprocess
import time

import pytest

from memtree.capture import heartbeat
from tests.support import COLD_START_S, wait_until
from tests.support.actor_procs import rows
from tests.support.hook_support import run_hook

DISK_MB = 24
# Each hook waits for its answer: an ack (or a refusal) that comes late on a
# loaded box must not turn a capture into a spooled one and change the counts.
ACK_WAIT = {"MEMTREE_HOOK_TIMEOUT_MS": str(int(COLD_START_S * 1000))}


def _mount_tmpfs(where: str) -> None:
    os.makedirs(where, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0700", "tmpfs", where], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    """tmp_path/home on a DISK_MB tmpfs: MEMTREE_HOME, so the store lives there."""
    home = str(tmp_path / "home")
    _mount_tmpfs(home)
    yield home
    subprocess.run(["umount", "-l", home], check=False)


def _fill(folder: str) -> str:
    """Write a filler file until the disk refuses another byte."""
    path = os.path.join(folder, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for block in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * block)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)
    return path


def _read_payload(project: str, i: int) -> dict:
    path = os.path.join(project, f"big{i}.py")
    content = f"# disk-full-marker-{i}\n" + "".join(f"value_{i}_{n} = {n}\n" for n in range(40000))
    with open(path, "w") as f:
        f.write(content)
    return {
        "session_id": "sess-disk",
        "transcript_path": "/dev/null",
        "cwd": project,
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": path},
        "tool_use_id": f"toolu_disk_{i}",
        "tool_response": {
            "type": "text",
            "file": {"filePath": path, "content": content, "numLines": 40001, "startLine": 1, "totalLines": 40001},
        },
    }


def _stored(system) -> set[int]:
    got = rows(
        system.paths, "SELECT content FROM nodes WHERE kind='file_chunk' AND content LIKE '# disk-full-marker-%'"
    )
    return {int(r[0].split("\n", 1)[0].rsplit("-", 1)[1]) for r in got}


def test_a_full_disk_is_survived_counted_and_recovered_from_without_losing_an_ack(small_disk, system_factory):
    system = system_factory
    system.write_config({"writer": {"spoolDrainMs": 200}, "capture": {"maxBytes": 2_000_000}})
    system.serve()
    system.wait_running()
    writer_pid = system.pid("writer")
    # Made by the writer at start, at full size, so a hook can count a loss on a full disk.
    assert os.path.getsize(heartbeat.path_for(system.paths.store_dir)) == heartbeat.FILE_BYTES
    run_hook(system, _read_payload(system.project, 0), **ACK_WAIT)  # acknowledged before the disk fills
    assert _stored(system) == {0}

    filler = _fill(small_disk)
    for i in (1, 2, 3):
        run_hook(system, _read_payload(system.project, i), **ACK_WAIT)
    # The storage problem reaches status with the writer's next heartbeat.
    writer = wait_until(
        lambda: (lambda w: w if w and "disk" in w["info"].get("storage", "") else None)(
            system.actor("writer", {"RUNNING"})
        ),
        timeout=COLD_START_S,
        what="the writer saying the disk is full",
    )
    assert writer["pid"] == writer_pid, writer
    lost = {s["session"]: s for s in heartbeat.read_all(system.paths.store_dir)}["sess-disk"]
    assert (lost["stored"], lost["spooled"], lost["failed"]) == (1, 0, 3)  # no spool either: counted as lost
    status = system.ctl("status")
    assert status.returncode == 0 and "failed 3" in status.stdout, status.stdout

    # A writer restarted while the disk is full comes up and says so, instead of crash-looping to FATAL.
    writer_pid = system.restart("writer")
    writer = wait_until(lambda: system.actor("writer", {"RUNNING"}), timeout=COLD_START_S, what="writer back")
    assert writer["pid"] == writer_pid, writer

    os.unlink(filler)
    freed = time.monotonic()
    wait_until(
        lambda: "storage" not in (system.actor("writer", {"RUNNING"}) or {"info": {"storage": 1}})["info"],
        timeout=COLD_START_S,
        what="the writer noticing space is back",
    )
    print(f"\nwriter recovered {time.monotonic() - freed:.2f}s after space returned")
    run_hook(system, _read_payload(system.project, 4), **ACK_WAIT)
    # The new capture is stored: acked at once, or (a writer still backing off on a loaded box)
    # spooled and drained within spoolDrainMs. The acknowledged one is kept, the lost ones counted.
    wait_until(lambda: _stored(system) == {0, 4}, timeout=COLD_START_S, what="captures 0 and 4 stored")
    assert system.pid("writer") == writer_pid
