"""The harness's fake Anthropic API (fake_api.py, an unchanged copy of
../shared/claude-code/harness/fake_api.py) plus one thing: a scripted tool
input may name text the model saw in an earlier tool result.

memtree's node ids are random, so a script cannot spell them. A script's
top-level ``"capture": {"NAME": "<regex with one group>"}`` is matched against
every tool_result in the request (latest match wins), and ``${NAME}`` in the
next turns is replaced by the group, like the harness's own ``--var``.

    python -m memtree.eval.context_ab.scripted_api --port 0 --script s.json --log api.jsonl
"""

from __future__ import annotations

import re

from memtree.eval.context_ab import fake_api


def tool_result_texts(messages) -> list[str]:
    """Every tool_result's text, in conversation order."""
    out = []
    for m in messages or []:
        if m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        for b in m["content"]:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                out.append(c if isinstance(c, str) else "\n".join(
                    x.get("text", "") for x in c or [] if isinstance(x, dict)))
    return out


_decide = fake_api.decide


def decide(body):
    patterns = fake_api.State.script.get("capture") or {}
    for text in tool_result_texts((body or {}).get("messages")):
        for name, rx in patterns.items():
            found = re.findall(rx, text)
            if found:
                fake_api.State.vars[name] = found[-1]
    return _decide(body)


fake_api.decide = decide

if __name__ == "__main__":
    fake_api.main()
