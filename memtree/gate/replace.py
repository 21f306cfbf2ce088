"""How a rule's match is replaced: each builder takes (rule, tags) and returns
the ``re.sub`` replacement, which adds the tags it applies to ``tags``.

Replacements keep the newlines they cover, so a whole file redacted first and
chunked after has the same lines. A value that only names another value (a
variable, a lookup, a placeholder) is kept: it holds no secret.
"""

from __future__ import annotations

import re

from memtree.gate.lazy import Lazy

SECRET = "[REDACTED:secret_value]"
NOT_VALUES = {"null", "none", "nil", "true", "false", "undefined", "str", "string", "int", "bool", "bytes",
              "float", "number", "boolean", "any", "object", "dict", "list", "optional", "required", "yes", "no"}
_KWARG_NAME = Lazy(r"[A-Za-z_][A-Za-z_.]*[),]+$")


def keep_lines(label: str, replaced: str) -> str:
    """The label plus the newlines it replaces: line numbers stay right."""
    return label + "\n" * replaced.count("\n")


def put(m: re.Match, group, label: str) -> str:
    """The match with ``group`` replaced by ``label``."""
    s, e = m.span(group)
    return m.group(0)[: s - m.start()] + label + m.group(0)[e - m.start():]


def group(rule, tags: set):
    """A token format: the whole match, or its ``rule.group``, becomes ``[REDACTED:<tag>]``."""
    tag, grp = rule.tag, rule.group
    label = f"[REDACTED:{tag}]"

    def repl(m):
        tags.add(tag)
        if not grp:
            return keep_lines(label, m.group(0))
        s, e = m.span(grp)
        return m.group(0)[: s - m.start()] + keep_lines(label, m.group(grp)) + m.group(0)[e - m.start():]
    return repl


def assignment(rule, tags: set):
    """A strong secret word's value (groups v1..v3), unless it only passes a name on."""
    def repl(m):
        for g in ("v1", "v2", "v3"):
            if m.group(g) is not None:
                break
        if g == "v1" and _KWARG_NAME.rx().match(m.group(g)):
            return m.group(0)  # f(SecretId=secret_name): passes a variable, holds no value
        tags.add("secret_value")
        return put(m, g, SECRET)
    return repl


def weak(rule, tags: set, tag: str = "secret_value"):
    """Group ``v``, always (the pattern already asked that it look like a secret)."""
    def repl(m):
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
                tags.add("secret_value")
                return put(m, g, SECRET)
        return m.group(0)
    return repl


def keyed(rule, tags: set):
    """A secret-named key's value at the end of its line, unless it is a placeholder or code."""
    def repl(m):
        v = m.group("v")
        if v[0] in "$<%*[{" or v.startswith("!") or v.lower() in NOT_VALUES or any(c in v for c in "()[]{}"):
            return m.group(0)
        if not m.group("q") and m.group("sep") == "=" and (m.group("sp1") or m.group("sp2")):
            # `password = other_name` is code; keep it unless the value looks like a credential
            if not any(c.isdigit() for c in v) and all(c.isalnum() or c in "_." for c in v):
                return m.group(0)
        tags.add("secret_value")
        return put(m, "v", SECRET)
    return repl
