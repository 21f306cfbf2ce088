#!/bin/sh
# The plugin's entry point (SessionStart hook and MCP server): find a Python
# >= 3.11 (MEMTREE_PYTHON first) and run bootstrap.py with it, isolated (-I)
# so nothing from the user's project shadows the standard library.
for py in "$MEMTREE_PYTHON" python3.13 python3.12 python3.11 python3; do
  [ -n "$py" ] || continue
  command -v "$py" >/dev/null 2>&1 || continue
  "$py" -I -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || continue
  exec "$py" -I "$(dirname "$0")/bootstrap.py" "$@"
done
msg="memtree needs Python 3.11 or newer on PATH (or set MEMTREE_PYTHON); it is not capturing."
if [ "$1" = "hook" ]; then
  cat >/dev/null  # a capture hook without Python: the tool call goes on, uncaptured
  exit 0
fi
if [ "$1" = "session-start" ]; then
  printf '{"systemMessage": "%s"}\n' "$msg"
  exit 0
fi
echo "$msg" >&2
exit 1
