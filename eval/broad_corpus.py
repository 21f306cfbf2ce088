"""The broad recall eval's corpus: eleven pinned sdists of different styles.

None of them is the Python standard library, a dependency of memtree, one of
the five packages of eval/recall_queries.py, or a repository of a published
code-search benchmark (semble's, CodeSearchNet's sources, SWE-bench's). Each
is fetched once with ``pip download --no-deps --no-binary :all:``, checked
against its sha256, extracted into the shared eval cache
(``$MEMTREE_EVAL_CACHE`` or ~/.cache/memtree-eval, folder broad-corpus/) and only its importable
source is ingested: tests, docs, examples and build scripts are left out, as
an agent exploring a library reads its code.
"""

from __future__ import annotations

import ast
import glob
import os

from memtree.eval import sdists

# name, version, sdist file, sha256, source roots inside the sdist, style
CORPUS: list[tuple[str, str, str, str, tuple[str, ...], str]] = [
    (
        "bottle",
        "0.13.4",
        "bottle-0.13.4.tar.gz",
        "787e78327e12b227938de02248333d788cfe45987edca735f8f88e03472c3f47",
        ("bottle.py",),
        "web framework, one module",
    ),
    (
        "tornado",
        "6.6.1",
        "tornado-6.6.1.tar.gz",
        "28e6311402af59c8b02e3fa0f5e7d8eb465b25081381803b127d97e6a4395d5a",
        ("tornado",),
        "web framework and event loop",
    ),
    (
        "cleo",
        "2.1.0",
        "cleo-2.1.0.tar.gz",
        "0b2c880b5d13660a7ea651001fb4acb527696c01f15c9ee650f377aa543fd523",
        ("src/cleo",),
        "CLI library",
    ),
    (
        "marshmallow",
        "4.4.0",
        "marshmallow-4.4.0.tar.gz",
        "9e6ffa8511012ca89732324c1c253efd7b4d35632dcbdf80aa793fe01804af3e",
        ("src/marshmallow",),
        "data (de)serialisation",
    ),
    (
        "tablib",
        "3.10.0",
        "tablib-3.10.0.tar.gz",
        "781cfa9a42de8f33c52aff857fd0a04e483de4fd1c53eaaa9a6aeac62bad11de",
        ("src/tablib",),
        "tabular data library",
    ),
    (
        "trio",
        "0.35.0",
        "trio-0.35.0.tar.gz",
        "7efb295c78a0ecd1235c5759e620b5da564ca80d2efcb0055423588547248b96",
        ("src/trio",),
        "async library",
    ),
    (
        "more-itertools",
        "11.2.1",
        "more_itertools-11.2.1.tar.gz",
        "cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63",
        ("more_itertools",),
        "stdlib-like utilities",
    ),
    (
        "python-dateutil",
        "4.0.0",
        "python_dateutil-4.0.0.tar.gz",
        "d7295ff14fdc0f92f662100bfb6c551d160ca090f2939f1ec5b9794265c03f06",
        ("src/dateutil",),
        "large stdlib-like package",
    ),
    (
        "sqlparse",
        "0.6.1",
        "sqlparse-0.6.1.tar.gz",
        "ca722573f848ff2d30e40ea30f53a104b7dea7635ea9285891263eb2c58fb6e7",
        ("sqlparse",),
        "SQL parser and formatter",
    ),
    (
        "lark",
        "1.3.1",
        "lark-1.3.1.tar.gz",
        "b426a7a6d6d53189d318f2b6236ab5d6429eaf09259f1ca33eb716eed10d2905",
        ("lark",),
        "parser generator",
    ),
    (
        "tomlkit",
        "0.15.2",
        "tomlkit-0.15.2.tar.gz",
        "83e32755ba1d20d9340bd069ee97e9f6232ba2346b63ffcba425de01f7e327a6",
        ("tomlkit",),
        "style-preserving TOML parser",
    ),
]

_SKIP_DIRS = {"test", "tests", "_tests", "testing", "docs", "doc", "examples", "example", "benchmarks", "bench"}


def cache_dir(explicit: str | None = None) -> str:
    return (
        explicit
        or os.environ.get("MEMTREE_EVAL_CACHE")
        or os.path.join(os.path.expanduser("~"), ".cache", "memtree-eval")
    )


def sdist_dir(name: str, version: str) -> str:
    """The top folder of the extracted sdist, relative to the corpus root."""
    entry = next(c for c in CORPUS if c[0] == name and c[1] == version)
    return entry[2][: -len(".tar.gz")]


def fetch(cache: str | None = None, only: set[str] | None = None) -> str:
    """The corpus root (one extracted sdist per package), downloading and
    checking what is missing. A digest that disagrees is an error, not a
    silent re-download: the gold is tied to those bytes."""
    cache = cache_dir(cache)
    # Not the recall eval's corpus/: it ingests every folder there, so ours would become its distractors.
    root = os.path.join(cache, "broad-corpus")
    dl = os.path.join(cache, "sdists")
    os.makedirs(root, exist_ok=True)
    for name, version, fname, sha, _roots, _style in CORPUS:
        if only is not None and name not in only:
            continue
        sdists.fetch_pinned(name, version, fname, sha, dl, root)
    return root


def source_files(root: str, only: set[str] | None = None) -> list[str]:
    """Every ingested .py file (absolute), in a fixed order."""
    out = []
    for name, _version, fname, _sha, roots, _style in CORPUS:
        if only is not None and name not in only:
            continue
        top = os.path.join(root, fname[: -len(".tar.gz")])
        for r in roots:
            full = os.path.join(top, r)
            if full.endswith(".py"):
                out.append(full)
                continue
            for path in sorted(glob.glob(os.path.join(full, "**", "*.py"), recursive=True)):
                rel = os.path.relpath(path, full).split(os.sep)
                if any(p in _SKIP_DIRS for p in rel[:-1]) or rel[-1].startswith("test_") or rel[-1] == "conftest.py":
                    continue
                out.append(path)
    return out


def package_of(rel: str) -> str:
    """The package name of a corpus-relative path."""
    top = rel.split("/", 1)[0]
    return next(c[0] for c in CORPUS if c[2][: -len(".tar.gz")] == top)


def strip_docstrings(text: str) -> str:
    """The source with every module, class and function docstring replaced by
    ``...`` and blank lines, so line numbers (and so the gold ranges) are
    those of the original file. Unparseable text is returned unchanged."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return text
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                spans.append((first.lineno, first.col_offset, first.end_lineno, first.end_col_offset))
    if not spans:
        return text
    lines = text.splitlines(keepends=True)
    # Column offsets are in UTF-8 bytes; edit from the end so earlier spans keep their positions.
    for l0, c0, l1, c1 in sorted(spans, reverse=True):
        head = lines[l0 - 1].encode("utf-8")[:c0].decode("utf-8", errors="replace")
        tail = lines[l1 - 1].encode("utf-8")[c1:].decode("utf-8", errors="replace")
        block = head + "..." + "\n" * (l1 - l0) + tail
        lines[l0 - 1 : l1] = block.splitlines(keepends=True) or [block]
    return "".join(lines)
