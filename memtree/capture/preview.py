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
output first and redacts the preview text; see memtree.store.captures.
"""

from __future__ import annotations

from memtree import tokens

# Definition keywords by how a line starts (after indentation). Order matters:
# longer prefixes first.
_DEF_PREFIXES = (
    "async def ", "def ", "class ",  # Python
    "export default function ", "export async function ", "export function ", "async function ", "function ",
    "export default class ", "export abstract class ", "export class ", "abstract class ",
    "export interface ", "interface ", "export type ", "export enum ", "enum ",  # JS / TS
    "func ",  # Go
    "pub(crate) fn ", "pub async fn ", "pub fn ", "async fn ", "fn ", "pub struct ", "struct ", "pub enum ",
    "pub trait ", "trait ", "impl ", "pub mod ", "mod ",  # Rust
    "module ", "defmodule ", "defp ",  # Ruby / Elixir
)
_FIRST_WORDS = frozenset(p.split(" ", 1)[0] for p in _DEF_PREFIXES)  # cheap test before the prefixes
_CODE_EXT = frozenset(("py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "go", "rs", "rb", "ex", "exs", "java",
                       "kt", "scala", "swift", "c", "h", "cc", "cpp", "hpp", "cs", "php", "lua", "sh"))
_DOC_EXT = frozenset(("md", "markdown", "rst"))
# Lines that matter in a log or command output (matched lower-cased).
_SIGNALS = ("error", "exception", "traceback", "fail", "fatal", "panic", "warning", "assert", "denied",
            "not found", "no such file", "segmentation fault", "killed", "timed out", "timeout")
_IDENT = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.<>:")
MAX_LINE_CHARS = 200
# How the agent gets a stored output back (memtree's MCP surface).
FETCH = "memtree recall ids={id}"
FIND = "memtree recall query={query}"


def _kept(node_id: str | None, query: str) -> str:
    """Where the whole output is: a node id once the writer stored it; a spooled
    capture has none yet, so name the search that finds it once drained."""
    if node_id:
        return f"stored whole as memtree node {node_id}; all of it: {FETCH.format(id=node_id)}"
    return f"kept whole by memtree (being stored); later: {FIND.format(query=query)}"


def _clip(line: str, limit: int = MAX_LINE_CHARS) -> str:
    line = line.rstrip("\r\n")
    return line if len(line) <= limit else f"{line[:limit]}…[+{len(line) - limit} chars]"


def _name(rest: str) -> str:
    n = 0
    while n < len(rest) and rest[n] in _IDENT:
        n += 1
    return rest[:n].rstrip(":.")


def _declares(after: str) -> bool:
    """What follows a definition's name in code (``(``, ``:``, ``{``, ``extends`` ...),
    unlike prose in a docstring ("class is used ...")."""
    if after[:1] in ("(", ":", "<", "[", "{", ""):
        return True
    return after[:1] == " " and after.lstrip().startswith(
        ("{", "(", "extends", "implements", "=", "where", "for ", "struct", "interface", "do"))


def outline(lines: list[str]) -> list[tuple[int, str, int, int]]:
    """(indent, "keyword name", first line, last line) of each definition, 1-based.

    A definition ends before the next line of equal or lesser indentation that
    is not blank, a comment or a closing bracket (trailing blank
    lines trimmed); that covers indented and brace languages written the usual way.
    """
    found = []
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped or stripped.split(" ", 1)[0] not in _FIRST_WORDS:
            continue
        for prefix in _DEF_PREFIXES:
            if stripped.startswith(prefix):
                rest = stripped[len(prefix):].lstrip()
                name = _name(rest)
                if name and _declares(rest[len(name):]):
                    found.append((len(line) - len(stripped), _clip(stripped.rstrip("{: "), 90), i))
                break
    out = []
    for k, (indent, label, start) in enumerate(found):
        end = len(lines) - 1
        for j in range(start + 1, len(lines)):
            s = lines[j].lstrip()
            if s and len(lines[j]) - len(s) <= indent and not s.startswith(("#", "//", ")", "]", "}", "*")):
                end = j - 1
                break
        while end > start and not lines[end].strip():
            end -= 1
        out.append((indent, label, start + 1, end + 1))
    return out


def _headings(lines: list[str]) -> list[tuple[int, str, int, int]]:
    """Markdown headings as an outline: a section runs to the next heading of its level or higher."""
    found = [(len(s) - len(s.lstrip("#")), s.strip(), i) for i, s in enumerate(lines) if s.startswith("#")]
    out = []
    for k, (level, label, start) in enumerate(found):
        end = next((f[2] - 1 for f in found[k + 1:] if f[0] <= level), len(lines) - 1)
        out.append(((level - 1) * 2, _clip(label, 80), start + 1, end + 1))
    return out


def _fit(rows: list[str], budget: int) -> tuple[list[str], int]:
    kept, used = [], 0
    for row in rows:
        cost = tokens.count(row) + 1
        if used + cost > budget:
            break
        kept.append(row)
        used += cost
    return kept, used


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
        rows.append(f"{_short(text)}  L{a}-{b}" + (f": {', '.join(members)}" if members else ""))
    return rows


def _within(rows: list[str], budget: int) -> bool:
    """Whether the rows (one token each for the line break) fit, counting no further than needed."""
    used = 0
    for r in rows:
        used += tokens.count(r) + 1
        if used > budget:
            return False
    return True


def _outline_rows(items, budget: int) -> tuple[list[str], str]:
    """Outline lines within ``budget`` (signatures, else names, else members inline,
    else public members inline, else top level only, else cut) and what was left out."""
    top = min((it[0] for it in items), default=0)
    tiers = (  # built one at a time: most files stop at the first
        lambda: [f"{' ' * min(i, 8)}{t}  L{a}-{b}" for i, t, a, b in items if i <= 8],
        lambda: [f"{' ' * min(i, 8)}{_short(t)}  L{a}-{b}" for i, t, a, b in items if i <= 8],
        lambda: _compact(items), lambda: _compact(items, public_only=True),
        lambda: [f"{_short(t)}  L{a}-{b}" for i, t, a, b in items if i == top])
    left_out = ("", "", "", "private members not listed", "members not listed")
    # Every tier's rows are at least as long as the top-level-only rows (names are
    # prefixes of signatures; members and indentation only add), so when even
    # those do not fit, none does: cut them without building the rest.
    last = tiers[-1]() if top <= 8 else None
    if last is not None and not _within(last, budget):
        tiers, left_out = (lambda: last,), ("",)
    for build, note in zip(tiers, left_out):
        rows = build()
        if _within(rows, budget):
            return rows, note
    full, rows = rows, _fit(rows, budget)[0]
    return rows, f"{len(full) - len(rows)} more top-level definitions and all members not listed"


def _signal_lines(lines: list[str], skip_before: int, skip_after: int) -> list[int]:
    return [i for i in range(skip_before, skip_after) if any(s in lines[i].lower() for s in _SIGNALS)]


def excerpt(lines: list[str], budget: int, first_line: int = 1) -> tuple[str, str]:
    """Head, lines that matter, tail, within ``budget``: (text, what was shown).

    Shown lines keep their numbers (``N: text``) so the agent can ask for the
    rest by line range.
    """
    n = len(lines)
    head_n = min(n, 15)
    tail_n = min(max(n - head_n, 0), 25)
    fmt = lambda i: f"{first_line + i}: {_clip(lines[i])}"  # noqa: E731 - one-line formatter
    head, used_h = _fit([fmt(i) for i in range(head_n)], budget // 3)
    tail_rows = [fmt(i) for i in range(n - tail_n, n)]
    tail, used_t = _fit(tail_rows[::-1], budget // 3)
    tail = tail[::-1]
    middle_idx = _signal_lines(lines, len(head), n - len(tail))
    middle, _ = _fit([fmt(i) for i in middle_idx], budget - used_h - used_t)
    parts, shown = list(head), f"lines {first_line}-{first_line + len(head) - 1}" if head else "no head"
    if middle:
        parts += ["…"] + middle
        shown += f", {len(middle)} of {len(middle_idx)} lines matching error/warn/fail"
    elif middle_idx:
        shown += f", 0 of {len(middle_idx)} lines matching error/warn/fail (over budget)"
    if tail:
        parts += ["…"] + tail
        shown += f", last {len(tail)} lines"
    return "\n".join(parts), shown


def kind_of(path: str, items) -> str:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    if ext in _DOC_EXT:
        return "doc"
    if ext in _CODE_EXT or len(items) >= 3:
        return "code"
    return "text"


def read_text(path: str, content: str, total_lines: int, node_id: str | None, budget: int) -> str:
    """The preview of a whole-file Read (the CLI numbers these lines itself)."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    items = outline(lines)
    kind = kind_of(path, items)
    if kind == "doc":
        items = _headings(lines)
    head = (f"[memtree] {path}: {total_lines} lines, ~{tokens.count(content):,} tokens; not shown in full "
            f"({_kept(node_id, repr(path.rsplit('/', 1)[-1]))}). The numbers at the left count this preview; "
            f"file line numbers are after each entry.\n"
            f"Exact lines: Read this file with offset and limit (e.g. offset=L limit=N); Edit works as usual.")
    left = budget - tokens.count(head)
    if kind in ("code", "doc") and items:
        rows, left_out = _outline_rows(items, left - 40)
        body = "Outline (symbol  file lines):\n" + "\n".join(rows)
        if left_out:
            body += f"\n… {left_out} (Read with offset/limit to see them)"
        first = min(items[0][2] - 1, 40)
        # The module header before the first definition, up to its imports: a
        # docstring says what the file is for; an import list is rarely what a
        # reader came for, and a preview is re-sent with every later request.
        first = next((i for i in range(first) if lines[i].startswith(("import ", "from "))), first)
        if first > 0:  # if room is left
            rows, _ = _fit([f"{i + 1}: {_clip(lines[i])}" for i in range(first)],
                           min(left // 4, left - tokens.count(body)))
            if rows:
                body = f"File lines 1-{len(rows)}:\n" + "\n".join(rows) + "\n" + body
    else:
        ex, shown = excerpt(lines, left)
        body = f"Shown ({shown}):\n{ex}"
    return f"{head}\n{body}"


def grep_text(tool_input: dict, response: dict, node_id: str | None, budget: int) -> str:
    mode = response.get("mode") or "files_with_matches"
    text = response.get("content") if isinstance(response.get("content"), str) else "\n".join(
        f for f in response.get("filenames") or [] if isinstance(f, str))
    rows = [r for r in text.split("\n") if r]
    per_file: dict[str, int] = {}
    if mode == "content":
        for r in rows:
            path = r.split(":", 1)[0] if ":" in r else "?"
            per_file[path] = per_file.get(path, 0) + 1
    pattern = tool_input.get("pattern", "")
    head = (f"[memtree] Grep {str(pattern)[:80]!r} ({mode}): {len(rows)} lines"
            + (f" in {len(per_file)} files" if per_file else "")
            + f", ~{tokens.count(text):,} tokens; not shown in full ({_kept(node_id, repr(str(pattern)[:40]))}). "
            "Narrow it with path, glob or head_limit/offset, or Read a file with offset/limit.")
    left = budget - tokens.count(head)
    parts = [head]
    if per_file and len(per_file) > 1:
        top = sorted(per_file.items(), key=lambda kv: -kv[1])
        counts, used = _fit([f"{n:>4}  {p}" for p, n in top], left // 3)
        parts.append("Matches per file:\n" + "\n".join(counts)
                     + (f"\n… {len(top) - len(counts)} more files" if len(counts) < len(top) else ""))
        left -= used + 4
    shown, _ = _fit([_clip(r) for r in rows], left - 20)
    parts.append("\n".join(shown))
    if len(shown) < len(rows):
        parts.append(f"… {len(rows) - len(shown)} more lines (head_limit/offset pages through them)")
    return "\n".join(parts)


def bash_text(command: str, stream: str, text: str, node_id: str | None, budget: int) -> str:
    lines = text.split("\n")
    head = (f"[memtree] {stream} of `{_clip(command, 120)}`: {len(lines)} lines, ~{tokens.count(text):,} tokens; "
            f"not shown in full ({_kept(node_id, repr(_clip(command, 40)))}).")
    ex, shown = excerpt(lines, budget - tokens.count(head) - 20)
    return f"{head}\nShown ({shown}):\n{ex}"


__all__ = ["outline", "excerpt", "read_text", "grep_text", "bash_text", "kind_of"]
