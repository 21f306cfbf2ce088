"""`memtree import` of a 30-session transcript folder into a real running system.

The 5-session fixture (tests/fixtures/transcripts/extended: 3 real CLI sessions,
plus secrets, forgotten content, a cut last line, a non-JSON line, a spilled
output) placed 6 times with fresh session and tool_use ids. Prints the import
time, what was stored and skipped by reason, a second import (adds 0), raw
secrets found on disk (0) and a recall of a fact known only from an imported
session. Run from a checkout:

    nice -n 10 .venv/bin/python -m memtree.eval.bench_import
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import tempfile
import time

from memtree.eval import system

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COPIES = 6


def main() -> int:
    sys.path.insert(0, REPO)
    from tests.support import transcript_fixture as fx

    with tempfile.TemporaryDirectory(prefix="bench-import-", ignore_cleanup_errors=True) as work:
        project, home, config_dir = (os.path.join(work, n) for n in ("project", "home", "claude"))
        os.makedirs(project)
        fx.write_files(project)
        folder = fx.place(project, config_dir, copies=COPIES)
        env = {
            **os.environ,
            "MEMTREE_HOME": home,
            "CLAUDE_CONFIG_DIR": config_dir,
            "PYTHONPATH": os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p),
        }
        env.pop("CLAUDE_PROJECT_DIR", None)
        with system.serving(project, env):
            os.environ["MEMTREE_HOME"] = home
            from memtree.paths import paths_for_cwd

            fx.forget_notes(paths_for_cwd(project), project)
            sessions = len(glob.glob(os.path.join(folder, "*.jsonl")))
            runs = []
            for label in ("first import", "second import"):
                t0 = time.monotonic()
                done = subprocess.run(
                    [sys.executable, "-m", "memtree.cli", "import"],
                    cwd=project,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                runs.append((label, time.monotonic() - t0, done))
                if done.returncode:
                    raise SystemExit(done.stderr)
            print(f"transcripts: {sessions} sessions in {folder}")
            for label, secs, done in runs:
                print(f"{label}: {secs:.2f}s wall (process start included)\n  {done.stdout.strip().splitlines()[-1]}")
            from memtree.paths import paths_for_cwd

            os.environ["MEMTREE_HOME"] = home
            paths = paths_for_cwd(project)
            raw = (
                "AKIAQWERTYUIOPASDF7K",
                "Zx9vB2mQ7rT4yU1iO8pL3kJ6hG5fD0sA2wE9qR7t",
                "sk-ant-api03-Qm7Xv2Lr9Tz4Kp8Wn3Bc6Hy1Jd5Fs0Ga",
                "hunter2-Lobster-Quartz-91",
            )
            found = 0
            for path in glob.glob(os.path.join(paths.store_dir, "**", "*"), recursive=True):
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        data = f.read()
                    found += sum(data.count(s.encode()) for s in raw)
            print(f"raw secrets on disk under {paths.store_dir}: {found}")
            os.remove(os.path.join(project, "README.md"))  # the fact now lives only in the imported sessions
            from memtree.recall import search
            from memtree.store.db import open_read

            conn = open_read(paths.db)
            try:
                t0 = time.monotonic()
                hits = []
                while not hits and time.monotonic() - t0 < 30:  # the filter walker makes captures live
                    hits = search.keyword(conn, "heronbay codename", {}, 3)
                    time.sleep(0.2)
            finally:
                conn.close()
            found = ", ".join(
                f"{h[0]['source_uri'].rsplit('/', 1)[-1]} (session {h[0].get('session_id', '?')[:8]})" for h in hits
            )
            print(f"recall 'heronbay codename': {found or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
