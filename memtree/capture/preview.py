"""Budgeted previews of large native tool outputs (the PostToolUse rewrite).

Claude Code lets a PostToolUse hook replace what the model sees of a built-in
tool (``hookSpecificOutput.updatedToolOutput``), but only with an object of
the tool's exact output shape; anything else is ignored without a word to the
model (../shared/claude-code/verified-2.1.197.md §1.3). This module builds
those objects: above a per-tool threshold the agent sees a preview (code: the
outline of symbols with line ranges; text and logs: head, tail and the lines
that matter) plus how to get the rest, while memtree keeps the whole output.

Pure and standard library only (no ``ast``: a line scan finds definitions in
any indented language and costs nothing to import). The caller stores the
output first and redacts the preview text; see memtree.store.write.captures.
"""

from __future__ import annotations

import re

from memtree import tokens
from memtree.text import grep_output
from memtree.text.fit import clip_line, fit_rows
from memtree.text.outline import headings, outline

_CODE_EXT = frozenset(
    (
        "py",
        "pyi",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "ts",
        "tsx",
        "go",
        "rs",
        "rb",
        "ex",
        "exs",
        "java",
        "kt",
        "scala",
        "swift",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "cs",
        "php",
        "lua",
        "sh",
    )
)
_DOC_EXT = frozenset(("md", "markdown", "rst"))
# A line that matters in a log, test or build output: a level or verdict
# written the way tools write it (``ERROR``, ``FAILED``, ``error:``,
# ``ValueError:``, ``x.c:3:1: error``, ``3 failed``), not a word in prose: a
# changelog's "does not fail" or "show an error" is not one.
_SIGNAL = re.compile(
    r"\b(?:ERROR|FAIL|FAILED|FAILURE|FATAL|PANIC|CRITICAL|WARN|WARNING)\b|\bERR!"
    r"|^\W{0,3}(?:error|warning|fatal|panic|failed|failure)\b\s*[:\[!]"
    r"|^(?:E\s+|\W{0,3})[\w.]*(?:Error|Exception|Warning|Interrupt|Exit)\b(?::|$)"
    r"|\bTraceback \(most recent call last\)"
    r"|:\d+(?::\d+)?:\s*(?:error|warning|fatal error)\b"
    r"|\b\d+ (?:failed|errors?)\b"
    r"|\b(?:[Ss]egmentation fault|core dumped|Killed|[Tt]imed out|No such file or directory|Permission denied"
    r"|command not found|exit (?:code|status) [1-9]\d*)"
)
MAX_LINE_CHARS = 200
# How the agent gets a stored output back (memtree's MCP surface).
FETCH = "memtree recall ids={id}"
FIND = "memtree recall query={query}"


def _kept(node_id: str | None, query: str, fetch: bool = False, what: str = "whole") -> str:
    """Where the whole output is: a node id once the writer stored it (with the
    call that returns it when native tools cannot: a command's output); a
    spooled capture has none yet, so name the search that finds it once drained."""
    if node_id:
        return f"{what}: {FETCH.format(id=node_id)}" if fetch else f"{what} in memtree node {node_id}"
    return f"{what} kept by memtree, being stored (later: {FIND.format(query=query)})"


def _clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    return clip_line(line, limit)


def _short(label: str) -> str:
    """``def name(args) -> x`` -> ``def name``: the outline's fallback when signatures do not fit."""
    return label.split("(", 1)[0].split("<", 1)[0]


def _compact(items, public_only: bool = False) -> list[str]:
    """Top-level definitions with their members inline (``name Lstart``): the
    outline of a big file when one line per definition does not fit."""
    rows, top = [], min((it[0] for it in items), default=0)
    for k, (indent, text, a, b) in enumerate(items):
        if indent != top:
            continue
        members: dict[str, int] = {}  # name -> line; the last of same-named overloads is the implementation
        for j in range(k + 1, len(items)):  # not a slice: that copies the rest for every definition
            i, t, start, _e = items[j]
            if start > b:  # items run in line order: past this definition's last line
                break
            if i <= indent or i > indent + 8:
                continue
            name = _short(t).split()[-1]
            if not (public_only and name.startswith("_")):
                members.pop(name, None)
                members[name] = start
        members = [f"{n} L{start}" for n, start in members.items()]
        rows.append(f"{_short(text)} L{a}-{b}" + (f": {', '.join(members)}" if members else ""))
    return rows


def _within(rows: list[str], budget: int) -> bool:
    """Whether the rows (one token each for the line break) fit, counting no further than needed."""
    used = 0
    for r in rows:
        used += tokens.count(r) + 1
        if used > budget:
            return False
    return True


# Outlines with more rows than this list members inline (one row per top-level
# definition): an indented row per method cost types.py 80 numbered rows.
MAX_INDENTED_ROWS = 24
FOLD_CHARS = 160  # memberless top-level rows share a line up to this width


def _outline_rows(items, budget: int) -> tuple[list[str], str]:
    """Outline lines within ``budget`` (signatures, else names, indented while
    they are few; else members inline, else public members inline, else the
    top level with the public members of the biggest definitions that fit,
    else cut) and what was left out."""
    top = min((it[0] for it in items), default=0)
    few = sum(1 for it in items if it[0] <= 8) <= MAX_INDENTED_ROWS
    tiers = (  # built one at a time: most files stop at the first that fits
        lambda: [f"{' ' * min(i, 8)}{t} L{a}-{b}" for i, t, a, b in items if i <= 8] if few else None,
        lambda: [f"{' ' * min(i, 8)}{_short(t)} L{a}-{b}" for i, t, a, b in items if i <= 8] if few else None,
        lambda: _compact(items),
        lambda: _compact(items, public_only=True),
        lambda: [f"{_short(t)} L{a}-{b}" for i, t, a, b in items if i == top],
    )
    left_out = ("", "", "", "private members not listed", "members not listed")
    # Every tier's rows are at least as long as the top-level-only rows (names are
    # prefixes of signatures; members and indentation only add), so when even
    # those do not fit, none does: cut them without building the rest.
    last = tiers[-1]() if top <= 8 else None
    if last is not None and not _within(last, budget):
        tiers, left_out = (lambda: last,), ("",)
    rows: list[str] = []
    for build, note in zip(tiers, left_out):
        built = build()
        if built is None:
            continue
        if note == "members not listed":  # the top level fits: give members to the biggest that still fit
            return _biggest_members(items, built, budget)
        rows = built
        if _within(rows, budget):
            return rows, note
    full, rows = rows, fit_rows(rows, budget)[0]
    return rows, f"{len(full) - len(rows)} more top-level definitions and all members not listed"


def _biggest_members(items, top_rows: list[str], budget: int) -> tuple[list[str], str]:
    """Top-level rows, the biggest definitions with their public members inline
    while they fit: a big class is where a map of its members saves most."""
    top = min(it[0] for it in items)
    full = _compact(items, public_only=True)
    spans = [b - a for i, _t, a, b in items if i == top]
    rows, used = list(top_rows), sum(tokens.count(r) + 1 for r in top_rows)
    for k in sorted(range(len(rows)), key=lambda k: -spans[k]):
        extra = tokens.count(full[k]) - tokens.count(rows[k])
        if extra and used + extra <= budget:
            rows[k], used = full[k], used + extra
    missing = sum(1 for r, f in zip(rows, full) if r != f)
    return rows, (
        f"members of {missing} definition{'s' if missing > 1 else ''} not listed"
        if missing
        else "private members not listed"
    )


def _fold(rows: list[str]) -> list[str]:
    """Runs of short memberless rows joined on one line: every line of a Read
    preview gets the CLI's own number, so fewer lines cost less and leave fewer
    numbers that are not file lines."""
    out: list[str] = []
    for row in rows:
        if (
            out
            and ":" not in row
            and not row.startswith(" ")
            and ":" not in out[-1]
            and not out[-1].startswith(" ")
            and len(out[-1]) + len(row) + 2 <= FOLD_CHARS
        ):
            out[-1] += f"; {row}"
        else:
            out.append(row)
    return out


def is_signal(line: str) -> bool:
    """Whether a line of command or log output is one that matters (an error, a
    failure, a warning as tools print them; see _SIGNAL)."""
    return _SIGNAL.search(line) is not None


def excerpt_rows(lines: list[str], budget: int) -> tuple[list[int], list[int], list[int], str]:
    """(head, lines that matter, tail) as 0-based indexes within ``budget``, and what was shown.

    Lines that matter only when the output has them (a log, a test or build
    run): otherwise head and tail share the budget.
    """
    n = len(lines)
    fmt = lambda i: f"{i + 1}: {_clip(lines[i])}"  # noqa: E731 - the cost of one shown line
    signal = [i for i in range(n) if is_signal(lines[i])]
    part = budget // 3 if signal else budget // 2
    head, used_h = fit_rows([fmt(i) for i in range(min(n, 15))], part)
    head_idx = list(range(len(head)))
    tail_from = max(len(head_idx), n - 25)
    tail, used_t = fit_rows([fmt(i) for i in range(n - 1, tail_from - 1, -1)], part)
    tail_idx = list(range(n - len(tail), n))
    middle_all = [i for i in signal if len(head_idx) <= i < n - len(tail_idx)]
    middle, _ = fit_rows([fmt(i) for i in middle_all], budget - used_h - used_t)
    middle_idx = middle_all[: len(middle)]
    shown = f"lines 1-{len(head_idx)}" if head_idx else "no head"
    if middle_all:
        shown += f", {len(middle_idx)} of {len(middle_all)} error/warning lines"
    if tail_idx:
        shown += f", last {len(tail_idx)} lines"
    return head_idx, middle_idx, tail_idx, shown


def excerpt(lines: list[str], budget: int) -> tuple[str, str]:
    """Head, lines that matter, tail within ``budget``, each line as ``N: text``
    so the agent can ask for the rest by line range: (text, what was shown)."""
    head, middle, tail, shown = excerpt_rows(lines, budget)
    fmt = lambda i: f"{i + 1}: {_clip(lines[i])}"  # noqa: E731
    parts = [fmt(i) for i in head]
    for run in (middle, tail):
        if run:
            parts += ["…"] + [fmt(i) for i in run]
    return "\n".join(parts), shown


def kind_of(path: str, items) -> str:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext in _DOC_EXT:
        return "doc"
    if ext in _CODE_EXT or len(items) >= 3:
        return "code"
    return "text"


def _tokens_str(n: int) -> str:
    return f"~{n / 1000:.1f}k tokens" if n >= 1000 else f"~{n} tokens"


def read_text(
    path: str,
    content: str,
    total_lines: int,
    node_id: str | None,
    budget: int,
    cut: str | None = None,
    lead: str = "",
    text_budget: int | None = None,
) -> str:
    """The preview of a whole-file Read.

    Claude Code numbers every line of a Read result itself (``N\t`` from 1), so
    the preview opens with real file lines, unprefixed, which it numbers right
    (a module's docstring, a log's head); then one line says the numbers after
    it are not file lines, and the outline or excerpt follows in few lines,
    file lines as ``L`` numbers. ``content`` is what is outlined. ``cut``: None
    when the Read was whole; else Claude Code cut it at its token cap (its own
    note above the preview says so) and ``content`` is the whole file read
    again ("all") or only what the Read returned ("prefix"). ``lead`` goes
    before the rest of memtree's line; ``text_budget`` (default ``budget``) is
    the budget of an excerpt.
    """
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    items = outline(lines)
    kind = kind_of(path, items)
    if kind == "doc":
        items = headings(lines)
    name = path.rsplit("/", 1)[-1]
    span = {
        None: f"{total_lines:,} lines",
        "all": f"all {total_lines:,} lines",
        "prefix": f"lines 1-{len(lines):,} of {total_lines:,}",
    }[cut]
    past = " (read from disk past the cut above)" if cut == "all" else ""
    kept = _kept(node_id, repr(name), what="the part read" if cut else "whole")
    about = (
        f"{name}: {span}, {_tokens_str(tokens.count(content))}{past}, {kept}; "
        "numbers at the left are not file lines. Exact lines: Read with offset and limit; Edit works as usual."
    )
    left = budget - tokens.count(about) - 30

    if kind in ("code", "doc") and items:
        rows, left_out = _outline_rows(items, left - 20)
        body = _fold(rows)
        if left_out:
            body.append(f"… {left_out} (Read with offset/limit to see them)")
        # The module header before the first definition, up to its imports: a
        # docstring says what the file is for; an import list is rarely what a
        # reader came for, and a preview is re-sent with every later request.
        first = min(items[0][2] - 1, 40)
        first = next((i for i in range(first) if lines[i].startswith(("import ", "from "))), first)
        room = min(left // 4, left - sum(tokens.count(r) + 1 for r in body))
        head = fit_rows([_clip(lines[i]) for i in range(first)], room)[0] if first > 0 else []
        while head and not head[-1].strip():
            head.pop()
        what = "Outline (L<n> = file line n)"
    else:
        h, middle, tail, shown = excerpt_rows(lines, left - budget + (text_budget or budget))
        head = [_clip(lines[i]) for i in h]
        body = []
        for run in (middle, tail):
            if run:
                body += ["…"] + [f"{i + 1}: {_clip(lines[i])}" for i in run]
        what = f"Excerpt ({shown}; <n>: = file line n)"
    above = f"Above: file lines 1-{len(head)}. Below: " if head else ""
    return "\n".join(head + [f"[memtree] {above}{lead}{what} of {about}"] + body)


NO_LINE = (None, None, None, False)


def _common_dir(paths: list[str]) -> str:
    """The directory all paths share (with its trailing slash), or ""."""
    if not paths:
        return ""
    first = paths[0].rsplit("/", 1)[0] + "/" if "/" in paths[0] else ""
    while first and not all(p.startswith(first) for p in paths):
        first = first[:-1].rsplit("/", 1)[0] + "/" if "/" in first[:-1] else ""
    return first


def grep_text(tool_input: dict, response: dict, node_id: str | None, budget: int) -> str:
    """Matches per file on one line, then the first matching lines grouped under
    their file (as ``rg --heading`` does), within ``budget``."""
    mode = response.get("mode") or "files_with_matches"
    text = (
        response.get("content")
        if isinstance(response.get("content"), str)
        else "\n".join(f for f in response.get("filenames") or [] if isinstance(f, str))
    )
    rows = [r for r in text.split("\n") if r]
    per_file: dict[str, int] = {}
    split: list[tuple[str, str]] = []  # (file, rest of the row)
    numbered = bool(tool_input.get("-n"))
    current = ""
    for r in rows:
        path, _n, _text, context = grep_output.parse_line(r, mode, None, numbered) if mode == "content" else NO_LINE
        if path is not None and not context:  # a match: path:N:text (with -n) or path:text
            current, rest = path, r[len(path) + 1 :]
            per_file[current] = per_file.get(current, 0) + 1
        elif current and r.startswith(current + "-"):  # a context line of the same file (-A/-B/-C)
            rest = r[len(current) + 1 :]
        else:  # a "--" separator, a file name (files_with_matches), anything else: as it is
            current, rest = "", r
        split.append((current, rest))
    pattern = str(tool_input.get("pattern", ""))
    where = _kept(node_id, repr(pattern[:40]))
    parts = [
        f"[memtree] Grep {pattern[:80]!r} ({mode}): {len(rows):,} lines"
        + (f" in {len(per_file):,} file{'s' if len(per_file) > 1 else ''}" if per_file else "")
        + f", {_tokens_str(tokens.count(text))}, {where}. Narrow with path/glob, or page with head_limit/offset."
    ]
    left = budget - tokens.count(parts[0])
    if len(per_file) > 1:
        base = _common_dir(list(per_file))
        top = sorted(per_file.items(), key=lambda kv: -kv[1])
        counts, used = fit_rows([f"{p[len(base) :]} {n}" for p, n in top], left // 3)
        parts.append(
            f"Per file{f' (in {base})' if base else ''}: "
            + ", ".join(counts)
            + (f", … {len(top) - len(counts)} more files" if len(counts) < len(top) else "")
        )
        left -= used + 4
    shown, current, used = [], None, 0
    for path, rest in split:
        row = _clip(rest, 160)
        cost = tokens.count(row) + 1 + (tokens.count(path) + 1 if path != current else 0)
        if used + cost > left - 20:
            break
        if path != current and path:
            shown.append(path)
        current = path
        shown.append(row)
        used += cost
    n_shown = sum(1 for p in shown if p not in per_file)
    parts.append("\n".join(shown))
    if n_shown < len(rows):
        parts.append(f"… {len(rows) - n_shown:,} more lines (Grep with offset={n_shown} goes on)")
    return "\n".join(p for p in parts if p)


def bash_text(command: str, stream: str, text: str, node_id: str | None, budget: int) -> str:
    lines = text.split("\n")
    where = _kept(node_id, repr(_clip(command, 40)), fetch=True)
    head = (
        f"[memtree] {stream} of `{_clip(command, 120)}`: {len(lines):,} lines, {_tokens_str(tokens.count(text))}, "
        f"{where}."
    )
    ex, shown = excerpt(lines, budget - tokens.count(head) - 20)
    return f"{head} Shown: {shown}.\n{ex}"


__all__ = ["outline", "excerpt", "excerpt_rows", "is_signal", "read_text", "grep_text", "bash_text", "kind_of"]
