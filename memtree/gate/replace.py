"""How a rule's match is replaced: each builder takes (rule, tags) and returns
the ``re.sub`` replacement, which adds the tags it applies to ``tags``.

Replacements keep the newlines they cover, so a whole file redacted first and
chunked after has the same lines. A value that only names another value (a
variable, a lookup, a placeholder) is kept: it holds no secret.
"""

from __future__ import annotations

import re

from memtree.gate import programs
from memtree.gate.lazy import Lazy

SECRET = "[REDACTED:secret_value]"
NOT_VALUES = {
    "null",
    "none",
    "nil",
    "true",
    "false",
    "undefined",
    "str",
    "string",
    "int",
    "bool",
    "bytes",
    "float",
    "number",
    "boolean",
    "any",
    "object",
    "dict",
    "list",
    "optional",
    "required",
    "yes",
    "no",
}
# A value that only names another value: a call or subscript (``f(``, ``os.environ[``,
# ``config["k"]``), an attribute chain that code punctuation ends
# (``settings.AWS_SECRET_ACCESS_KEY,``), a chain from a known root
# (``process.env.X``, ``self.secret``), or a template/shell reference. A bare
# name is one only as an argument (``token=token,``, ``f(secret=name)``) and
# shaped like a variable (BARE_NAME), never in shell (``X=lit && cmd``).
_ROOTS = r"(?:process|os|self|this|settings|config|conf|cfg|env|ENV|secrets|Rails|app|import|window|ctx|req|request)"
REFERENCE = Lazy(
    r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*[ \t]*[(\[]"
    r"|[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+(?=[ \t]*[,)\]}])"
    r"|" + _ROOTS + r"(?:\.[A-Za-z_$][\w$]*)+[ \t]*$"
    r"|\$\{?[A-Za-z_]|\$\(|%\(|\{\{|<%|#\{"
)


def quoted(m: re.Match, group) -> bool:
    """Whether the matched ``group`` sits between two equal quotes (a literal)."""
    s, e = m.span(group)
    text = m.string
    return 0 < s and e < len(text) and text[s - 1] in "\"'" and text[e] == text[s - 1]


def reference(m: re.Match, group) -> bool:
    """Whether an unquoted ``group`` only names another value (see REFERENCE):
    redact literals, never a name, a lookup or a call."""
    s = m.start(group)
    if m.string.startswith(_TEMPLATES, s):
        return True  # "{{ .Values.pw }}", '${DB_PASSWORD}': filled in later, quoted or not
    if quoted(m, group):
        return False
    end = m.string.find("\n", s)
    rest = m.string[s : len(m.string) if end < 0 else end]
    for part in _LEAD.rx().match(rest).group(0).split("."):
        if len(part) >= 12 and any(c.isdigit() for c in part) and part.lower() != part and part.upper() != part:
            return False  # shaped like a credential (digits, both cases), whatever follows it
    if REFERENCE.rx().match(rest):
        return True
    b = BARE_NAME.rx().match(rest)
    name = b.group(1) if b else ""
    return b is not None and (
        b.group(2) == ")"
        or "_" in name
        or name[0].islower()
        and not name.islower()
        or name.lower() in m.group(0)[: s - m.start()].lower()
    )


BLOCK_INDICATOR = Lazy(r"[|>][+\-]?[0-9]?")
_TEMPLATES = ("{{", "${", "<%", "#{", "%(", "$(")
_LEAD = Lazy(r"[\w$.]*")
# A variable-like name (no digit) closing an argument: ``token=token,``, ``secret=secret_name)``.
BARE_NAME = Lazy(r"([A-Za-z_][A-Za-z_]*)[ \t]*([,)])")


def keep_lines(label: str, replaced: str) -> str:
    """The label plus the newlines it replaces: line numbers stay right."""
    return label + "\n" * replaced.count("\n")


def put(m: re.Match, group, label: str) -> str:
    """The match with ``group`` replaced by ``label``."""
    s, e = m.span(group)
    return m.group(0)[: s - m.start()] + label + m.group(0)[e - m.start() :]


def group(rule, tags: set):
    """A token format: the whole match, or its ``rule.group``, becomes ``[REDACTED:<tag>]``."""
    tag, grp = rule.tag, rule.group
    label = f"[REDACTED:{tag}]"

    def repl(m):
        tags.add(tag)
        if not grp:
            return keep_lines(label, m.group(0))
        s, e = m.span(grp)
        return m.group(0)[: s - m.start()] + keep_lines(label, m.group(grp)) + m.group(0)[e - m.start() :]

    return repl


def assignment(rule, tags: set):
    """A strong secret word's value (groups v1..v3), unless it only passes a name on."""

    def repl(m):
        for g in ("v1", "v2", "v3"):
            if m.group(g) is not None:
                break
        if reference(m, g):
            return m.group(0)  # f(SecretId=secret_name), key=settings.KEY,: passes a value on, holds none
        tags.add("secret_value")
        return put(m, g, SECRET)

    return repl


def weak(rule, tags: set, tag: str = "secret_value"):
    """Group ``v``, always (the pattern already asked that it look like a secret)."""

    def repl(m):
        if reference(m, "v"):
            return m.group(0)
        tags.add(tag)
        return put(m, "v", SECRET)

    return repl


def near(rule, tags: set):
    """As ``weak``, tagged as found near a secret word."""
    return weak(rule, tags, "secret_near_keyword")


def value(rule, tags: set, groups=("v", "v1", "v2")):
    """The first of ``groups`` that matched."""

    def repl(m):
        for g in groups:
            if g in m.re.groupindex and m.group(g) is not None:
                if reference(m, g):
                    return m.group(0)
                tags.add("secret_value")
                return put(m, g, SECRET)
        return m.group(0)

    return repl


def literal(rule, tags: set):
    """Group ``v`` when it is a literal: not a word that only types or flags
    (``"true"`` for Access-Control-Allow-Credentials), not a placeholder or a
    format string (``'%s-%s' % (...)``, ``${X}``, ``{{ x }}``), not a reference."""

    def repl(m):
        v = m.group("v")
        if stands_for_none(v) or any(f in v for f in _FORMATS) or reference(m, "v"):
            return m.group(0)
        tags.add("secret_value")
        return put(m, "v", SECRET)

    return repl


_FORMATS = ("%s", "%(", "%d", "{}", "{0", "{{", "${")


def stands_for_none(v: str) -> bool:
    """A value that holds no secret: a typing or flag word, or a placeholder's first character."""
    return v[0] in "$<%*[{" or v.lower() in NOT_VALUES


# An INI section header alone on its line ([client], [pypi], [remote "origin"]).
_INI_SECTION = Lazy(r"(?m)^\[[A-Za-z][A-Za-z0-9_ .:\"\-]*\][ \t]*\r?$")
_INI_WORDS = frozenset("true false yes no on off".split())  # a setting's flag, not a secret
_ini_seen: list = [("", False)]  # (the last text looked at, whether it holds a section header)


def _ini_key(m) -> bool:
    """Whether the match's key starts its line in a text with an INI section
    header: a ``name = word`` there is a literal. The header is looked for once
    per text (a text's every ``password = name`` line would scan it again)."""
    start = m.start("key")
    line = m.string.rfind("\n", 0, start) + 1
    if m.string[line:start].strip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-"):
        return False  # indented, or inside an expression: code
    seen = _ini_seen[0]  # one tuple, swapped whole: threads redacting at once see a pair that belongs together
    if seen[0] is not m.string:
        seen = _ini_seen[0] = (m.string, _INI_SECTION.rx().search(m.string) is not None)
    return seen[1]


def keyed(rule, tags: set):
    """A secret-named key's value at the end of its line, unless it is a placeholder or code."""

    def repl(m):
        v = m.group("v")
        if stands_for_none(v) or v.startswith("!") or any(c in v for c in "()[]{}"):
            return m.group(0)
        if BLOCK_INDICATOR.rx().fullmatch(v):
            return m.group(0)  # `password: |-`: the value is the block under it (its own rule)
        if not m.group("q") and reference(m, "v"):
            return m.group(0)
        if not m.group("q") and m.group("sep") == "=" and (m.group("sp1") or m.group("sp2")):
            # `password = other_name` is code; keep it unless the value looks like a credential,
            # or the line is a key of an INI file (`[client]` / `password = hunter`: no code).
            if not any(c.isdigit() for c in v) and all(c.isalnum() or c in "_." for c in v):
                if not (_ini_key(m) and v.lower() not in _INI_WORDS):
                    return m.group(0)
        tags.add("secret_value")
        return put(m, "v", SECRET)

    return repl


def make(rule, tags: set):
    """A build-file assignment (``NAME ?= v``): its value, unless it is a Make or shell
    reference, a placeholder, or code (``token := next`` with a lower-case name)."""

    def repl(m):
        g = "v" if m.group("v") is not None else "v2"
        v = m.group(g).strip()
        bare = v.strip("'\"")  # a quoted label another rule left ('[REDACTED:...]') is no value
        if not bare or stands_for_none(bare) or "$(" in v or "${" in v:
            return m.group(0)
        if (
            g == "v2"
            and m.group("sep") in (":=", "+=")
            and not m.group("name").isupper()
            and (reference(m, g) or not (len(v) >= 8 and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)))
        ):
            return m.group(0)  # code (token := next, count += 1) unless the value looks like a credential
        tags.add("secret_value")
        s, e = m.span(g)
        return m.group(0)[: s - m.start()] + SECRET + m.group(0)[s - m.start() + len(v) :]

    return repl


_LATER_FLAG = re.compile(r"(?<=\s)-p(?!\[REDACTED)[^\s'\"]{3,}")


def option(rule, tags: set):
    """A program's password option or argument: its value (group ``v1`` when
    quoted, else ``v``) becomes ``[REDACTED:<tag>]``, whatever it looks like:
    the program says what it is."""
    label = f"[REDACTED:{rule.tag}]"

    def repl(m):
        tags.add(rule.tag)
        return put(m, "v1" if "v1" in m.re.groupindex and m.group("v1") is not None else "v", label)

    return repl


def program_values(rule, tags: set):
    """A program's command line (groups ``prog`` and ``rest``): every value
    its entry in memtree/gate/programs.py finds there, as ``option`` does."""
    value = option(rule, tags)

    def repl(m):
        rest = m.group("rest")
        for rx in programs.follows(m.group("prog")):
            rest = rx.sub(value, rest)
        return m.string[m.start() : m.start("rest")] + rest

    return repl


def each_flag(rule, tags: set):
    """Group 1 (a ``-pSECRET``) and every later ``-pSECRET`` in group ``rest`` (the rest of its command)."""
    label = f"[REDACTED:{rule.tag}]"

    def repl(m):
        tags.add(rule.tag)
        s, e = m.span(1)
        rest = _LATER_FLAG.sub(lambda _: "-p" + label, m.group("rest"))
        return m.string[m.start() : s] + label + m.string[e : m.start("rest")] + rest

    return repl


def block(rule, tags: set):
    """A block of lines (group ``v``): one label, its newlines kept."""

    def repl(m):
        tags.add("secret_value")
        return put(m, "v", keep_lines(SECRET, m.group("v")))

    return repl
