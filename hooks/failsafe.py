"""A hook is never in Claude Code's way: whatever goes wrong, it exits 0 and
the failure (its type name only: a message could quote a secret) goes to
``logs/hook.log`` under MEMTREE_HOME."""

import os


def run(body, what: str) -> int:
    try:
        body()
    except BaseException as e:  # noqa: BLE001 - never block the session, a compaction or a tool call
        try:
            from memtree import paths as mpaths
            from memtree.hooks.post_tool_use import _log

            _log(os.path.join(mpaths.memtree_home(), "logs"), f"{what} failed: {type(e).__name__}")
        except BaseException:  # noqa: BLE001
            pass
    return 0
