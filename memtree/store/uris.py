"""Source URIs, built and parsed in one place. Standard library only (the
capture hook's spool path plans with it).

- ``file://<abs path>``                 a file's root node (the path unquoted)
- ``file://<abs path>#L<start>-<end>``  a chunk of it, lines inclusive
- ``session:<session id>``              a session's root node
- ``tool:<Tool>#<content hash>``        a tool output, keyed by what was stored
"""

FILE = "file://"
SESSION = "session:"
TOOL = "tool:"


def file_uri(path: str, start: int | None = None, end: int | None = None) -> str:
    return f"{FILE}{path}" if start is None else f"{FILE}{path}#L{start}-{end}"


def session_uri(session_id: str) -> str:
    return f"{SESSION}{session_id}"


def tool_uri(tool: str, digest: str | None = None) -> str:
    """``tool:<Tool>``; the writer appends the hash of the redacted content it stores."""
    return f"{TOOL}{tool}" if digest is None else f"{TOOL}{tool}#{digest}"


def file_path(uri: str | None) -> str | None:
    """The path a ``file://`` uri names (without its line range), else None."""
    if not uri or not uri.startswith(FILE):
        return None
    path = uri[len(FILE) :]
    return (path.rsplit("#L", 1)[0] if "#L" in path else path) or None


def has_lines(uri: str) -> bool:
    return uri.startswith(FILE) and "#L" in uri


def shown(uri: str, root: str | None = None) -> str:
    """The source as the agent needs it: a file path relative to the project
    (no scheme, line range kept), a tool without its dedup hash (``tool:Bash``)."""
    if uri.startswith(FILE):
        path = uri[len(FILE) :]
        if root and path.startswith(root.rstrip("/") + "/"):
            path = path[len(root.rstrip("/")) + 1 :]
        return path
    if uri.startswith(TOOL) and "#" in uri:
        return uri.split("#", 1)[0]
    return uri
