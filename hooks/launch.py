"""What `memtree install` registers: ``<python> -I -S <this file>``.

Python compiles a script run as ``__main__`` from source on every start (the
hook module costs ~7 ms of that), while an imported module loads from cached
bytecode; so this file stays tiny and imports the hook. It must never fail a
tool call: any problem exits 0 silently. The capture hook ends with
``os._exit`` after flushing stdout (see _end_now). ``launch.py stop`` runs the Stop
hook (memtree.hooks.stop) instead of the capture hook, ``launch.py
session-start`` the SessionStart brief (memtree.hooks.session_start),
``post-compact`` and ``file-changed`` memtree.hooks.post_compact and
memtree.hooks.file_changed.
"""

import os
import sys


def _launch() -> int:
    # -I puts nothing of ours on sys.path: the folder holding the `memtree`
    # package is this file's grandparent (checkout) or great-grandparent (installed).
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.path.dirname(here), os.path.dirname(os.path.dirname(here))):
        if os.path.isfile(os.path.join(root, "memtree", "__init__.py")):
            sys.path.insert(0, root)
            break
    if sys.argv[1:2] == ["stop"]:
        from memtree.hooks.stop import main

        return main()
    if sys.argv[1:2] == ["session-start"]:
        from memtree.hooks.session_start import main

        return main()
    if sys.argv[1:2] == ["post-compact"]:
        from memtree.hooks.post_compact import main

        return main()
    if sys.argv[1:2] == ["file-changed"]:
        from memtree.hooks.file_changed import main

        return main()
    from memtree.hooks.post_tool_use import main

    _end_now(main())


def _end_now(code: int):
    """End the capture hook without the interpreter's teardown (~1.5-2 ms of
    its run, and Claude Code waits for the exit): once stdout is flushed it
    holds nothing to tear down (it writes files with os.write, or closes them
    in ``with``, before main returns)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - a closed pipe: nothing more to say
        pass
    os._exit(code)


if __name__ == "__main__":
    try:
        code = _launch()
    except BaseException:  # noqa: BLE001 - a hook never fails the tool call
        code = 0
    sys.exit(code)
