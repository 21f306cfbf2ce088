"""The broad eval's generated queries, from the AST of the pinned corpus.

- ``symbol``: a definition's name as an agent types it: a bare name for a
  top-level class or function, ``Class.method`` for a method. Only names
  defined exactly once in the whole corpus, so the gold is unambiguous.
- ``docstring``: the first sentence of a function's, method's or class's
  docstring, searched over the copy of the corpus whose docstrings are all
  removed (broad_corpus.strip_docstrings), so the query cannot match itself;
  the gold is the definition that held it.

The sample is fixed: definitions are ordered by a hash of their path and
name (not by anything a search returns) and the first ones of each package
are taken, up to a quota. Gold is ``(path, start, end)`` with the path
relative to the corpus root and the range that of the definition
(decorators included).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re
from collections import Counter, defaultdict

from memtree.eval import broad_corpus

SYMBOL_QUOTA = 30  # per package
DOCSTRING_QUOTA = 45  # per package
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class Definition:
    __slots__ = ("rel", "qualname", "kind", "start", "end", "doc", "depth")

    def __init__(self, rel, qualname, kind, start, end, doc, depth):
        self.rel, self.qualname, self.kind, self.start, self.end = rel, qualname, kind, start, end
        self.doc, self.depth = doc, depth


def definitions(root: str, files: list[str]) -> list[Definition]:
    """Top-level classes and functions and the methods of top-level classes."""
    out = []
    for path in files:
        rel = os.path.relpath(path, root)
        try:
            tree = ast.parse(open(path, encoding="utf-8").read())
        except (SyntaxError, ValueError, UnicodeDecodeError):
            continue

        def add(node, prefix, depth):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            kind = "class" if isinstance(node, ast.ClassDef) else ("method" if prefix else "function")
            out.append(
                Definition(rel, prefix + node.name, kind, start, node.end_lineno, ast.get_docstring(node), depth)
            )

        for node in tree.body:
            if isinstance(node, _DEFS):
                add(node, "", 0)
                if isinstance(node, ast.ClassDef):
                    for sub in node.body:
                        if isinstance(sub, _DEFS):
                            add(sub, node.name + ".", 1)
    return out


def _order(d: Definition) -> str:
    return hashlib.sha1(f"{d.rel}:{d.qualname}".encode()).hexdigest()


def _public(name: str) -> bool:
    return not name.startswith("_")


def symbol_queries(root: str, defs: list[Definition]) -> list[tuple[str, str, list[tuple[str, int, int]], str]]:
    """(kind, query, gold, package)."""
    bare = Counter(d.qualname.rsplit(".", 1)[-1] for d in defs)
    dotted = Counter(d.qualname for d in defs)
    by_pkg: dict[str, list[Definition]] = defaultdict(list)
    for d in defs:
        leaf = d.qualname.rsplit(".", 1)[-1]
        if not all(_public(p) for p in d.qualname.split(".")) or len(leaf) < 5:
            continue
        if d.depth == 0 and bare[leaf] == 1:
            by_pkg[broad_corpus.package_of(d.rel)].append(d)
        elif d.depth == 1 and dotted[d.qualname] == 1 and bare[leaf] > 1:
            by_pkg[broad_corpus.package_of(d.rel)].append(d)  # a common method name: the class names it
    out = []
    for pkg, items in by_pkg.items():
        for d in sorted(items, key=_order)[:SYMBOL_QUOTA]:
            out.append(("symbol", d.qualname, [(d.rel, d.start, d.end)], pkg))
    return out


_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`~?!?([^`<]+?)(?:\s*<[^>]+>)?`")
_LITERAL = re.compile(r"``([^`]+)``|`([^`]+)`")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]'\"])[.!?](?=\s|$)")


def first_sentence(doc: str) -> str | None:
    para = doc.strip().split("\n\n", 1)[0]
    text = " ".join(para.split())
    text = _ROLE.sub(lambda m: m.group(1).strip().rsplit(".", 1)[-1], text)
    text = _LITERAL.sub(lambda m: m.group(1) or m.group(2), text)
    text = text.replace("*", "")
    m = _SENTENCE_END.search(text)
    sentence = (text[: m.start()] if m else text).rstrip(" .:;")
    words = sentence.split()
    if not 5 <= len(words) <= 40 or ">>>" in sentence or not sentence[:1].isalpha():
        return None
    low = sentence.lower()
    if low.startswith(("deprecated", "alias for", "see ", "same as", "this is deprecated", "backport")):
        return None
    return sentence


def docstring_queries(root: str, defs: list[Definition]) -> list[tuple[str, str, list[tuple[str, int, int]], str]]:
    """(kind, query, gold, package); a sentence several definitions share
    gets all of them as gold."""
    by_sentence: dict[str, list[Definition]] = defaultdict(list)
    for d in defs:
        leaf = d.qualname.rsplit(".", 1)[-1]
        if not d.doc or (leaf.startswith("__") and leaf.endswith("__")):
            continue
        s = first_sentence(d.doc)
        if s:
            by_sentence[s.lower()].append(d)
    by_pkg: dict[str, list[tuple[str, list[Definition]]]] = defaultdict(list)
    for _low, ds in by_sentence.items():
        sentence = first_sentence(ds[0].doc)
        by_pkg[broad_corpus.package_of(ds[0].rel)].append((sentence, ds))
    out = []
    for pkg, items in by_pkg.items():
        for sentence, ds in sorted(items, key=lambda it: _order(it[1][0]))[:DOCSTRING_QUOTA]:
            out.append(("docstring", sentence, [(d.rel, d.start, d.end) for d in ds], pkg))
    return out


def generated(root: str, files: list[str]) -> list[tuple[str, str, list[tuple[str, int, int]], str]]:
    defs = definitions(root, files)
    return symbol_queries(root, defs) + docstring_queries(root, defs)
