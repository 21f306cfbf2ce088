"""``memtree import``: backfill the store from Claude Code's transcripts of this project.

Each Read/Grep/Bash call in a transcript (memtree.ops.transcripts) becomes the
payload the capture hook would have been given, and goes to the writer the way
the hook sends it: one ``Ingest`` over the ingest socket, planned by the same
``memtree.capture.ingest.plan`` and stored through the same gate (redaction,
deny rules, the project rule, tombstones), dated by the transcript, under its
session id. With no writer running, entries are redacted and spooled exactly
as the hook spools them, for the writer to drain when it next runs.

Idempotent by ``tool_use_id``: a call the store holds a capture of (from the
hook or an earlier import) is skipped before anything is sent, and the writer
dedupes by key again. A file chunk whose file changed on disk after the
session read it is marked stale once stored (its mtime comes from today's
file), so an old read is never served as the current text.

Progress on stderr (only on a terminal); the summary on stdout.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time

from memtree.ops import transcripts

FILE_CACHE_BYTES = 64 * 1024 * 1024  # file texts kept for the stale check, in total


def parse_since(text: str, now: float | None = None) -> int:
    """Epoch ms from ``7d`` / ``12h`` / ``2026-11-20`` / an ISO 8601 time; ValueError otherwise."""
    now = time.time() if now is None else now
    m = re.fullmatch(r"\s*(\d+)\s*([dh])\s*", text)
    if m:
        return int((now - int(m.group(1)) * (86400 if m.group(2) == "d" else 3600)) * 1000)
    try:
        dt = datetime.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--since {text!r}: expected a number of days or hours (7d, 12h) or a date (2026-11-20, 2026-11-20T08:00)"
        ) from None
    if dt.tzinfo is None:
        dt = dt.astimezone()  # a date the user typed is local time
    return int(dt.timestamp() * 1000)


class Summary:
    def __init__(self):
        self.sessions = self.calls = self.stored = self.refused = self.stale = self.spooled = 0
        self.malformed = self.unanswered = self.spilled = self.skipped_sessions = 0
        self.skipped: dict[str, int] = {}

    def skip(self, reason: str) -> None:
        reason = reason.split(":", 1)[0].strip() or reason  # "denied path: .env" -> "denied path"
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def lines(self, folders: list[str], dry_run: bool, elapsed: float) -> list[str]:
        verb = "would store" if dry_run else "stored"
        skipped = sum(self.skipped.values())
        why = ", ".join(f"{r} {n}" for r, n in sorted(self.skipped.items(), key=lambda kv: -kv[1]))
        out = [
            f"memtree import: read {', '.join(folders)}",
            f"{self.sessions} sessions, {self.calls} Read/Grep/Bash calls ({self.spilled} with a spilled output "
            f"read from tool-results/): {verb} {self.stored}, skipped {skipped}"
            + (f" ({why})" if why else "")
            + f", refused {self.refused} (forgotten content)"
            + (f", marked stale {self.stale} (file changed since)" if self.stale else "")
            + (f", spooled {self.spooled} (no writer running: stored when memtree next runs)" if self.spooled else "")
            + f"; {self.malformed} malformed lines skipped, {self.unanswered} calls without a result"
            + (f"; {self.skipped_sessions} sessions before --since" if self.skipped_sessions else "")
            + f"; {elapsed:.1f}s",
        ]
        return out


class _Disk:
    """Whether text a session read still is the file's text (bounded cache of file lines)."""

    def __init__(self):
        self.cache: dict[str, list[str] | None] = {}
        self.size = 0

    def lines(self, path: str) -> list[str] | None:
        if path not in self.cache:
            try:
                with open(path, "rb") as f:
                    data = f.read(FILE_CACHE_BYTES + 1)
            except OSError:
                data = None  # gone or unreadable: the staleness walker judges it
            if data is not None and (len(data) > FILE_CACHE_BYTES or self.size + len(data) > FILE_CACHE_BYTES):
                self.cache.clear()
                self.size = 0
            text = (
                data.decode("utf-8", "replace").splitlines()
                if data is not None and len(data) <= FILE_CACHE_BYTES
                else None
            )
            self.size += len(data or b"")
            self.cache[path] = text
        return self.cache[path]

    def outdated(self, node: dict, read_at_ms: int) -> bool:
        """A planned file chunk whose lines on disk are no longer what the session saw."""
        meta = node.get("metadata") or {}
        path, start = meta.get("path"), meta.get("start")
        if node.get("kind") != "file_chunk" or not isinstance(path, str) or not isinstance(start, int):
            return False
        try:
            if os.stat(path).st_mtime_ns // 1_000_000 <= read_at_ms:
                return False  # not modified since the session read it
        except OSError:
            return False
        lines = self.lines(path)
        if lines is None:
            return False
        seen = (node.get("content") or "").splitlines()
        return lines[start - 1 : start - 1 + len(seen)] != seen


def _bar(done: int, total: int, calls: int, width: int = 30) -> str:
    filled = width * done // total if total else width
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} sessions, {calls} calls"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="memtree import",
        description="Store the Read/Grep/Bash calls of this project's earlier Claude Code "
        "sessions, from the transcripts Claude Code keeps.",
    )
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument("--since", metavar="WHEN", help="only calls from then on: 7d, 12h, 2026-11-20 or an ISO time")
    p.add_argument("--dry-run", action="store_true", help="plan and count only; nothing is sent or stored")
    p.add_argument(
        "--transcripts", metavar="DIR", help="read this folder instead of the one Claude Code keeps for the project"
    )
    args = p.parse_args(argv)
    try:
        since = parse_since(args.since) if args.since else None
    except ValueError as e:
        print(f"memtree import: {e}", file=sys.stderr)
        return 2
    from memtree.config.loader import load_config
    from memtree.paths import memtree_home, paths_for_cwd, start_dir

    cwd = start_dir(args.project)
    paths = paths_for_cwd(cwd)
    config = load_config(paths.project_root, memtree_home())
    if args.transcripts:
        folders = [os.path.abspath(args.transcripts)] if os.path.isdir(args.transcripts) else []
        looked = [os.path.abspath(args.transcripts)]
    else:
        dirs = list(dict.fromkeys([paths.project_root, cwd]))
        folders = transcripts.project_folders(dirs)
        looked = [
            os.path.join(transcripts.config_dir(), "projects", transcripts.folder_name(os.path.realpath(d)))
            for d in dirs
        ]
    if not folders:
        print(
            f"memtree import: no Claude Code transcripts for {paths.project_root} (looked in {', '.join(looked)})",
            file=sys.stdout,
        )
        return 0
    files = [f for folder in folders for f in transcripts.session_files(folder)]
    summary = Summary()
    t0 = time.monotonic()
    with _Importer(paths, config, args.dry_run) as imp:
        tty = sys.stderr.isatty()
        for i, path in enumerate(files, 1):
            if since is not None and os.stat(path).st_mtime_ns // 1_000_000 < since:
                summary.skipped_sessions += 1
                continue
            session = transcripts.Session(path)
            for call in transcripts.calls(session, since_ms=since):
                summary.calls += 1
                summary.spilled += call.spilled
                imp.one(call, summary)
                if tty and summary.calls % 20 == 0:
                    print(_bar(i - 1, len(files), summary.calls), end="", file=sys.stderr, flush=True)
            summary.sessions += 1
            summary.malformed += session.malformed
            summary.unanswered += session.unanswered
            if tty:
                print(_bar(i, len(files), summary.calls), end="", file=sys.stderr, flush=True)
        if tty:
            print(file=sys.stderr)
    for line in summary.lines(folders, args.dry_run, time.monotonic() - t0):
        print(line)
    return 0


class _Importer:
    """Sends each call as the hook would; falls back to the spool when no writer answers."""

    def __init__(self, paths, config, dry_run: bool):
        self.paths, self.config, self.dry_run = paths, config, dry_run
        self.conn = self.ingest = self.write = None
        self.spool = False
        self.disk = _Disk()

    def __enter__(self):
        from memtree import protocol
        from memtree.errors import MemtreeError
        from memtree.runtime.client import Caller
        from memtree.store.db import open_read, schema_ready

        if os.path.exists(self.paths.db):
            self.conn = open_read(self.paths.db)
            if not schema_ready(self.conn):
                self.conn.close()
                self.conn = None
        if self.dry_run:
            return self
        self.ingest = Caller(self.paths.endpoint(protocol.SOCK_INGEST), src="import", timeout_ms=30000)
        try:
            self.ingest.call(protocol.Ping(), timeout_ms=2000)
        except MemtreeError:
            self.spool = True  # no writer: the hook's own fallback
            self.ingest.close()
            self.ingest = None
            print(
                "memtree import: no writer is running for this project; captures go to the spool and are "
                "stored when memtree next runs",
                file=sys.stderr,
            )
        else:
            self.write = Caller(self.paths.endpoint(protocol.SOCK_WRITE), src="import", timeout_ms=30000)
        return self

    def __exit__(self, *exc):
        for c in (self.ingest, self.write, self.conn):
            if c is not None:
                c.close()

    def _known(self, tool_use_id: str) -> bool:
        from memtree.store.imported import captured

        return self.conn is not None and captured(self.conn, tool_use_id)

    def one(self, call, summary: Summary) -> None:
        from memtree.capture import ingest
        from memtree.errors import BadRequest

        if self._known(call.tool_use_id):
            summary.skip("already captured")
            return
        if call.rewritten:
            summary.skip("memtree preview in the transcript (the original is not there)")
            return
        try:
            plan = ingest.plan(call.payload, self.config, self.paths.project_root)
        except BadRequest:
            summary.skip("malformed call")
            return
        if plan.skip:
            summary.skip(plan.skip.detail)
            return
        if self.dry_run:
            summary.stored += 1
            return
        if self.spool:
            self._spool(call, summary)
            return
        self._send(call, plan, summary)

    def _spool(self, call, summary: Summary) -> None:
        from memtree.capture import ingest, spool
        from memtree.paths import makedirs_private

        clean, what = ingest.sanitize(call.payload, self.config, self.paths.project_root)
        if clean is None:
            summary.skip(what)
            return
        makedirs_private(self.paths.store_dir)
        spool.append(self.paths.spool, clean, ts=call.received_at)
        summary.spooled += 1

    def _send(self, call, plan: dict, summary: Summary) -> None:
        from memtree import protocol
        from memtree.errors import MemtreeError
        from memtree.recall.freshness import REASON

        try:
            res = self.ingest.call(protocol.Ingest(payload=call.payload, received_at=call.received_at))
        except MemtreeError as e:
            summary.skip(f"writer error ({type(e).__name__}: {e.message[:60]})")
            return
        if res.get("duplicate"):
            summary.skip("already captured")
            return
        summary.refused += int(res.get("refused") or 0)
        if res.get("skipped"):
            if res["skipped"] != "forgotten":  # every node refused by a tombstone: counted as refused above
                summary.skip(str(res["skipped"]))
            return
        ids = res.get("stored") or []
        if not ids:
            summary.skip("same output stored within capture.dedupeWindowS")
            return
        summary.stored += 1
        nodes = plan.nodes
        if len(ids) == len(nodes):  # aligned: nothing of this capture was cut out or deduplicated
            old = [i for i, n in zip(ids, nodes) if self.disk.outdated(n, call.received_at)]
            if old:
                changed = self.write.call(
                    protocol.SetStatus(ids=old, status="stale", reason=REASON, expect=["pending", "live"])
                )
                summary.stale += len(changed.get("changed") or [])
