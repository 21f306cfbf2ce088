"""The ``memtree`` command: a thin dispatcher that imports each subcommand lazily.

``memtree serve`` is what Claude Code launches: nothing heavy may load before
it has spawned the front, so this module imports only the standard library.
Errors are one line on stderr: exit 2 for usage/config errors, 1 for runtime.
"""

from __future__ import annotations

import sys

USAGE = """usage: memtree COMMAND [ARGS]

commands:
  serve [--project DIR] [--no-front] [--tools LIST]
                                       run the actors (Claude Code launches this; --no-front: headless;
                                       --tools: the MCP tools to list, of read,grep,bash,recall; default all)
  ctl COMMAND                          control running actors: status [--json] | restart NAME |
                                       stop NAME | start NAME | shutdown
  install [--tools LIST]               add memtree to a project's Claude Code settings (--tools: as serve)
  doctor [--fix] [--json]              check hook, MCP server, store, actors, capture; exit 0 when all is well
  reembed [--project DIR] [--batch N]  rebuild every vector with the configured embedding model
  redact --rescan [--project DIR]      re-apply the current redaction rules to everything stored
  import [--since WHEN] [--dry-run]    store the Read/Grep/Bash calls of this project's earlier Claude Code
                                       sessions, from the transcripts Claude Code keeps
  stats [--json]                       tokens memtree kept out of the context and what it added, per day
  demo                                 a short guided run on a scratch project
"""


def _serve(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="memtree serve", description="Run the memtree actors for a project.")
    p.add_argument("--project", metavar="DIR", help="the project (default: the current directory)")
    p.add_argument(
        "--no-front",
        action="store_true",
        help="headless: no MCP server on stdio; runs until SIGTERM or `memtree ctl shutdown`",
    )
    p.add_argument(
        "--tools",
        metavar="LIST",
        help="the MCP tools to list, comma-separated, of "
        "read,grep,bash,recall (default: all); capture and the session brief run either way",
    )
    args = p.parse_args(argv)
    front_env = {}
    if args.tools is not None:
        from memtree.errors import BadRequest
        from memtree.front import tool_table

        try:
            front_env[tool_table.ENV_TOOLS] = ",".join(tool_table.parse_tools(args.tools))
        except BadRequest as e:
            print(f"memtree serve: {e.message}", file=sys.stderr)
            return 2
    import os

    from memtree.front import resume

    if resume.ENV in os.environ:  # the plugin's waiting server handed its connection over: for the front only
        front_env[resume.ENV] = os.environ.pop(resume.ENV)
    from memtree.supervisor.main import serve

    return serve(args.project, front=not args.no_front, front_env=front_env)


def _ctl(argv: list[str]) -> int:
    from memtree.ops.ctl import main

    return main(argv)


def _install(argv: list[str]) -> int:
    from memtree.ops.install import main

    return main(argv)


def _doctor(argv: list[str]) -> int:
    from memtree.ops.doctor import main

    return main(argv)


def _demo(argv: list[str]) -> int:
    from memtree.ops.demo import main

    return main(argv)


def _reembed(argv: list[str]) -> int:
    from memtree.ops.reembed import main

    return main(argv)


def _redact(argv: list[str]) -> int:
    from memtree.ops.rescan import main

    return main(argv)


def _import(argv: list[str]) -> int:
    from memtree.ops.import_cmd import main

    return main(argv)


def _stats(argv: list[str]) -> int:
    from memtree.ops.savings import main

    return main(argv)


SUBCOMMANDS = {
    "serve": _serve,
    "ctl": _ctl,
    "install": _install,
    "doctor": _doctor,
    "demo": _demo,
    "reembed": _reembed,
    "redact": _redact,
    "import": _import,
    "stats": _stats,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from memtree import __version__

        print(f"memtree {__version__}")
        return 0
    handler = SUBCOMMANDS.get(argv[0])
    if handler is None:
        print(f"memtree: unknown command {argv[0]!r}; commands: {', '.join(SUBCOMMANDS)}", file=sys.stderr)
        return 2
    try:
        return handler(argv[1:]) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `memtree install --print | head`: the reader left, nothing to report
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("memtree."):
            print(f"memtree {argv[0]}: not available in this build ({e.name} is missing)", file=sys.stderr)
            return 1
        return _internal(argv[0], e)
    except Exception as e:  # noqa: BLE001 - no traceback reaches the operator
        from memtree.errors import ConfigError, MemtreeError

        if isinstance(e, MemtreeError):
            print(f"memtree {argv[0]}: {e.message}", file=sys.stderr)
            return 2 if isinstance(e, ConfigError) else 1
        return _internal(argv[0], e)


def _internal(cmd: str, e: BaseException) -> int:
    import os

    if os.environ.get("MEMTREE_DEBUG"):
        raise e
    print(
        f"memtree {cmd}: internal error: {type(e).__name__}: {e} (MEMTREE_DEBUG=1 shows the traceback)", file=sys.stderr
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
