"""The harness's fake Anthropic API (fake_api.py, an unchanged copy of
../shared/claude-code/harness/fake_api.py) plus one thing: a scripted tool
input may name text the model saw in an earlier tool result.

memtree's node ids are random, so a script cannot spell them. A script's
top-level ``"capture": {"NAME": "<regex with one group>"}`` is matched against
every tool_result in the request (latest match wins), and ``${NAME}`` in the
next turns is replaced by the group, like the harness's own ``--var``; a
value that is exactly ``"${NAME}"`` with a numeric capture becomes a number
(Read's offset and limit must be numbers).

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
                out.append(
                    c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c or [] if isinstance(x, dict))
                )
    return out


_decide = fake_api.decide
_original: dict = {}


def _numbers(obj, vars_):
    if isinstance(obj, str) and obj.startswith("${") and obj.endswith("}") and vars_.get(obj[2:-1], "x").isdigit():
        return int(vars_[obj[2:-1]])
    if isinstance(obj, list):
        return [_numbers(x, vars_) for x in obj]
    if isinstance(obj, dict):
        return {k: _numbers(v, vars_) for k, v in obj.items()}
    return obj


def decide(body):
    if not _original:
        _original.update(fake_api.State.script)
    patterns = _original.get("capture") or {}
    for text in tool_result_texts((body or {}).get("messages")):
        for name, rx in patterns.items():
            found = re.findall(rx, text)
            if found:
                fake_api.State.vars[name] = found[-1]
    fake_api.State.script = {**_original, "turns": _numbers(_original.get("turns", []), fake_api.State.vars)}
    return _decide(body)


fake_api.decide = decide

if __name__ == "__main__":
    fake_api.main()
