"""Scan a store's files for secrets as raw bytes, base64 and hex-escaped, plus the FTS index.

Used by the leaky-fixture tests (hook with the writer up and down, wrapped
tools) and the forget tests. Returns findings instead of asserting, so a
test can report every leaking case at once.
"""

from __future__ import annotations

import base64
import os
import re

import apsw

from memtree.store import db as store_db


def encodings(secret: str) -> list[bytes]:
    """The byte forms a secret could take on disk: raw, hex, \\x-escaped, \\u-escaped and
    base64 at each of the three byte alignments (edge characters that depend on
    neighbouring bytes left out)."""
    raw = secret.encode("utf-8")
    out = [
        raw,
        raw.hex().encode(),
        raw.hex().upper().encode(),
        "".join(f"\\x{b:02x}" for b in raw).encode(),
        "".join(f"\\u{b:04x}" for b in raw).encode(),
    ]
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw)
        core = enc[4 if k else 0 : len(enc) - 4]
        if len(core) >= 8:
            out.append(core)
    return out


def files_under(*tops: str, skip: tuple = ()) -> list[str]:
    out = []
    for top in tops:
        for folder, dirs, names in os.walk(top):
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
            out += [os.path.join(folder, n) for n in names]
    return sorted(p for p in set(out) if os.path.isfile(p))


def leaks_in_files(files: list[str], secrets) -> dict[str, list[str]]:
    """secret -> the files holding it in any encoding."""
    found: dict[str, list[str]] = {}
    forms = {s: encodings(s) for s in set(secrets)}
    for path in files:
        with open(path, "rb") as f:
            data = f.read()
        for s, fs in forms.items():
            if any(x in data for x in fs):
                found.setdefault(s, []).append(os.path.basename(path))
    return found


def fts_terms(db_path: str) -> set[str]:
    conn = store_db.open_read(db_path)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, nodes_fts, row)")
        return {r[0] for r in conn.execute("SELECT term FROM temp.vocab")}
    finally:
        conn.close()


def leaks_in_fts(db_path: str, secrets) -> set[str]:
    """Secrets with a distinctive piece (>= 8 chars) in the FTS vocabulary or a phrase hit."""
    terms = fts_terms(db_path)
    out = set()
    conn = store_db.open_read(db_path)
    try:
        for s in set(secrets):
            if any(p.lower() in terms for p in re.split(r"[^A-Za-z0-9]+", s) if len(p) >= 8):
                out.add(s)
                continue
            try:
                phrase = '"' + s.replace('"', '""') + '"'
                if conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?", (phrase,)).fetchone()[0]:
                    out.add(s)
            except apsw.SQLError:
                pass
    finally:
        conn.close()
    return out


def stored_text(db_path: str) -> str:
    conn = store_db.open_read(db_path)
    try:
        return "\n".join(
            f"{r[0]}\n{r[1]}\n{r[2]}" for r in conn.execute("SELECT content, metadata, source_uri FROM nodes")
        )
    finally:
        conn.close()


def case_report(cases, leaked: set[str], stored_text_blob: str, landed: set[str] | None) -> dict[str, list[str]]:
    """case name -> what is wrong with it (leaked secrets, lost benign text, wrong outcome)."""
    bad: dict[str, list[str]] = {}
    for c in cases:
        why = [f"leaked {s[:12]}…" for s in c["secrets"] if s in leaked]
        if landed is not None:
            want = c["expect"] == "stored"
            if (c["name"] in landed) != want:
                why.append("stored" if not want else "not stored")
            if want:
                why += [f"lost benign {k[:30]!r}" for k in c["keep"] if k not in stored_text_blob]
        if why:
            bad[c["name"]] = why
    return bad


def summary(cases, bad: dict) -> str:
    by_cls: dict = {}
    for c in cases:
        row = by_cls.setdefault(c.get("cls", 0), [0, 0, 0])
        row[0] += 1
        row[1] += len(c["secrets"])
        row[2] += c["name"] in bad
    return "; ".join(f"class {k}: {v[0]} cases, {v[1]} secrets, {v[2]} failing" for k, v in sorted(by_cls.items()))
