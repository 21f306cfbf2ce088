"""What forget must reach beyond the node itself, and the line tombstones.

Forgotten text can sit in other rows: an exact duplicate the filter dropped,
the per-line hits of a grep, a whole-file read that holds a forgotten symbol
chunk, a summary that quotes it. ``copies`` finds them; ``scrub`` replaces
forgotten lines inside a text with ``[FORGOTTEN]``. Tombstones keep the whole
content hash (as before) plus one key per distinctive line, so the same text
captured again in another slicing is cut out (or refused when nothing else is
left) whatever its new shape. Only the writer calls this (through mutations).
"""

from __future__ import annotations

import hashlib
import re

from memtree.store.live import ANY_STATUS, NOT_FORGOTTEN, status_clause
from memtree.store.reads import batches

LINE_KEY = "line:"  # tombstones.content_hash prefix of a line key
LINE_RANGE = (LINE_KEY, LINE_KEY[:-1] + ";")  # every line key sorts inside [start, end)
MIN_LINE_CHARS = 12  # shorter lines ("return x", "}") are too common to tombstone
MAX_LINES = 2000  # line keys per forgotten node
SCAN_LINES = 64  # lines searched for in other rows at forget time (the longest ones)
MARK = "[FORGOTTEN]"
# The lines memtree frames every Bash capture with (memtree/capture/ingest.py): shared
# by all captures, never a forgotten text's own. Tombstoned, they were cut out
# of every kept and future Bash capture.
FRAME_LINE = re.compile(r"exit: \S+|--- (?:stdout|stderr|output) ---")
ROOTS = ("session", "file")
# A grep hit keeps its "path:N:" (or context "path-N-") prefix.
_PREFIX = re.compile(r"^[^\s:]+(?::\d+:|-\d+-)")


def _norm(line: str) -> tuple[str, str]:
    """(prefix kept in place, normalised text) of one line."""
    m = _PREFIX.match(line)
    pre = m.group(0) if m else ""
    return pre, line[len(pre) :].strip()


def line_key(text: str) -> str:
    return LINE_KEY + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def distinctive_lines(text: str) -> dict[str, str]:
    """line key -> normalised line, for the lines of ``text`` worth a tombstone."""
    out: dict[str, str] = {}
    for line in text.split("\n"):
        _pre, norm = _norm(line)
        if len(norm) >= MIN_LINE_CHARS and not norm.startswith(("[REDACTED", MARK)) and not FRAME_LINE.fullmatch(norm):
            out.setdefault(line_key(norm), norm)
            if len(out) >= MAX_LINES:
                break
    return out


def has_line_tombstones(db) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM tombstones WHERE content_hash >= ? AND content_hash < ? LIMIT 1",
            LINE_RANGE,
        ).fetchone()
        is not None
    )


def _tombstoned_keys(db, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for part in batches(keys):
        found.update(
            r[0]
            for r in db.execute(
                f"SELECT content_hash FROM tombstones WHERE content_hash IN ({','.join('?' * len(part))})", part
            )
        )
    return found


def scrub(text: str, forgotten) -> tuple[str, int, bool]:
    """``text`` with every line whose normalised form is in ``forgotten`` (a set
    of line keys) replaced by the mark: (text, lines cut, nothing else left)."""
    lines, cut, kept = text.split("\n"), 0, 0
    for i, line in enumerate(lines):
        pre, norm = _norm(line)
        if not norm:
            continue
        if len(norm) >= MIN_LINE_CHARS and line_key(norm) in forgotten:
            lines[i] = pre + MARK
            cut += 1
        else:
            kept += 1
    return ("\n".join(lines) if cut else text), cut, cut > 0 and kept == 0


# One statement for what every new capture asks: is its hash tombstoned, and is any line?
_CHECK = (
    "SELECT EXISTS(SELECT 1 FROM tombstones WHERE content_hash = ?),"
    " EXISTS(SELECT 1 FROM tombstones WHERE content_hash >= ? AND content_hash < ?)"
)


def tombstone_check(db, digest: str) -> tuple[bool, bool]:
    """(``digest`` is tombstoned, some line is): the two checks before an insert, in one query."""
    hit, lines = db.execute(_CHECK, (digest, *LINE_RANGE)).fetchone()
    return bool(hit), bool(lines)


def scrub_new(db, text: str, lines: bool | None = None) -> tuple[str, int, bool]:
    """A text about to be stored, with lines forgotten earlier cut out
    (``lines``: whether any line is tombstoned, when the caller knows)."""
    if not text or not (has_line_tombstones(db) if lines is None else lines):
        return text, 0, False
    keys = distinctive_lines(text)
    if not keys:
        return text, 0, False
    return scrub(text, _tombstoned_keys(db, list(keys)))


def add_tombstones(db, node_id: str, digest: str, text: str, reason: str, at: int) -> None:
    rows = [(digest, node_id, reason, at)] + [(k, node_id, reason, at) for k in distinctive_lines(text)]
    db.executemany("INSERT OR IGNORE INTO tombstones(content_hash, node_id, reason, at) VALUES (?,?,?,?)", rows)


def subtree(db, roots: list[str]) -> list[str]:
    where, params = status_clause("n", ANY_STATUS)  # forgetting reaches every status
    seen, todo = list(dict.fromkeys(roots)), list(dict.fromkeys(roots))
    while todo:
        nid = todo.pop(0)
        for (child,) in db.execute(f"SELECT n.id FROM nodes n WHERE n.parent_id = ? AND {where}", [nid, *params]):
            if child not in seen:
                seen.append(child)
                todo.append(child)
    return seen


def _in(ids) -> str:
    return ",".join("?" * len(ids))


def _ids_matching(db, sql: str, values: list[str], skip: set, status: tuple) -> list[str]:
    """Ids the query finds for ``values`` (bound in batches at ``{IN}``) among
    nodes ``n`` of ``status`` (at ``{where}``), not in ``skip``."""
    where, params = status
    out = []
    for part in batches(values):
        out += [r[0] for r in db.execute(sql.format(IN=_in(part), where=where), [*part, *params]) if r[0] not in skip]
    return out


def same_hash(db, hashes: list[str], skip: set) -> list[str]:
    """Rows with one of these content hashes (a dropped duplicate, a re-capture)."""
    return _ids_matching(
        db,
        "SELECT n.id FROM nodes n WHERE n.content_hash IN ({IN}) AND n.kind NOT IN ('session', 'file') AND {where}",
        hashes,
        skip,
        status_clause("n", NOT_FORGOTTEN),
    )


def summaries_of(db, ids: list[str], skip: set) -> list[str]:
    """Summaries whose ``summarizes`` edge points at one of ``ids``: they quote them."""
    return _ids_matching(
        db,
        "SELECT DISTINCT e.src_id FROM edges e JOIN nodes n ON n.id = e.src_id"
        " WHERE e.kind = 'summarizes' AND e.dst_id IN ({IN}) AND {where}",
        ids,
        skip,
        status_clause("n", NOT_FORGOTTEN),
    )


def holding_lines(db, lines: dict[str, str], skip: set) -> list[tuple[str, str]]:
    """(id, content) of other rows that contain a forgotten line (a grep hit,
    a whole-file read around a forgotten chunk), any status but forgotten."""
    longest = sorted(set(lines.values()), key=len, reverse=True)[:SCAN_LINES]
    where, params = status_clause("n", NOT_FORGOTTEN)
    found: dict[str, str] = {}
    for i in range(0, len(longest), 16):
        part = longest[i : i + 16]
        cond = " OR ".join("instr(n.content, ?) > 0" for _ in part)
        for nid, content in db.execute(
            f"SELECT n.id, n.content FROM nodes n WHERE n.kind NOT IN ('session', 'file') AND {where} AND ({cond})",
            [*params, *part],
        ):
            if nid not in skip:
                found[nid] = content
    return list(found.items())
