"""Which native outputs to rewrite, and the exact ``updatedToolOutput`` objects.

The writer reads what a replacement needs from the store inside the
capture's transaction (a ``Job``) and builds it with ``build`` after COMMIT,
before it replies: the whole output is safe in the store before the agent is
shown less of it, and the preview's disk read and redaction pass hold no
transaction that other requests wait on. Every string put
into a replacement passes memtree.gate first. Shapes, checked on the real
CLI 2.1.197 (../shared/claude-code/verified-2.1.197.md §1.3); anything else is
silently ignored by the CLI:
- Read  ``{type:"text", file:{filePath, content, numLines, startLine, totalLines}}``
- Grep  ``{mode:"content", numFiles, filenames, content, numLines}`` (content
  mode in every case: it is the only mode whose text the CLI shows verbatim)
- Bash  the original object with ``stdout``/``stderr`` replaced and the
  ``persisted*`` keys dropped (kept, the CLI wraps the preview again).
A Read with offset or limit is the agent asking for exact lines: never rewritten.
"""

from __future__ import annotations

import os

from memtree import tokens
from memtree.capture import claude_code, ondisk, preview
from memtree.capture import settings as capture_settings
from memtree.capture.claude_code import POST_TOOL_USE
from memtree.gate import redact_text

_PERSISTED = ("persistedOutputPath", "persistedOutputSize")
# Previews look at no more than this much of one output: Claude Code caps Bash
# at 30K chars and Read at 25K tokens, and the writer must stay quick.
MAX_INPUT_CHARS = 200_000
# A Read cut at Claude Code's token cap is outlined from the file on disk up to this size.
MAX_DISK_BYTES = 2_000_000


def settings(config) -> dict:
    """The rewrite knobs (the capture section, defaults filled in)."""
    return capture_settings.section(config, "capture")


def _cap(text: str) -> str:
    return text[:MAX_INPUT_CHARS]


def _clean(text: str) -> str:
    return redact_text(text)[0]


def _lines(text: str) -> int:
    return text.count("\n") + 1


class Job:
    """A replacement to build for a stored capture: the payload, the rewrite
    settings, the project root (a token-capped Read is outlined from disk only
    inside it), and either the id the preview names (``node_id``) or, for a
    re-Read of an unchanged file, the earlier capture ``(id, content, total
    lines)`` the CLI refers the agent to (``unchanged``)."""

    __slots__ = ("payload", "cfg", "root", "node_id", "unchanged")

    def __init__(
        self, payload: dict, cfg: dict, root: str | None, node_id: str | None = None, unchanged: tuple | None = None
    ):
        self.payload, self.cfg, self.root, self.node_id, self.unchanged = payload, cfg, root, node_id, unchanged


def unchanged_path(payload: dict) -> str | None:
    """The file a ``file_unchanged`` Read names (normalised), or None."""
    resp = payload.get("tool_response")
    if payload.get("tool_name") != "Read" or not isinstance(resp, dict) or resp.get("type") != "file_unchanged":
        return None
    f = resp.get("file")
    path = f.get("filePath") if isinstance(f, dict) else None
    return os.path.normpath(path) if isinstance(path, str) else None


def build(job: Job | None) -> dict | None:
    """The hook output for ``job`` (see ``hook_output``), or None to leave the native output as it is."""
    if job is None:
        return None
    if job.unchanged is not None:
        node_id, stored, total = job.unchanged
        updated = unchanged_output(unchanged_path(job.payload), stored, total, node_id, job.cfg, job.root)
    else:
        updated = updated_output(job.payload, job.node_id, job.cfg, job.root)
    return hook_output(updated) if updated else None


def hook_output(updated: dict) -> dict:
    return claude_code.hook_output(POST_TOOL_USE, updatedToolOutput=updated)


def updated_output(payload: dict, node_id: str | None, cfg: dict, root: str | None = None) -> dict | None:
    """The replacement for a stored PostToolUse output, or None to leave it as it is.
    ``root``: the project (None: a token-capped Read is not outlined from disk)."""
    if not cfg.get("rewrite") or payload.get("hook_event_name", POST_TOOL_USE) != POST_TOOL_USE:
        return None
    tool, ti, resp = payload.get("tool_name"), payload.get("tool_input"), payload.get("tool_response")
    if not isinstance(ti, dict) or not isinstance(resp, dict):
        return None
    budget = int(cfg["previewTokens"] if tool == "Read" else cfg["previewTextTokens"])
    if tool == "Read":
        return _read(ti, resp, node_id, cfg, budget, root)
    if tool == "Grep":
        return _grep(ti, resp, node_id, cfg, budget)
    if tool == "Bash":
        return _bash(ti, resp, node_id, cfg, budget)
    return None


def _read_object(path: str, text: str, total: int) -> dict:
    return {
        "type": "text",
        "file": {"filePath": path, "content": text, "numLines": _lines(text), "startLine": 1, "totalLines": total},
    }


def _whole_from_disk(path: str, shown: str, root: str | None) -> str | None:
    """The whole file, when Claude Code cut a Read at its token cap (its own
    note before our preview says so, and no replacement removes it: §1.4).
    Read again only from a file inside the project whose beginning is exactly
    what the Read returned, so the outline describes the same file; only its
    outline reaches the preview, and nothing more is stored."""
    text = ondisk.project_file_text(path, root, MAX_DISK_BYTES)
    return text if text is not None and text.startswith(shown) else None


def _preview(
    path: str,
    shown: str,
    total: int,
    read_lines: int,
    node_id: str | None,
    budget: int,
    text_budget: int,
    root: str | None,
    lead: str = "",
) -> str:
    whole = _whole_from_disk(path, shown, root) if read_lines < total else None
    cut = None if read_lines >= total else "prefix" if whole is None else "all"
    return preview.read_text(
        path,
        _cap(whole if whole is not None else shown),
        total,
        node_id,
        budget,
        cut=cut,
        lead=lead,
        text_budget=text_budget,
    )


def _read(ti: dict, resp: dict, node_id: str, cfg: dict, budget: int, root: str | None) -> dict | None:
    if ti.get("offset") is not None or ti.get("limit") is not None or resp.get("type") != "text":
        return None
    f = resp.get("file")
    if not isinstance(f, dict) or not isinstance(f.get("content"), str) or not isinstance(f.get("filePath"), str):
        return None
    content = _cap(f["content"])
    if tokens.count(content) <= cfg["rewriteReadTokens"]:
        return None
    total = f.get("totalLines") if isinstance(f.get("totalLines"), int) else _lines(content)
    read_lines = f.get("numLines") if isinstance(f.get("numLines"), int) else total
    text = _clean(
        _preview(f["filePath"], f["content"], total, read_lines, node_id, budget, int(cfg["previewTextTokens"]), root)
    )
    return _read_object(f["filePath"], text, total)


def unchanged_output(
    path: str, stored: str, total: int, node_id: str, cfg: dict, root: str | None = None
) -> dict | None:
    """Claude Code answers a re-Read of an unchanged file with "refer to the earlier
    tool_result"; when that earlier result was our preview, answer with it again
    (from the stored, already redacted capture) and say how to get exact lines.
    ``root``: the project (None: the file is not outlined from disk)."""
    if not cfg.get("rewrite") or tokens.count(_cap(stored)) <= cfg["rewriteReadTokens"]:
        return None
    lead = "File unchanged since your last Read, which showed this preview. "
    read_lines = _lines(stored)
    text = _clean(
        _preview(
            path,
            stored,
            total,
            read_lines,
            node_id,
            int(cfg["previewTokens"]),
            int(cfg["previewTextTokens"]),
            root,
            lead,
        )
    )
    return _read_object(path, text, total)


def _grep(ti: dict, resp: dict, node_id: str, cfg: dict, budget: int) -> dict | None:
    content = resp.get("content")
    files = [f for f in resp.get("filenames") or [] if isinstance(f, str)]
    text = _cap(content if isinstance(content, str) else "\n".join(files))
    if tokens.count(text) <= cfg["rewriteGrepTokens"]:
        return None
    shown = _clean(preview.grep_text(ti, {**resp, "content": text}, node_id, budget))
    num_files = resp.get("numFiles") if isinstance(resp.get("numFiles"), int) else len(files)
    return {"mode": "content", "numFiles": num_files, "filenames": [], "content": shown, "numLines": _lines(shown)}


def _bash(ti: dict, resp: dict, node_id: str, cfg: dict, budget: int) -> dict | None:
    out, err = resp.get("stdout"), resp.get("stderr")
    if not isinstance(out, str) or not isinstance(err, str) or not isinstance(resp.get("interrupted"), bool):
        return None
    out, err = _cap(out), _cap(err)
    if tokens.count(out) + tokens.count(err) <= cfg["rewriteBashTokens"]:
        return None
    cmd = ti.get("command") if isinstance(ti.get("command"), str) else ""
    o_tok, e_tok = tokens.count(out), tokens.count(err)
    err_text = err
    if e_tok > budget // 4:  # stderr gets a quarter, or what stdout leaves
        err_text = preview.bash_text(
            cmd, "stderr", err, node_id, budget // 4 if o_tok > budget // 4 else budget - o_tok
        )
    left = budget - tokens.count(err_text)
    out_text = out if o_tok <= left else preview.bash_text(cmd, "stdout", out, node_id, left)
    if isinstance(resp.get("persistedOutputPath"), str) and o_tok > left:
        size = resp.get("persistedOutputSize")
        out_text += (
            f"\n[Claude Code kept the first {len(out):,} chars"
            + (f" of {size:,}" if isinstance(size, int) else "")
            + f"; all of it: {resp['persistedOutputPath']}]"
        )
    new = {k: v for k, v in resp.items() if k not in _PERSISTED}
    new["stdout"], new["stderr"] = _clean(out_text), _clean(err_text)
    return new


__all__ = ["settings", "Job", "build", "unchanged_path", "updated_output", "unchanged_output", "hook_output"]
