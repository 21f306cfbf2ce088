"""The front's lean SDK import: the low-level server and stdio transport load
without the client and the high-level server, and a process that already
imported ``mcp`` keeps the whole package."""

import subprocess

from tests.support import PYTHON, deadline

PROBE = """
import sys
{pre}
from memtree.front import mcp_sdk
lean = mcp_sdk.lean_import()
from mcp.server.lowlevel import Server
from mcp.types import Tool
print(lean, "mcp.client" in sys.modules, "mcp.server.mcpserver" in sys.modules)
"""


def _probe(pre: str = "") -> str:
    done = subprocess.run(
        [PYTHON, "-P", "-c", PROBE.format(pre=pre)], capture_output=True, text=True, timeout=deadline(120)
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_lean_import_leaves_out_the_client_and_the_high_level_server():
    assert _probe() == ["True", "False", "False"]


def test_a_process_that_already_imported_mcp_keeps_the_whole_package():
    assert _probe("import mcp") == ["False", "True", "True"]  # positive control: these exist to be left out
