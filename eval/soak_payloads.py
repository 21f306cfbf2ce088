"""The soak's workload (eval/soak.py): a project of real code and the hook
payloads an agent working in it sends, session after session.

The project is a copy of installed packages' .py files (site-packages: code
no one here wrote). Payloads have the shapes Claude Code 2.1.197 sends
(../shared/claude-code/payloads/): a Read of a whole file (``content`` the
file as it is, ``numLines`` counting the empty line after the last newline)
or of a slice (``offset``/``limit``: the lines joined, no final newline), a
Grep in content mode (``path:N:text``, relative paths) or files_with_matches
mode, a Bash with ``stdout``/``stderr``. Files change: between sessions the
user edits a few (nobody watches them: the staleness walker must notice),
and within a session the agent edits a file it has read (Claude Code runs the
FileChanged hook for a watched path), then reads it again.
"""

from __future__ import annotations

import glob
import os
import random
import re
import sysconfig
import uuid

IDENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{5,}\b")
DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_][A-Za-z0-9_]*)|^\s*class\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)


def corpus(count: int, seed: int = 17) -> list[tuple[str, str]]:
    """``count`` (relative path, text) of installed .py files of 40-1500 lines, chosen by ``seed``."""
    site = sysconfig.get_paths()["purelib"]
    paths = sorted(glob.glob(os.path.join(site, "**", "*.py"), recursive=True))
    random.Random(seed).shuffle(paths)
    found = []
    for path in paths:  # in the shuffled order, until there are enough: reading them all takes seconds
        if len(found) == count:
            break
        if "/memtree" in path or "/tests/" in path:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError):
            continue
        n = text.count("\n")
        if 40 <= n <= 1500 and len(text) < 60_000 and DEF.search(text):
            found.append((os.path.relpath(path, site), text))
    return sorted(found)


class Workload:
    """The project on disk and the events of its sessions, reproducible from ``seed``."""

    def __init__(self, project: str, files: list[tuple[str, str]], seed: int = 17):
        self.project = project
        self.rng = random.Random(seed)
        self.rels = [rel for rel, _ in files]
        self.edits = 0
        self.calls = 0
        for rel, text in files:
            path = self.path(rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        # A working set: an agent comes back to the same files session after session.
        self.hot = self.rels[: max(4, len(self.rels) // 5)]

    def path(self, rel: str) -> str:
        return os.path.join(self.project, "src", rel)

    def text(self, rel: str) -> str:
        with open(self.path(rel), encoding="utf-8") as f:
            return f.read()

    def pick(self) -> str:
        return self.rng.choice(self.hot if self.rng.random() < 0.6 else self.rels)

    # -- edits ---------------------------------------------------------------------
    def edit(self, rel: str, who: str) -> str:
        """Change a few lines of ``rel`` (a comment inserted, a literal changed); returns its path."""
        lines = self.text(rel).splitlines(keepends=True)
        self.edits += 1
        for _ in range(self.rng.randint(1, 3)):
            at = self.rng.randrange(len(lines))
            indent = re.match(r"\s*", lines[at]).group(0) if lines[at].strip() else ""
            lines.insert(at, f"{indent}# {who} edit {self.edits}: keep {self.rng.choice(self.words(rel))} in step\n")
        path = self.path(rel)
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(lines)
        return path

    def words(self, rel: str) -> list[str]:
        return IDENT.findall(self.text(rel)) or ["value"]

    # -- payloads ------------------------------------------------------------------
    def base(self, sid: str) -> dict:
        return {
            "session_id": sid,
            "transcript_path": os.path.join(self.project, ".soak", f"{sid}.jsonl"),
            "cwd": self.project,
            "permission_mode": "default",
        }

    def session_start(self, sid: str, source: str = "startup") -> dict:
        return {**self.base(sid), "hook_event_name": "SessionStart", "source": source}

    def stop(self, sid: str) -> dict:
        return {**self.base(sid), "hook_event_name": "Stop", "stop_hook_active": False}

    def file_changed(self, sid: str, path: str) -> dict:
        return {**self.base(sid), "hook_event_name": "FileChanged", "file_path": path, "event": "change"}

    def _tool(self, sid: str, name: str, tool_input: dict, response, failed: bool = False) -> dict:
        """In the CLI's key order (the hook looks for ``tool_use_id`` near the end)."""
        self.calls += 1
        out = {**self.base(sid), "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse"}
        out.update(tool_name=name, tool_input=tool_input)
        tool_use_id = f"toolu_{uuid.UUID(int=self.rng.getrandbits(128)).hex[:24]}"
        if failed:
            out.update(tool_use_id=tool_use_id, error=response, is_interrupt=False)
        else:
            out.update(tool_response=response, tool_use_id=tool_use_id)
        out["duration_ms"] = self.rng.randint(2, 40)
        return out

    def read(self, sid: str, rel: str) -> dict:
        path, text = self.path(rel), self.text(rel)
        lines = text.split("\n")
        if self.rng.random() < 0.75 or len(lines) < 60:
            file = {"filePath": path, "content": text, "numLines": len(lines), "startLine": 1, "totalLines": len(lines)}
            return self._tool(sid, "Read", {"file_path": path}, {"type": "text", "file": file})
        offset = self.rng.randint(1, len(lines) - 40)
        limit = self.rng.choice((20, 40, 80))
        part = lines[offset - 1 : offset - 1 + limit]
        file = {
            "filePath": path,
            "content": "\n".join(part),
            "numLines": len(part),
            "startLine": offset,
            "totalLines": len(lines),
        }
        return self._tool(
            sid, "Read", {"file_path": path, "offset": offset, "limit": limit}, {"type": "text", "file": file}
        )

    def grep(self, sid: str) -> dict:
        rel = self.pick()
        names = [a or b for a, b in DEF.findall(self.text(rel))] or self.words(rel)
        pat = self.rng.choice(names)
        hits, files = [], []
        for other in self.rels:
            text = self.text(other)
            if pat not in text:
                continue
            files.append(os.path.join("src", other))
            for i, line in enumerate(text.split("\n"), 1):
                if pat in line and len(hits) < 120:
                    hits.append(f"src/{other}:{i}:{line}")
        if self.rng.random() < 0.3:
            resp = {"mode": "files_with_matches", "filenames": files, "numFiles": len(files)}
            return self._tool(sid, "Grep", {"pattern": pat, "path": self.project}, resp)
        resp = {"mode": "content", "numFiles": 0, "filenames": [], "content": "\n".join(hits), "numLines": len(hits)}
        tool_input = {"pattern": pat, "path": self.project, "output_mode": "content", "-n": True}
        return self._tool(sid, "Grep", tool_input, resp)

    def bash(self, sid: str) -> dict:
        rel = self.pick()
        lines = self.text(rel).split("\n")
        kind = self.rng.random()
        if kind < 0.35:
            a = self.rng.randrange(max(1, len(lines) - 30))
            cmd, out, err = f"sed -n '{a + 1},{a + 30}p' src/{rel}", "\n".join(lines[a : a + 30]), ""
        elif kind < 0.6:
            picked = self.rng.sample(self.rels, min(12, len(self.rels)))
            rows = [f"{self.text(r).count(chr(10)):>6} src/{r}" for r in picked]
            cmd, out, err = "wc -l " + " ".join(f"src/{r}" for r in picked), "\n".join(rows), ""
        elif kind < 0.85:
            # A test run: the outcome varies, so an agent's repeated runs are not all one capture.
            names = [a or b for a, b in DEF.findall(self.text(rel))][:30] or ["main"]
            failed = self.rng.sample(names, min(len(names), self.rng.randint(0, 2)))
            rows = [
                f"tests/test_{os.path.basename(rel)}::test_{n} {'FAILED' if n in failed else 'PASSED'}" for n in names
            ]
            tail = f"{len(failed)} failed, {len(names) - len(failed)} passed in {self.rng.uniform(0.2, 9):.2f}s"
            out = "\n".join(rows + ["=" * 20 + f" {tail} " + "=" * 20])
            cmd, err = f"python -m pytest -q tests/test_{os.path.basename(rel)}", ""
            if failed:
                return self._tool(
                    sid, "Bash", {"command": cmd, "description": "run the tests"}, f"Exit code 1\n{out}", True
                )
        else:
            cmd = f"git log --oneline -n 15 -- src/{rel}"
            out = "\n".join(
                f"{self.rng.getrandbits(28):07x} {self.rng.choice(self.words(rel))}: {self.rng.choice(('fix', 'tidy', 'speed up', 'document'))}"
                for _ in range(15)
            )
            err = ""
        resp = {"stdout": out, "stderr": err, "interrupted": False, "isImage": False, "noOutputExpected": False}
        return self._tool(sid, "Bash", {"command": cmd, "description": "look at the code"}, resp)

    def query(self) -> str:
        """What an agent would ask recall: a definition's name, or words from one."""
        rel = self.pick()
        names = [a or b for a, b in DEF.findall(self.text(rel))]
        if names and self.rng.random() < 0.6:
            return self.rng.choice(names)
        return " ".join(self.rng.sample(self.words(rel), min(3, len(self.words(rel)))))

    def session(self, sid: str, captures: int):
        """The events of one session: ("capture", payload), ("edit", path), ("file_changed", path)."""
        read_here: list[str] = []
        for i in range(captures):
            r = self.rng.random()
            if read_here and i % 25 == 24:
                rel = self.rng.choice(read_here)  # the agent edits a file it read, then reads it again
                yield "edit", self.edit(rel, "agent")
                yield "capture", self.read(sid, rel)
            elif r < 0.5:
                rel = self.pick()
                read_here.append(rel)
                yield "capture", self.read(sid, rel)
            elif r < 0.75:
                yield "capture", self.grep(sid)
            else:
                yield "capture", self.bash(sid)

    def between_sessions(self, share: float = 0.05) -> list[str]:
        """The user edits a few files while no session runs."""
        n = max(1, int(len(self.rels) * share))
        return [self.edit(rel, "user") for rel in self.rng.sample(self.rels, n)]
