"""The scanning engine: runs the text rules (memtree/gate/rules.py) over a text.

Speed (the writer redacts before it commits and acks, so a hook waits on it):
a rule runs only if one of its hints occurs, and then only where a
case-sensitive search of the lowercased text finds where a match can begin
(``sub_from``), or only on the lines holding its trigger when it never spans
a newline (``on_hit_lines``): the same matches as ``rx.sub`` over the whole
text, without trying a case-insensitive alternation at every offset.
eval/bench_redact.py measures it; tests/unit/gate/test_redact_fast_paths.py checks each
fast path against the plain form it replaces.

After the rules: key material without its BEGIN/END lines, and base64 that
decodes to a secret. Redacted spans keep their newlines.
"""

from __future__ import annotations

import ast
import functools
import heapq
import json

from memtree.gate import replace as rp
from memtree.gate.lazy import Lazy
from memtree.gate.rules import ANSI, BASE64, KEY_LINE, KEY_TAIL, RULES

# The ``cased`` patterns of the rules, searched in the text itself.
CASED = {r.cased.source: r.cased for r in RULES if r.cased}
# Every hint once, shortest first, each with the shorter hints inside it: when
# one of those is absent so is the hint, without scanning the text for it (a
# scan of a text without the hint reads all of it; most hints are absent).
HINTS = sorted({h for r in RULES for h in r.hints if h not in CASED}, key=lambda h: (len(h), h))
# The hints in groups, each behind a guard: a character every hint of the group
# holds ("_" of "ghp_", "." of "sg.", "=" of "secret=", "-" of "sk-"), so a
# text without it skips the whole group in one test (prose has no "_": 29 hints
# neither scanned for nor visited). The guard "-" is a hint itself, found in the
# first group; "_", "." and "=" are not, and are looked for once. No hint holds
# two of those three, so every shorter hint inside one (its parts) is in its
# own group or in an earlier one, and is known by the time it is asked about.
_GATES = ("_", ".", "=")  # tests/unit/gate/test_redact_fast_paths.py checks the claims above


def _guard(h: str) -> str | None:
    return next((g for g in _GATES if g in h), "-" if "-" in h and h != "-" else None)


_GROUPS = tuple(
    (guard, tuple((h, tuple(g for g in HINTS if len(g) < len(h) and g in h)) for h in HINTS if _guard(h) == guard))
    for guard in (None, "-", *_GATES)
)
# The rules each hint can wake, by position in RULES: a text holding few hints tries only theirs.
_RULES_OF: dict[str, tuple[int, ...]] = {}
for _i, _rule in enumerate(RULES):
    for _h in _rule.hints:
        _RULES_OF[_h] = (*_RULES_OF.get(_h, ()), _i)


def hints_in(low: str, text: str) -> set[str]:
    """The hints that occur in ``low`` (the same answer as ``h in low`` for
    each) and the ``cased`` patterns found in ``text``."""
    found = {c for c, lazy in CASED.items() if lazy.rx().search(text)}
    for guard, group in _GROUPS:
        if guard is None or (guard in found if guard == "-" else guard in low):
            for h, parts in group:
                if (not parts or found.issuperset(parts)) and h in low:
                    found.add(h)
    return found


def rules_for(present: set[str]) -> list:
    """The rules, in their order, with a hint in ``present`` (the rules ``_redact`` runs)."""
    if not present:
        return []
    return [RULES[i] for i in sorted({i for h in present for i in _RULES_OF.get(h, ())})]


# Non-ASCII characters that ``re``'s IGNORECASE matches to an ASCII letter:
# folded first, so the lowercase text the prefilters scan misses no candidate.
_FOLD = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}


def folded(text: str) -> str | None:
    """``text`` lowercased, position for position (None if lowering changes its length)."""
    if text.isascii():
        return text.lower()
    low = text.translate(_FOLD).lower() if any(chr(c) in text for c in _FOLD) else text.lower()
    return low if len(low) == len(text) else None


def on_lines(text: str, lazy, repl, ops: tuple, hints) -> str:
    """Run a one-line rule only on lines holding one of ``hints`` and one of
    ``ops``: its case-insensitive alternation is slow to try at every offset.
    The lines holding an op are found by ``str.find``, not by visiting each line."""
    starts: set[int] = set()
    for o in ops:  # no op holds a newline
        i = text.find(o)
        while i >= 0:
            starts.add(text.rfind("\n", 0, i) + 1)
            i = text.find("\n", i)
            i = -1 if i < 0 else text.find(o, i)
    rx, out, pos = lazy.rx(), [], 0
    for a in sorted(starts):
        b = text.find("\n", a)
        b = len(text) if b < 0 else b
        line = text[a:b]
        if any(h in line.lower() for h in hints):
            new = rx.sub(repl, line)
            if new != line:
                out += (text[pos:a], new)
                pos = b
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def on_hit_lines(lazy, trigger, text: str, repl) -> str:
    """``rx.sub(repl, text)`` for a rule whose matches never span a newline and
    always hold ``trigger``: only the lines where the trigger occurs are tried."""
    rx, find, out, pos = lazy.rx(), trigger.rx().search, [], 0
    t = find(text)
    while t is not None:
        a = text.rfind("\n", 0, t.start()) + 1
        b = text.find("\n", t.end())
        b = len(text) if b < 0 else b
        # the line alone: a look-behind at its start sees "\n" in the text, nothing here; both are non-word
        out.append(text[pos:a])
        out.append(rx.sub(repl, text[a:b]))
        pos = b
        t = find(text, b)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


# Key material and base64 tokens are runs of 16+ base64 characters on one line.
_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_MARKS = bytes(98 if i in _B64_ALPHABET else 46 for i in range(256))  # b"b" for the alphabet, b"." else
_B64_RUN = b"b" * 16


def on_run_lines(lazy, text: str, repl) -> str:
    """``rx.sub(repl, text)`` for a rule whose matches never span a newline and
    always hold 16 base64 characters in a row: only the lines with such a run
    are tried, found by translating bytes (the rules' regexes crawl through
    every offset of a large text at ~30 KB/ms)."""
    marks = text.encode("ascii", "replace").translate(_B64_MARKS)  # one byte per character
    rx, out, pos = lazy.rx(), [], 0
    t = marks.find(_B64_RUN)
    while t >= 0:
        a = text.rfind("\n", 0, t) + 1
        b = text.find("\n", t)
        b = len(text) if b < 0 else b
        out.append(text[pos:a])
        out.append(rx.sub(repl, text[a:b]))  # alone, the line's ends still look like "\n" to ^, $ and look-arounds
        pos = b
        t = marks.find(_B64_RUN, b)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _regex_finder(rx, low: str):
    def find(pos: int) -> int:
        m = rx.search(low, pos)
        return -1 if m is None else m.start()

    return find


def literal_finder(rx, lits: tuple, low: str):
    """``rx.search(low, pos).start()`` (-1: none) for a pattern every match of
    which begins with one of ``lits``, asked for with a ``pos`` that never
    goes back: ``str.find`` proposes, ``rx.match`` confirms (a regex opening
    with a long alternation tries it at every offset, several times slower)."""
    heap = [(i, w) for w in lits for i in (low.find(w),) if i >= 0]
    heapq.heapify(heap)

    def find(pos: int) -> int:
        while heap:
            i, w = heap[0]
            if i >= pos and rx.match(low, i):
                return i
            j = low.find(w, max(pos, i + 1))
            if j < 0:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (j, w))
        return -1

    return find


def sub_from(lazy, starts, text: str, low: str | None, repl, back: int = 0, lits: tuple = ()) -> str:
    """``rx.sub(repl, text)`` for a rule whose every match begins where
    ``starts`` (a case-sensitive pattern) is found in the folded text ``low``:
    the regex runs only there, not at every offset (the same matches, 4-8x
    faster on text with few candidates). ``rx.match`` at an offset sees the
    text before it (look-behinds, \\b), exactly as ``sub`` would. With
    ``back``, a match may begin up to ``back`` characters before (never before
    ``pos``): trying one offset too many only costs a ``match``. With ``lits``,
    every match of ``starts`` begins with one of them (``literal_finder``)."""
    rx = lazy.rx()
    if low is None:
        return rx.sub(repl, text)
    srx = starts.rx()
    find, out, pos = (literal_finder(srx, lits, low) if lits else _regex_finder(srx, low)), [], 0
    c = find(0)
    while c >= 0:
        s = max(c - back, pos)
        m = rx.match(text, s)
        if m is None:
            c = find(s + back + 1)
            continue
        out.append(text[pos:s])
        out.append(repl(m))
        pos = m.end()
        c = find((pos if pos > s else s + 1) + back)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _mixed(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isupper() for c in v) and any(c.islower() for c in v)


def _key_material(text: str, tags: set) -> str:
    def repl(m):
        if not _mixed(m.group("v")):
            return m.group(0)  # hex digests, words
        tags.add("key_material")
        return rp.put(m, "v", "[REDACTED:key_material]")

    text = on_run_lines(KEY_LINE, text, repl)
    if "key_material" in tags:
        for _ in range(2):
            text = KEY_TAIL.rx().sub(lambda m: m.group("gap") + "[REDACTED:key_material]", text)
    return text


def _encoded_secrets(text: str, tags: set) -> str:
    """A base64 token that decodes to text holding a secret is itself one."""
    import binascii

    def repl(m):
        tok = m.group(0)
        if len(tok) % 4 or tok.isalpha():
            return tok
        try:
            plain = binascii.a2b_base64(tok).decode("utf-8")
        except (binascii.Error, ValueError):
            return tok
        if not plain.isprintable() and not all(c.isprintable() or c in "\n\r\t" for c in plain):
            return tok
        if _redact(plain, depth=1)[1]:
            tags.add("base64_secret")
            return "[REDACTED:base64_secret]"
        return tok

    return on_run_lines(BASE64, text, repl)


def _apply(rule, text: str, low_of, tags: set) -> str:
    """One rule over ``text``, tried only where its kind of fast path says."""
    repl = rule.replace(rule, tags)
    if rule.lines is not None:
        return on_hit_lines(rule.pattern, rule.lines, text, repl)
    if rule.ops:
        return on_lines(text, rule.pattern, repl, rule.ops, rule.hints)
    if rule.gate is not None:
        return rule.pattern.rx().sub(repl, text) if rule.gate(folded(text) or text.lower()) else text
    return sub_from(rule.pattern, rule.starts, text, low_of(text), repl, rule.back, rule.lits)


def _redact(text: str, depth: int, listing: bool = True) -> tuple[str, list[str]]:
    """``listing``: a numbered listing is looked for (once: its lines, numbers off, are not again)."""
    if not text:
        return text, []
    if "\r\n" in text:
        return _crlf(text, depth)
    if listing and text[:8].lstrip(" ")[:1].isdigit() and _NUMBERED.rx().match(text):
        numbered = _numbered(text, depth)
        if numbered is not None:
            return numbered
    tags: set[str] = set()
    if "\x1b" in text:  # colour codes split "KEY:\x1b[39m value"; they carry nothing worth storing
        text = ANSI.rx().sub("", text)
    if depth < MAX_DEPTH:  # before the rules, which would see (and cut) a literal's escapes
        text = _escaped_strings(text, tags, depth)
    low = folded(text)
    present = hints_in(text.lower() if low is None else low, text)
    seen = [text, low]  # the folded text, taken again only when a rule changed the text

    def low_of(t: str) -> str | None:
        if t is not seen[0]:
            seen[0], seen[1] = t, folded(t)
        return seen[1]

    for rule in rules_for(present):
        text = _apply(rule, text, low_of, tags)
    text = _key_material(text, tags)
    if depth == 0:
        text = _encoded_secrets(text, tags)
    return text, sorted(tags)


def _inside_lines(lines: list[str], heads: list[int], tails: list[int], depth: int, listing: bool = True):
    """``lines`` redacted as one text without each line's first ``heads[i]`` and
    last ``tails[i]`` characters, which are put back after (the rules keep every
    newline, so the lines still pair up)."""
    clean, tags = _redact("\n".join(s[h : len(s) - t] for s, h, t in zip(lines, heads, tails)), depth, listing)
    out = clean.split("\n")
    if len(out) != len(lines):  # never expected
        return clean, tags
    return "\n".join(s[:h] + o + s[len(s) - t :] for s, h, t, o in zip(lines, heads, tails, out)), tags


def _crlf(text: str, depth: int) -> tuple[str, list[str]]:
    """A text with Windows line ends, redacted as its lines without the ``\r``
    (the rules end a value at a line's end: ``\r`` is no space, so
    ``password: x\r`` or a key line ending in one went unseen), each line's
    ``\r`` put back after."""
    lines = text.split("\n")
    return _inside_lines(lines, [0] * len(lines), [int(s.endswith("\r")) for s in lines], depth)


# A numbered listing: `cat -n`, `nl`, Claude Code's Read (`     1\t...`, `    12→...`): every
# line's number is taken off, the text redacted as the file it shows, and the numbers put back
# (a rule anchored at a line's start, a key's bare lines, `NAME ?= x`, saw the number first).
_NUMBERED = Lazy(r" *\d+(?:\t|→)")


def _numbered(text: str, depth: int) -> tuple[str, list[str]] | None:
    lines = text.split("\n")
    rx = _NUMBERED.rx()
    heads = [rx.match(line) for line in lines]
    if not all(h or not line for h, line in zip(heads, lines)):
        return None  # not every line numbered: not a listing
    return _inside_lines(lines, [h.end() if h else 0 for h in heads], [0] * len(lines), depth, listing=False)


# A string literal holding escapes (JSON's "...\n...\"...", Python's '...\n...'): a file or a
# command's output inside a JSON value (kubectl get -o json, docker inspect, an API's answer, a
# log line) or a repr. Its text is redacted as the text it encodes, to MAX_DEPTH levels (JSON in
# a JSON string), and encoded again when that changed anything: inside the literal every
# quote is \" and every line one line, so no rule saw `SECRET_KEY = \"x\"` or a key's lines.
MAX_DEPTH = 3
_LITERAL = Lazy(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")


def _escaped_strings(text: str, tags: set, depth: int) -> str:
    if "\\n" not in text and '\\"' not in text and "\\'" not in text:
        return text

    def repl(m):
        lit = m.group(0)
        if "\\" not in lit:
            return lit
        try:
            inner = json.loads(lit) if lit[0] == '"' else ast.literal_eval(lit)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return lit
        if not isinstance(inner, str):
            return lit
        clean, found = _redact(inner, depth + 1)
        if not found:
            return lit
        tags.update(found)
        if lit[0] != '"':
            return repr(clean)
        out = json.dumps(clean, ensure_ascii=False)
        try:
            out.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate ("\ud800") stays an escape: the store takes UTF-8
            out = json.dumps(clean)
        return out

    return _LITERAL.rx().sub(repl, text)


# A capture's chunks repeat the same short strings (session id, tool input,
# path, metadata keys) hundreds of times: a bounded memo of short texts makes
# each one cost one pass per process, not one per chunk.
_MEMO_CHARS = 256


@functools.lru_cache(maxsize=4096)
def _redact_short(text: str) -> tuple[str, tuple[str, ...]]:
    clean, tags = _redact(text, 0)
    return clean, tuple(tags)


def redact_text(text: str) -> tuple[str, list[str]]:
    """Replace every secret in ``text``; return (clean text, sorted tags found).

    Redacted spans keep their newlines, so a whole file redacted first and
    chunked after has the same lines (a key across a chunk edge is caught).
    """
    clean, tags = _redact_any(text)
    return clean, list(tags)


def _redact_any(text: str):
    """(clean text, tags as found): a short text through the memo."""
    return _redact_short(text) if len(text) <= _MEMO_CHARS else _redact(text, 0)


def redact_value(value):
    """Redact every string inside a JSON-like value (dict keys too); return (value, tags)."""
    tags: set[str] = set()

    def walk(v):
        if isinstance(v, str):  # without redact_text's list of tags (metadata: a few short strings a row)
            clean, found = _redact_any(v)
            if found:
                tags.update(found)
            return clean
        if isinstance(v, dict):
            return {walk(k) if isinstance(k, str) else k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value), sorted(tags)
