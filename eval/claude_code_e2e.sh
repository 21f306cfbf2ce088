#!/usr/bin/env bash
# memtree under the REAL Claude Code CLI, offline: the harness in
# ../shared/claude-code/harness runs `claude -p` against a scripted fake model
# API on 127.0.0.1. The script (eval/claude_code_script.json) makes the CLI run
# native Read/Grep/Bash (captured by memtree's hook) and memtree's MCP tools.
# Prints what the model was shown for each tool call and what the store holds.
# Not part of `make test`: it installs the CLI from the npm registry (~250 MB).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
HARNESS_SRC=${HARNESS_SRC:-$REPO/../shared/claude-code/harness}
export CCREAL_ROOT=${CCREAL_ROOT:-/tmp/claude-code-harness}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r "$HARNESS_SRC" "$WORK/harness" && chmod +x "$WORK"/harness/*.sh "$WORK"/harness/*.py
CLAUDE_CODE_VERSION=${CLAUDE_CODE_VERSION:-2.1.197} "$WORK/harness/install.sh"
"$WORK/harness/setup_proj.sh" >/dev/null
(cd "$CCREAL_ROOT/proj" && git add -A && { git diff --cached --quiet || git -c user.name=e2e -c user.email=e2e@localhost commit -qm init; })
export MEMTREE_HOME=$CCREAL_ROOT/home/.memtree   # what ~/.memtree is for the isolated CLI
(cd "$CCREAL_ROOT/proj" && "$REPO/.venv/bin/memtree" install)
SCRIPT=$REPO/eval/claude_code_script.json ALLOWED="Read Grep Bash mcp__demo mcp__memtree" \
  "$WORK/harness/run.sh" >/dev/null
EXPECT_TOOLS=Read,Grep,Bash "$WORK/harness/analyze.py" | sed -n '1,/== hook payload schema/p'
"$REPO/.venv/bin/python" - "$CCREAL_ROOT/out/api_log.jsonl" <<'PY'
import json, sys
def messages(o):
    if isinstance(o, dict):
        if "messages" in o:
            return o["messages"]
        for v in o.values():
            m = messages(v)
            if m:
                return m
msgs = None
for line in reversed(open(sys.argv[1]).read().splitlines()):
    msgs = messages(json.loads(line))
    if msgs:
        break
for m in msgs or []:
    for c in m["content"] if isinstance(m["content"], list) else []:
        if c.get("type") == "tool_result":
            body = c["content"] if isinstance(c["content"], str) else "\n".join(x.get("text", "") for x in c["content"])
            print("--- tool_result shown to the model" + (" (error)" if c.get("is_error") else ""))
            print(body[:1200])
PY
(cd "$CCREAL_ROOT/proj" && "$REPO/.venv/bin/memtree" ctl status 2>/dev/null || true)
