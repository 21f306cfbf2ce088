"""Import the parts of the MCP SDK a stdio tools server needs, and no more.

Claude Code's first request waits about 2 s for MCP servers, and the SDK's
import is most of the front's start. The ``mcp`` and ``mcp.server`` package
``__init__`` modules import the client and the high-level server, which a
low-level stdio server never uses: about a quarter of the import time here.
The packages are registered without running those ``__init__`` modules;
their submodules import as usual. In a process that already imported ``mcp``,
or if anything about this fails, the normal import happens instead.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import types

log = logging.getLogger(__name__)

PACKAGES = ("mcp", "mcp.server")


def lean_import() -> bool:
    """Import mcp.server.lowlevel and mcp.server.stdio without the package
    ``__init__`` modules; True if that is what happened."""
    if any(p in sys.modules for p in PACKAGES):
        return False
    try:
        for name in PACKAGES:
            spec = importlib.util.find_spec(name)
            if spec is None or not spec.submodule_search_locations:
                raise ImportError(f"{name} is not a package")
            pkg = types.ModuleType(name)
            pkg.__path__ = list(spec.submodule_search_locations)
            pkg.__spec__, pkg.__package__ = spec, name
            sys.modules[name] = pkg
        importlib.import_module("mcp.server.lowlevel")
        importlib.import_module("mcp.server.stdio")
        return True
    except Exception:  # an SDK that does not allow it: the ordinary import, a little slower
        log.warning("mcp: lean SDK import failed, importing the whole package", exc_info=True)
        for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
            del sys.modules[name]
        return False
