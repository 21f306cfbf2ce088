"""Search at store sizes a year of use reaches (issue 17 point 4).

    nice -n 10 .venv/bin/python -m memtree.eval.bench_scale [--sizes 10000,100000] [--searches 100]
        [--embed-backlog] [--keep DIR]

Seeding: hook payloads of the shapes Claude Code sends (Read, Grep, Bash;
../shared/claude-code/payloads/) carry real code, the .py files of the
packages installed beside memtree (site-packages: third-party code no one
here wrote, ~55k chunks), and go through the writer's ``ingest`` socket as
the hook sends them, 8 clients at once. The real filter walker makes them
live and the real embed walker embeds them (both as processes, as the
supervisor starts them; the pruner too, sweeping every 2 s, so its FTS5
merge steps settle the index before it is measured). Variants, so a store can outgrow the corpus: pass
v > 0 puts every file under ``v<v>/`` and renames about a third of its
identifiers (>= 4 letters) through a map seeded by v over the corpus's own
identifier vocabulary, so each variant is new text with the corpus's token
statistics, not a copy the filter would drop as a duplicate (the map is
built once a pass and shared by its files: a name's fate depends on v and
the name only).

Seeding prints its rate every minute, and every figure the load average:
the box is shared. With ``--embed-backlog`` the largest size is seeded with
no embed walker running, then the real walker is started on that whole
backlog and timed until the last seeded chunk has its vector (the goal: 1M
chunks in <= 30 min on 2 cores, the walker's running time), while one small
Bash capture at a time goes through the ingest socket as the hook sends it:
its p95 during the drain against the walker stopped (SIGSTOP, its compute
child with it) in windows taken in turns with the drain's, so both see the
same minutes of a shared box (goal: <= 1.2x); and idle before and after on
the drained store.

Per size, from read-only connections the way the front searches, the
eval's queries (eval/recall_queries.py): plain FTS5 BM25, raw sqlite-vec
KNN (every vector of the model, no join), memtree's knn (sign-bit first
pass + exact rerank, live only), keyword, semantic and hybrid (ranking
included; the query embedding is computed beforehand; keyword and hybrid
as the front runs them, with SQL on pool threads and connections (a queried
symbol's definitions, hybrid's keyword arm), and hybrid once more all on one
thread), and hybrid as the
recall tool runs it (hits checked against the disk, snippets looked up only
for the hits shown by one, the answer rendered); the first pass's
recall against the exact KNN (top 10 and top 100, on queries cut from stored
chunks, not the eval's); build time, bytes on disk per node and each
actor's RSS.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import re
import shutil
import sys
import sysconfig
import tempfile
import threading
import time

from memtree.eval.stats import fmt_ms, summary

CLIENTS = 8
SESSION_FILES = 40  # Read payloads per session id
IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{3,}\b")
KEYWORDS = frozenset(
    """False None True and assert async await break class continue def del elif else except
finally for from global import lambda nonlocal not pass raise return self try while with yield print""".split()
)


PRUNER_INTERVAL_MS = 2000


# A year's store is bigger than the default disk budget (1 GiB, ~250k nodes of this corpus): a
# user keeping one raises storage.maxBytes, or the pruner removes captures and runs Reclaim (a
# whole-index FTS optimize) batch after batch, which held the writer from 250k nodes on.
BENCH_MAX_BYTES = 1 << 40


def bench_config(pruner_interval_ms: int):
    """The eval's config (the embed walker starts at once), with the pruner
    sweeping every ``pruner_interval_ms`` and a disk budget no seeded store reaches."""
    from memtree.config.defaults import defaults
    from memtree.config.loader import Config, validate

    cfg = {
        "walkers": {"embeddingIdleMs": 100, "prunerIntervalMs": pruner_interval_ms},
        "storage": {"maxBytes": BENCH_MAX_BYTES},
    }
    return Config(validate(cfg, "<bench_scale>", defaults()), ["<bench_scale>"])


def corpus_files() -> list[tuple[str, str]]:
    """(relative path, text) of every installed package's .py files, sorted."""
    site = sysconfig.get_paths()["purelib"]
    out = []
    for path in sorted(glob.glob(os.path.join(site, "**", "*.py"), recursive=True)):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        if text.strip():
            out.append((os.path.relpath(path, site), text))
    return out


def vocabulary(files) -> list[str]:
    seen: dict[str, None] = {}
    for _, text in files:
        for w in IDENT.findall(text):
            if w not in KEYWORDS:
                seen.setdefault(w, None)
    return sorted(seen)


def variant(text: str, v: int, vocab: list[str], memo: dict[str, str] | None = None) -> str:
    """Pass ``v`` of a file: v=0 as it is; else ~1/3 of its identifiers renamed
    by a map seeded by v (the same name maps the same way within a pass:
    ``memo``, one per pass, holds the map so far)."""
    if v == 0:
        return text
    memo = {} if memo is None else memo

    def swap(m):
        w = m.group(0)
        got = memo.get(w)
        if got is None:
            if w in KEYWORDS:
                got = w
            else:
                r = random.Random(f"{v}:{w}")
                got = vocab[r.randrange(len(vocab))] if r.random() < 0.34 else w
            memo[w] = got
        return got

    return IDENT.sub(swap, text)


def payloads(files, vocab, project: str, skip: int = 0):
    """Endless hook payloads (Read of a file, then a Grep and a Bash over it
    every few files), variant after variant, after the first ``skip`` Reads
    (a kept store already holds them: the same payload again is a duplicate)."""
    v, first = divmod(skip, len(files))
    n = skip
    while True:
        memo: dict[str, str] = {}
        for rel, text in files[first:]:
            lines = variant(text, v, vocab, memo).splitlines(keepends=True)[:2000]  # the CLI's Read cap
            if not lines:
                continue
            content = "".join(lines)
            path = os.path.join(project, f"v{v}", rel)
            sid = f"bench-session-{n // SESSION_FILES}"
            base = {
                "session_id": sid,
                "cwd": project,
                "hook_event_name": "PostToolUse",
                "transcript_path": f"/tmp/bench/{sid}.jsonl",
                "permission_mode": "default",
            }
            n += 1
            yield {
                **base,
                "tool_name": "Read",
                "tool_input": {"file_path": path},
                "tool_response": {
                    "type": "text",
                    "file": {
                        "filePath": path,
                        "content": content,
                        "numLines": len(lines),
                        "startLine": 1,
                        "totalLines": len(lines),
                    },
                },
                "tool_use_id": f"toolu_r{n}",
                "duration_ms": 4,
            }
            words = [w for w in IDENT.findall(content) if w not in KEYWORDS]
            if n % 3 == 0 and words:
                pat = words[len(words) // 2]
                hits = [f"{path}:{i + 1}:{ln.rstrip()}" for i, ln in enumerate(lines) if pat in ln][:50]
                yield {
                    **base,
                    "tool_name": "Grep",
                    "tool_input": {"pattern": pat, "path": project, "output_mode": "content", "-n": True},
                    "tool_response": {
                        "mode": "content",
                        "numFiles": 1,
                        "filenames": [],
                        "content": "\n".join(hits),
                        "numLines": len(hits),
                    },
                    "tool_use_id": f"toolu_g{n}",
                    "duration_ms": 9,
                }
            if n % 5 == 0 and len(lines) > 40:
                a = (n * 7) % (len(lines) - 40)
                yield {
                    **base,
                    "tool_name": "Bash",
                    "tool_input": {"command": f"sed -n '{a + 1},{a + 40}p' {path}", "description": "show lines"},
                    "tool_response": {
                        "stdout": "".join(lines[a : a + 40]).rstrip("\n"),
                        "stderr": "",
                        "interrupted": False,
                        "isImage": False,
                        "noOutputExpected": False,
                    },
                    "tool_use_id": f"toolu_b{n}",
                    "duration_ms": 12,
                }
        v, first = v + 1, 0


def kept_store(keep: str) -> str:
    """The store.db a ``--keep`` directory holds; exits saying how to make one if none."""
    found = sorted(glob.glob(f"{keep}/home/*/store.db"))
    if not found:
        raise SystemExit(f"no store under {keep}/home (make one with bench_scale --keep {keep})")
    return found[0]


def node_count(db_path: str) -> int:
    from memtree.store import db as store_db

    conn = store_db.open_read(db_path)
    try:
        return conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
    finally:
        conn.close()


def load() -> str:
    """The 1/5/15-minute load averages: the box is shared, so every figure says how busy it was."""
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


PROGRESS_S = 60.0


def seed(endpoint: str, db_path: str, source, target: int) -> int:
    """Send payloads from ``CLIENTS`` threads until the store holds ``target``
    nodes; returns the payloads sent. Prints the rate every PROGRESS_S."""
    from memtree import protocol
    from memtree.runtime.client import Caller

    start = node_count(db_path)
    if start >= target:  # a kept store (--keep) already this big
        return 0
    lock = threading.Lock()
    sent = [0]
    done = threading.Event()
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        caller = Caller(endpoint, src=f"bench{k}", timeout_ms=120_000)
        try:
            while not done.is_set():
                with lock:
                    p = next(source)
                    sent[0] += 1
                caller.call(protocol.Ingest(payload=p, received_at=int(time.time() * 1000)))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            done.set()
        finally:
            caller.close()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    progress = Progress(start)
    while not done.is_set():
        time.sleep(0.5)
        n = node_count(db_path)
        if n >= target:
            done.set()
        progress.tick(
            n, lambda lately, average: f"  seeding: {n} nodes, {lately:.0f} nodes/s lately, {average:.0f} on average"
        )
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return sent[0]


class Progress:
    """A line every PROGRESS_S while a count grows: ``line(rate lately, rate on average)``, the load appended."""

    def __init__(self, start: int):
        self.t0 = self.last_t = time.monotonic()
        self.start = self.last_n = start

    def tick(self, n: int, line) -> None:
        now = time.monotonic()
        if now - self.last_t >= PROGRESS_S:
            lately, average = (n - self.last_n) / (now - self.last_t), (n - self.start) / (now - self.t0)
            print(f"{line(lately, average)}; {load()}", flush=True)
            self.last_t, self.last_n = now, n


def settle(db_path: str, model: str, procs: dict, timeout_s: float) -> None:
    """Wait until nothing is pending, every live embeddable node has a vector,
    the pruner's FTS5 merge steps left one segment a level and no row is
    left as an older redaction gate cleaned it (a store kept from an older
    memtree: the filter walker cleans those again, and every read of one
    redacts it again meanwhile, which a search must not be timed with)."""
    from memtree.gate import REDACTION_VERSION
    from memtree.store import db as store_db
    from memtree.store import fts_index
    from memtree.store.sweeps import older_gate_count
    from memtree.store.vectors import EMBED_KINDS

    kinds = ",".join(f"'{k}'" for k in EMBED_KINDS)
    deadline = time.monotonic() + timeout_s
    last = time.monotonic()
    conn = store_db.open_read(db_path)
    try:
        while True:
            t0 = time.monotonic()
            pending = conn.execute("SELECT count(*) FROM nodes WHERE status = 'pending'").fetchone()[0]
            missing = conn.execute(
                f"SELECT count(*) FROM nodes n WHERE n.status = 'live' AND n.kind IN ({kinds}) AND NOT EXISTS "
                f"(SELECT 1 FROM nodes_vec v WHERE v.node_id = n.id AND v.model = ?)",
                (model,),
            ).fetchone()[0]
            st = fts_index.structure(conn)
            older = older_gate_count(conn, REDACTION_VERSION)
            if not pending and not missing and not older and (st is None or max(st.levels, default=0) <= 1):
                return
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise SystemExit(
                    f"store did not settle ({pending} pending, {missing} unembedded, {older} under an older gate,"
                    f" FTS segments a level {st and st.levels}; dead: {dead})"
                )
            now = time.monotonic()
            if now - last >= PROGRESS_S:
                print(
                    f"  settling: {pending} pending, {missing} unembedded, {older} under an older gate,"
                    f" FTS segments a level {st and st.levels}; {load()}",
                    flush=True,
                )
                last = now
            # The counts walk every live node (seconds at 1M): at most a fifth of this process's time.
            time.sleep(max(1.0, 4 * (now - t0)))
    finally:
        conn.close()


# In every probe's text: a run on a kept store (--keep) stores new text too, not
# the dedupe path's answer to the last run's probes.
PROBE_RUN = os.urandom(4).hex()


def probe_payload(i: int, project: str) -> dict:
    """A small Bash capture as the hook sends it (new text each time, so it is stored)."""
    sid = "bench-probe"
    listing = "\n".join(
        f"-rw-r--r-- 1 dev dev {1000 + 37 * k + i} Dec  2 10:{k:02d} probe_{PROBE_RUN}_{i}_{k}.py" for k in range(12)
    )
    return {
        "session_id": sid,
        "cwd": project,
        "hook_event_name": "PostToolUse",
        "transcript_path": f"/tmp/bench/{sid}.jsonl",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": f"ls -l probe_{i}", "description": "list files"},
        "tool_response": {
            "stdout": f"total {i}\n{listing}",
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        "tool_use_id": f"toolu_p{i}_{time.time_ns()}",
        "duration_ms": 5,
    }


PROBE_PAUSE_S = 0.05  # between probe captures: a session's pace, not a flood
# The paired probes of a drain: windows of the walker running, then stopped, in
# turn, so "during" and "paused" see the same minute of a shared box (an idle
# baseline taken minutes before or after drifted by more than the goal's 20 %).
PAIRED_ON_S, PAIRED_OFF_S = 4.0, 2.0
PAUSE_SETTLE_S = 0.2  # the walker stopped: what it sent before is answered before the window opens


def _probe(caller, i: int, project: str) -> float:
    """One hook capture's round trip on the ingest socket (as the hook asks: ``rewrite``)."""
    from memtree import protocol

    rec = protocol.Ingest(payload=probe_payload(i, project), received_at=int(time.time() * 1000), rewrite=True)
    t0 = time.perf_counter()
    caller.call(rec)
    return time.perf_counter() - t0


def ingest_probes(
    endpoint: str, project: str, first: int, count: int | None = None, stop=None, took: list[float] | None = None
) -> list[float]:
    """Round trips of one hook capture at a time, ``count`` of them or until
    ``stop`` is set; appended to ``took`` as they come."""
    from memtree.runtime.client import Caller

    caller = Caller(endpoint, src="probe", timeout_ms=60_000)
    took = [] if took is None else took
    try:
        i = first
        while (count is None or len(took) < count) and not (stop is not None and stop.is_set()):
            took.append(_probe(caller, i, project))
            i += 1
            time.sleep(PROBE_PAUSE_S)
    finally:
        caller.close()
    return took


def group_states(pid: int) -> set[str]:
    """The states (/proc: T is stopped) of every thread of ``pid`` and of its
    children; none for a process gone."""
    import psutil

    try:
        leader = psutil.Process(pid)
        procs = [leader, *leader.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    states = set()
    for p in procs:
        try:
            tasks = os.listdir(f"/proc/{p.pid}/task")
        except FileNotFoundError:  # a child that ended meanwhile
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p.pid}/task/{t}/stat") as f:
                    states.add(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:  # a thread that ended meanwhile
                continue
    return states


def stop_group(pid: int) -> None:
    """SIGSTOP to the process group led by ``pid``; returns once every thread
    of it is stopped (kill() only queues the signal) and PAUSE_SETTLE_S more."""
    import signal

    os.killpg(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10.0
    while not group_states(pid) <= {"T", "t"} and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(PAUSE_SETTLE_S)


def paired_probes(
    endpoint: str, project: str, first: int, walker_pid: int, stop, busy: list, paused: list, halts: list
) -> None:
    """Probes in turns: PAIRED_ON_S with the walker (the leader of its process
    group: its compute child stops with it) running, appended to ``busy``,
    then PAIRED_OFF_S with it stopped, to ``paused``; until ``stop`` is set.
    ``halts`` gets each time it was stopped (monotonic start, end: not the
    drain's time). kill() only queues SIGSTOP: the window opens once every
    thread of the group stopped."""
    import signal

    from memtree.runtime.client import Caller

    caller = Caller(endpoint, src="probe", timeout_ms=60_000)
    i = first
    try:
        while not stop.is_set():
            for took, length in ((busy, PAIRED_ON_S), (paused, PAIRED_OFF_S)):
                halted = took is paused
                if halted:
                    t_stop = time.monotonic()
                    stop_group(walker_pid)
                try:
                    end = time.monotonic() + length
                    while time.monotonic() < end and not stop.is_set():
                        took.append(_probe(caller, i, project))
                        i += 1
                        time.sleep(PROBE_PAUSE_S)
                finally:
                    if halted:
                        os.killpg(walker_pid, signal.SIGCONT)
                        halts.append((t_stop, time.monotonic()))
                if stop.is_set():
                    break
    finally:
        caller.close()


def wait_filtered(db_path: str, procs: dict, timeout_s: float) -> None:
    """Until the filter walker decided every pending node."""
    from memtree.store import db as store_db

    deadline = time.monotonic() + timeout_s
    conn = store_db.open_read(db_path)
    try:
        while conn.execute("SELECT count(*) FROM nodes WHERE status = 'pending'").fetchone()[0]:
            dead = [n for n, p in procs.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise SystemExit(f"the filter did not catch up (dead: {dead})")
            time.sleep(1.0)
    finally:
        conn.close()


def embed_backlog(paths, config, procs: dict, model: str, project: str, probes: int) -> dict:
    """The goal "a big embedding backlog drains while ingest stays fast": the
    store seeded with no embed walker running, hook captures timed idle, then
    the real embed walker started on the whole backlog with the same captures
    timed while it drains, and once more on the drained store ("idle after",
    so a ratio is not the store's growth). All three with the pruner at its
    default interval, as a store in use has it: the seeding's (every
    PRUNER_INTERVAL_MS) sweeps 150 times as often, each sweep a Tidy and FTS
    merge steps, heavy writer batches (8-24 ms here) that a capture landing
    in one waits for. The seeding's pruner is back for what follows."""
    from memtree import protocol
    from memtree.config.defaults import defaults
    from memtree.eval import recall_eval
    from memtree.store import db as store_db
    from memtree.store.kinds import EMBED_KINDS
    from memtree.store.vectors import backlog, backlog_count

    endpoint = paths.endpoint(protocol.SOCK_INGEST)
    pruner = "memtree.actors.walkers.pruner"
    recall_eval.stop(procs.pop("walker.pruner"))
    in_use = bench_config(defaults()["walkers"]["prunerIntervalMs"])
    procs["walker.pruner"] = recall_eval.start_actor(pruner, "walker.pruner", paths, in_use)
    conn = store_db.open_read(paths.db)
    try:
        start = backlog_count(conn, model, EMBED_KINDS)
        print(f"\nembedding backlog: {start} live chunks without a vector; {load()}", flush=True)
        idle = ingest_probes(endpoint, project, 0, probes)
        before = drain_usage(endpoint, procs)
        stop = threading.Event()
        busy: list[float] = []
        paused: list[float] = []
        halts: list[tuple[float, float]] = []
        t0, t0_ms = time.monotonic(), int(time.time() * 1000)
        procs["walker.embed"] = recall_eval.start_actor("memtree.actors.walkers.embed", "walker.embed", paths, config)
        walker_pid = procs["walker.embed"].pid
        prober = threading.Thread(
            target=paired_probes, args=(endpoint, project, probes, walker_pid, stop, busy, paused, halts)
        )
        prober.start()
        vec_count = "SELECT count(*) FROM nodes_vec"
        since = (0, "")
        progress = Progress(conn.execute(vec_count).fetchone()[0])
        try:
            while True:
                time.sleep(5.0)
                if procs["walker.embed"].poll() is not None:
                    raise SystemExit("the embed walker died; see its log")
                nvec = conn.execute(vec_count).fetchone()[0]
                progress.tick(
                    nvec,
                    lambda lately, _: (
                        f"  draining: {nvec} vectors, {lately:.0f}/s lately;"
                        f" {len(busy)} + {len(paused)} paused probes so far"
                    ),
                )
                # Drained: the oldest live chunk without a vector is none of the seeded ones (the
                # probes' own captures come after t0). Looked for from the last one found, as the
                # walker goes in creation order: from the start, this check read every embedded
                # chunk every 5 s (~0.4 s of CPU at 1M) beside the probes it should not slow.
                oldest = backlog(conn, model, 1, EMBED_KINDS, after=since)
                if not oldest or oldest[0][3] >= t0_ms:
                    break
                since = (oldest[0][3] - 1, "")
        finally:
            stop.set()
            prober.join()
        # Drained when the last chunk seeded before the walker started got its vector.
        end_ms = conn.execute(
            "SELECT max(v.embedded_at) FROM nodes_vec v JOIN nodes n ON n.id = v.node_id WHERE n.created_at < ?",
            (t0_ms,),
        ).fetchone()[0]
        wall = (end_ms - t0_ms) / 1000 if end_ms else time.monotonic() - t0
        # The walker's time stopped before the last chunk's vector (the probes go on a moment after).
        halted = sum(max(0.0, min(end, t0 + wall) - start) for start, end in halts)
        running = time.monotonic() - t0 - sum(end - start for start, end in halts)
        usage = usage_delta(before, drain_usage(endpoint, procs), running)
        after = ingest_probes(endpoint, project, probes + len(busy) + len(paused) + 1, probes)
    finally:
        conn.close()
        recall_eval.stop(procs.pop("walker.pruner"))
        procs["walker.pruner"] = recall_eval.start_actor(pruner, "walker.pruner", paths, config)
    return {
        "chunks": start,
        "took_s": wall - halted,  # the walker's running time: the paused windows are not the drain's
        "wall_s": wall,
        "idle": idle,
        "busy": busy,
        "paused": paused,
        "idle_after": after,
        "usage": usage,
        "load": load(),
    }


def drain_usage(endpoint: str, procs: dict) -> dict:
    """What the writer's Ping counts of its heavy batches (a PutVectors is
    one: a capture arriving meanwhile waits behind it), and the CPU seconds
    of each actor (its children's included) and of this process (the probes)."""
    import psutil

    from memtree import protocol
    from memtree.runtime.client import Caller
    from memtree.runtime.cpu import cpu_seconds

    caller = Caller(endpoint, src="bench", timeout_ms=60_000)
    try:
        got = caller.call(protocol.Ping())
    finally:
        caller.close()
    cpu = actors_cpu(procs)
    cpu["bench"] = cpu_seconds(psutil.Process())
    return {"heavy_batches": got.get("heavy_batches", 0), "heavy_ms": got.get("heavy_ms", 0), "cpu": cpu}


def actors_cpu(procs: dict) -> dict[str, float]:
    """CPU seconds of each running actor, its children's included."""
    import psutil

    from memtree.runtime.cpu import actor_cpu_seconds

    return {name: actor_cpu_seconds(psutil.Process(p.pid)) for name, p in procs.items() if p.poll() is None}


def actors_busy(before: dict, after: dict, seconds: float) -> str:
    """Each actor's share of one core over ``seconds``, busiest first, and their sum."""
    share = {k: (v - before.get(k, 0.0)) / seconds for k, v in after.items()}
    ranked = sorted(share.items(), key=lambda kv: -kv[1])
    return ", ".join(f"{k} {v:.1%}" for k, v in ranked) + f"; sum {sum(share.values()):.1%}"


def usage_delta(before: dict, after: dict, seconds: float) -> dict:
    """The drain's share of the writer (its heavy batches) and of the CPUs over
    ``seconds`` (the walker's running time)."""
    n = after["heavy_batches"] - before["heavy_batches"]
    ms = after["heavy_ms"] - before["heavy_ms"]
    cpu = {k: (v - before["cpu"].get(k, 0.0)) / seconds for k, v in after["cpu"].items()}
    return {"heavy_batches": n, "heavy_ms_mean": ms / max(n, 1), "heavy_share": ms / 1000 / seconds, "cpu": cpu}


def report_backlog(d: dict) -> None:
    idle, busy, paused, after = (summary(d[k]) for k in ("idle", "busy", "paused", "idle_after"))
    print(
        f"  drained {d['chunks']} chunks in {d['took_s']:.0f}s = {d['chunks'] / max(d['took_s'], 1e-9):.0f} chunks/s"
        f" (goal: 1M in <= 1800 s; {d['wall_s']:.0f}s with the walker stopped for the paired probes); {d['load']}",
        flush=True,
    )
    u = d["usage"]
    print(
        f"  writer during the drain: {u['heavy_batches']} heavy batches (PutVectors, MergeFts), "
        f"{u['heavy_ms_mean']:.2f} ms each, {u['heavy_share']:.1%} of the running time; CPU, share of one core: "
        + ", ".join(f"{k} {v:.0%}" for k, v in u["cpu"].items()),
        flush=True,
    )
    for name, st in (
        ("idle", idle),
        ("during the drain", busy),
        ("walker stopped", paused),
        ("idle after", after),
    ):
        print(f"  ingest (hook capture) {name:<17} {fmt_ms(st)}", flush=True)
    print(
        f"  ingest p95 during the drain: {busy['p95'] / paused['p95']:.2f}x the walker stopped in turns with it"
        f" (goal <= 1.2x); {busy['p95'] / idle['p95']:.2f}x idle before, {busy['p95'] / after['p95']:.2f}x idle after",
        flush=True,
    )


def rss_mib(pid: int) -> float:
    """An actor's RSS as ``ctl status`` counts it (its children's own pages included)."""
    import psutil

    from memtree.runtime.cpu import actor_rss

    return actor_rss(psutil.Process(pid)) / 2**20


def raw_knn(conn, vec, model: str, k: int = 10):
    from memtree.store.vectors import to_blob

    return conn.execute(
        "SELECT node_id, vec_distance_cosine(embedding, ?) AS d FROM nodes_vec WHERE model = ? ORDER BY d LIMIT ?",
        (to_blob(vec), model, k),
    ).fetchall()


def exact_live_knn(conn, vec, k: int):
    from memtree.store import vectors

    return vectors.knn(conn, vec, k, {})  # no model given: the exact scan over live nodes


def index_recall(conn, provider, samples: list[str]) -> dict:
    from memtree.store import vectors

    r10, r100 = [], []
    for text in samples:
        q = provider.embed([text])[0]
        exact = [i for i, _ in exact_live_knn(conn, q, 100)]
        got = [i for i, _ in vectors.knn(conn, q, 100, {}, model=provider.name)]
        r10.append(len(set(exact[:10]) & set(got[:10])) / max(1, min(10, len(exact))))
        r100.append(len(set(exact) & set(got)) / max(1, len(exact)))
    return {"r10": sum(r10) / len(r10), "r100": sum(r100) / len(r100)}


def query_samples(conn, n: int, seed_: int = 17) -> list[str]:
    """Queries cut from stored chunks (the first 12 words of random live
    ones): held out from anything the first pass was tuned on."""
    ids = [r[0] for r in conn.execute("SELECT rowid FROM nodes WHERE status = 'live' AND kind = 'file_chunk'")]
    rng = random.Random(seed_)
    out = []
    for rid in rng.sample(ids, min(n, len(ids))):
        text = conn.execute("SELECT content FROM nodes WHERE rowid = ?", (rid,)).fetchone()[0]
        words = text.split()[:12]
        if words:
            out.append(" ".join(words))
    return out


def time_modes(conn, queries, provider, searches: int) -> dict[str, list[float]]:
    from memtree.recall import retrieval, search
    from memtree.runtime.heap import settle
    from memtree.store import vectors

    lat: dict[str, list[float]] = {
        m: []
        for m in (
            "bm25 (raw FTS5)",
            "raw knn (sqlite-vec)",
            "memtree knn",
            "keyword",
            "semantic",
            "hybrid",
            "hybrid (one thread)",
            "recall tool (hybrid)",
        )
    }
    tool = _ReadOnlyServices(conn)
    embs = [provider.embed([q])[0] for q in queries]
    # As the front: its first call loads the vector index and imports the
    # search stack, then it settles its heap (memtree/runtime/heap.py).
    search.run(
        conn,
        queries[0],
        "hybrid",
        {},
        10,
        query_vector={"model": provider.name, "dim": provider.dim, "vector": embs[0]},
    )
    settle()
    for i in range(searches):
        q, vec = queries[i % len(queries)], embs[i % len(queries)]
        emb = {"model": provider.name, "dim": provider.dim, "vector": vec}
        for name, fn in (
            ("bm25 (raw FTS5)", lambda: search.keyword(conn, q, {}, 10)),
            ("raw knn (sqlite-vec)", lambda: raw_knn(conn, vec, provider.name)),
            ("memtree knn", lambda: vectors.knn(conn, vec, 10, {}, model=provider.name)),
        ):
            t0 = time.perf_counter()
            fn()
            lat[name].append(time.perf_counter() - t0)
        for mode in ("keyword", "semantic", "hybrid", "hybrid (one thread)"):
            # keyword and hybrid as the front runs them: SQL on pool threads too (search.run's thread_db)
            arms = {"thread_db": tool.db} if mode in ("keyword", "hybrid") else {}
            t0 = time.perf_counter()
            search.run(conn, q, mode.split()[0], {}, 10, query_vector=emb, **arms)
            lat[mode].append(time.perf_counter() - t0)
        # What the agent waits for: the search as the recall tool runs it, its
        # hits checked against the disk and rendered (the MCP round trip aside).
        t0 = time.perf_counter()
        retrieval._search(tool, q, "hybrid", 10, {}, emb, None)
        lat["recall tool (hybrid)"].append(time.perf_counter() - t0)
    return lat


class _ReadOnlyServices:
    """The part of the front's services a recall search uses: a read
    connection per thread (the first one given), the project root, and the
    background marking of stale hits (not sent here: the bench has no writer
    to answer it)."""

    project_root = "/"

    def __init__(self, conn):
        self._path = conn.filename
        self._local = threading.local()
        self._local.conn = conn

    def db(self):
        conn = getattr(self._local, "conn", None)
        if conn is None:
            from memtree.store import db as store_db

            conn = self._local.conn = store_db.open_read(self._path)
        return conn

    def background(self, *_args) -> None:
        pass


def first_pass_cost(n: int, dim: int, searches: int = 30) -> dict:
    """The first pass and the 4-bit pass over ``n`` codes (random bits and
    statuses: the cost depends on the count, not the values), for sizes too
    big to seed here; the exact rerank after them is bounded by RERANK_EXACT
    whatever the size."""
    import numpy as np

    from memtree.store import vector_index

    idx = vector_index._Codes(np, (dim + 63) // 64, dim)
    rng = np.random.default_rng(17)
    idx.rowids = np.arange(1, n + 1, dtype=np.int64)
    idx.codes = rng.integers(0, 2**63, size=(idx.words, n), dtype=np.uint64)
    idx.fine = rng.integers(0, 256, size=(n, idx.fine_bytes), dtype=np.uint8)
    idx.scale = rng.random(n, dtype=np.float32)
    idx.status_codes = {s: i for i, s in enumerate(("live", "stale", "superseded", "pending"))}
    idx.kind_codes = {"file_chunk": 0, "tool_output": 1}
    idx.status = rng.choice(np.array([0, 0, 0, 1, 2], np.uint8), n)
    idx.kind = rng.choice(np.array([0, 0, 1], np.uint8), n)
    idx.created = np.arange(n, dtype=np.int64)
    idx.sorted_n = n
    took = []
    for _ in range(searches):
        q = rng.integers(0, 2**63, size=idx.words, dtype=np.uint64)
        floats = rng.standard_normal(dim).astype(np.float32)
        t0 = time.perf_counter()
        slots = vector_index.nearest(idx, q, idx.mask({}), vector_index.RERANK)
        vector_index.by_fine(idx, slots, floats, dim)
        took.append(time.perf_counter() - t0)
    arrays = (idx.rowids, idx.codes, idx.fine, idx.scale, idx.status, idx.kind, idx.created)
    mib = sum(a.nbytes for a in arrays) / 2**20
    return {"stats": summary(took), "mib": mib}


def store_bytes(db_path: str) -> int:
    return sum(os.path.getsize(db_path + s) for s in ("", "-wal") if os.path.exists(db_path + s))


def main(argv: list[str] | None = None) -> int:
    from memtree import protocol
    from memtree.eval import recall_eval
    from memtree.eval.recall_queries import QUERIES
    from memtree.recall.embeddings import load_provider
    from memtree.store import db as store_db
    from memtree.store import fts_index, vector_index

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="store sizes (nodes), comma-separated")
    ap.add_argument("--searches", type=int, default=100, help="searches per mode and size")
    ap.add_argument("--recall-samples", type=int, default=50, help="held-out queries for the first pass's recall")
    ap.add_argument(
        "--first-pass-sizes",
        default="1000000",
        help="sizes at which the first pass alone is timed on synthetic codes (beyond what is seeded)",
    )
    ap.add_argument(
        "--keep",
        help="build the store in this directory and keep it (default: a temp dir, removed);"
        " a store already there is grown, not rebuilt",
    )
    ap.add_argument(
        "--embed-backlog",
        action="store_true",
        help="seed the largest size with the embed walker stopped, then time the real walker draining"
        " that backlog, with hook captures timed before, during and after (the drain goal)",
    )
    ap.add_argument("--probes", type=int, default=200, help="timed hook captures idle and after the drain")
    args = ap.parse_args(argv)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the actors below are stopped on a kill too
    sizes = sorted(int(s) for s in args.sizes.split(","))
    files = corpus_files()
    vocab = vocabulary(files)
    queries = [q[1] for q in QUERIES]
    config = bench_config(PRUNER_INTERVAL_MS)
    provider = load_provider(config)
    print(
        f"corpus: {len(files)} .py files of the installed packages, {len(vocab)} identifiers; "
        f"{len(queries)} queries; model {provider.name}; {CLIENTS} ingest clients",
        flush=True,
    )
    work = args.keep or tempfile.mkdtemp(prefix="memtree-bench-scale-")
    procs: dict = {}
    caller = None
    try:
        proc, caller, paths = recall_eval.start_writer(work, config)
        procs["writer"] = proc
        procs["walker.filter"] = recall_eval.start_actor(
            "memtree.actors.walkers.filter", "walker.filter", paths, config
        )
        if not (args.embed_backlog and len(sizes) == 1):
            procs["walker.embed"] = recall_eval.start_actor(
                "memtree.actors.walkers.embed", "walker.embed", paths, config
            )
        # As the supervisor runs it: its sweeps merge FTS5 segments (MergeFts); a short interval
        # so a kept store settles before it is measured.
        procs["walker.pruner"] = recall_eval.start_actor(
            "memtree.actors.walkers.pruner", "walker.pruner", paths, config
        )
        conn = store_db.open_read(paths.db)
        try:  # one file root per Read payload already stored
            reads_done = conn.execute("SELECT count(*) FROM nodes WHERE kind = 'file'").fetchone()[0]
        finally:
            conn.close()
        project = os.path.join(work, "project")
        source = payloads(files, vocab, project, skip=reads_done)
        endpoint = paths.endpoint(protocol.SOCK_INGEST)
        built = 0.0
        sent = 0
        for size in sizes:
            backlog_run = args.embed_backlog and size == sizes[-1]
            if backlog_run and "walker.embed" in procs:
                recall_eval.stop(procs.pop("walker.embed"))
            t0 = time.perf_counter()
            sent += seed(endpoint, paths.db, source, size)
            t_seed = time.perf_counter() - t0
            print(f"  seeded to {size} nodes in {t_seed:.0f}s ({sent} payloads so far); {load()}", flush=True)
            if backlog_run:
                wait_filtered(paths.db, procs, timeout_s=3600)
                drain = embed_backlog(paths, config, procs, provider.name, project, args.probes)
                report_backlog(drain)
            settle(paths.db, provider.name, procs, timeout_s=3600)
            t_all = time.perf_counter() - t0
            built += t_all
            rss = {name: rss_mib(p.pid) for name, p in procs.items()}
            conn = store_db.open_read(paths.db)
            try:
                nodes = conn.execute("SELECT count(*) FROM nodes").fetchone()[0]
                live = conn.execute("SELECT count(*) FROM nodes WHERE status = 'live'").fetchone()[0]
                nvec = conn.execute("SELECT count(*) FROM nodes_vec").fetchone()[0]
                size_b = store_bytes(paths.db)
                print(
                    f"\nstore at {nodes} nodes ({live} live, {nvec} vectors; {sent} payloads): "
                    f"this step {t_all:.0f}s (ingest {t_seed:.0f}s, then filter+embed caught up), total {built:.0f}s; "
                    f"{size_b / 2**20:.0f} MiB on disk = {size_b / nodes:.0f} bytes/node; {load()}",
                    flush=True,
                )
                print("  RSS MiB: " + ", ".join(f"{n} {v:.0f}" for n, v in rss.items()), flush=True)
                st = fts_index.structure(conn)
                print(f"  FTS5 segments: {st and st.segments} (a level: {st and st.levels})", flush=True)
                import psutil

                me = psutil.Process()
                before = me.memory_info().rss
                vector_index.forget_cache()
                t0 = time.perf_counter()
                vector_index.candidates(conn, provider.name, provider.dim, provider.embed(["warm up"])[0], {})
                t_load = time.perf_counter() - t0
                print(
                    f"  first-pass index load (once per reading process): {t_load * 1000:.0f} ms, "
                    f"RSS +{(me.memory_info().rss - before) / 2**20:.0f} MiB",
                    flush=True,
                )
                rec = index_recall(conn, provider, query_samples(conn, args.recall_samples))
                print(
                    f"  first pass vs exact live KNN ({args.recall_samples} held-out queries, "
                    f"RERANK {vector_index.RERANK}, exact {vector_index.RERANK_EXACT}): recall@10 {rec['r10']:.3f}, recall@100 {rec['r100']:.3f}",
                    flush=True,
                )
                actors_before, t_lat = actors_cpu(procs), time.perf_counter()
                lat = time_modes(conn, queries, provider, args.searches)
                busy = actors_busy(actors_before, actors_cpu(procs), time.perf_counter() - t_lat)
                # The searches share the box with the actors: a walker still at work
                # after the build shows here, where a quiet store's actors sum to ~0.
                print("  actors' CPU during the searches (share of one core): " + busy, flush=True)
            finally:
                conn.close()
            raw = summary(lat["raw knn (sqlite-vec)"])["median"]
            bm25 = summary(lat["bm25 (raw FTS5)"])["median"]
            for mode, samples in lat.items():
                st = summary(samples)
                ratio = (
                    f"  {st['median'] / raw:5.2f}x raw knn"
                    if mode in ("memtree knn", "semantic", "hybrid", "hybrid (one thread)", "recall tool (hybrid)")
                    else f"  {st['median'] / bm25:5.2f}x bm25"
                    if mode == "keyword"
                    else ""
                )
                print(f"  {mode:<22} {fmt_ms(st)}{ratio}", flush=True)
            print(f"  (searches done; {load()})", flush=True)
            print(
                "  json "
                + json.dumps(
                    {
                        "nodes": nodes,
                        "bytes_per_node": round(size_b / nodes),
                        "build_s": round(built),
                        "load": os.getloadavg()[0],
                        "rss_mib": {k: round(v) for k, v in rss.items()},
                        **{
                            m: {
                                "p50_ms": round(summary(s)["median"] * 1000, 1),
                                "p95_ms": round(summary(s)["p95"] * 1000, 1),
                            }
                            for m, s in lat.items()
                        },
                    }
                ),
                flush=True,
            )
        for n in (int(x) for x in args.first_pass_sizes.split(",") if x):
            fp = first_pass_cost(n, provider.dim)
            print(
                f"\nfirst pass alone at {n} synthetic codes ({fp['mib']:.0f} MiB of arrays): {fmt_ms(fp['stats'])}",
                flush=True,
            )
    finally:
        if caller is not None:
            caller.close()
        for p in reversed(list(procs.values())):
            recall_eval.stop(p)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
