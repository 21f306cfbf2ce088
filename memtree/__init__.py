"""memtree: a local, persistent, tree-and-graph context store for coding agents."""

import os as _os

__version__ = "0.1.0"

# In a source checkout the top-level folders actors/, supervisor/, hooks/,
# config/ and eval/ are the subpackages memtree.actors, memtree.supervisor, ...
# (pyproject's package-dir does the same mapping in a built wheel). Running from
# the checkout puts this folder first on sys.path, ahead of any installed
# mapping, so the checkout maps them itself.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if _os.path.isfile(_os.path.join(_checkout, "pyproject.toml")) and _os.path.isdir(_os.path.join(_checkout, "actors")):
    __path__.append(_checkout)  # noqa: F821 - __path__ is set for packages
del _os
