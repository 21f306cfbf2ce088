# Copied unchanged (below this header) from the shared Claude Code harness,
# shared/claude-code/harness/fake_api.py (public harness code, stdlib only), so the
# real-CLI test does not depend on ../shared at test time.
"""Fake Anthropic Messages API for driving the real Claude Code CLI offline.

stdlib only.  Listens on 127.0.0.1 only.

* POST /v1/messages            -> scripted turns (SSE when "stream": true, JSON otherwise)
* POST /v1/messages/count_tokens -> {"input_tokens": <rough estimate>}
* anything else                -> 200 {} (and logged, so you can see what the CLI probes)

Every request (method, path, headers, parsed body, timestamp) is appended as one JSON
line to --log.  Every response we generate is logged too (kind="response").

Turn selection for the *main* conversation:
    turn = number of user messages in the request that contain >=1 tool_result block
so turn 0 is the first request, turn 1 the request after the first tool round, etc.
This also works when a scripted turn issues several parallel tool_use blocks.

A request is treated as a *side request* (title generation, topic detection, quota
probe, ...) when it declares no tools, or when the tools the current scripted turn
needs are not all among the request's tools.  Side requests get a short text answer
("side_text" in the script) with stop_reason end_turn.

Script file (JSON):
{
  "side_text": "ok",
  "turns": [
    {"tool_use": [{"name": "Read", "input": {"file_path": "${PROJ}/README.md"}}]},
    {"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}},
    {"text": "All done."}
  ]
}
"${VAR}" placeholders in string values are substituted from --var VAR=value arguments
and then from the environment.  A turn may have both "text" (emitted first) and
"tool_use" (one object or a list).  Turns past the end of the list reuse the final
entry's text, or "Done." if it has none, always with end_turn.
"""
import argparse
import itertools
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNTER = itertools.count(1)


def now():
    return time.time()


def subst(obj, vars_):
    if isinstance(obj, str):
        def rep(m):
            k = m.group(1)
            if k in vars_:
                return vars_[k]
            return os.environ.get(k, m.group(0))
        return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", rep, obj)
    if isinstance(obj, list):
        return [subst(x, vars_) for x in obj]
    if isinstance(obj, dict):
        return {k: subst(v, vars_) for k, v in obj.items()}
    return obj


class State:
    script = {"turns": [], "side_text": "ok"}
    vars = {}
    log_path = None
    delay = 0.0


def log(entry):
    entry.setdefault("ts", now())
    line = json.dumps(entry, ensure_ascii=False)
    with LOCK:
        with open(State.log_path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def count_tool_rounds(messages):
    n = 0
    for m in messages or []:
        if m.get("role") != "user" or not isinstance(m.get("content"), list):
            continue
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"]):
            n += 1
    return n


def turn_blocks(turn):
    """Return list of content blocks (API shape) and stop_reason for a script turn."""
    blocks = []
    if turn.get("text"):
        blocks.append({"type": "text", "text": turn["text"]})
    tu = turn.get("tool_use")
    if tu:
        if isinstance(tu, dict):
            tu = [tu]
        for t in tu:
            blocks.append({
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:24],
                "name": t["name"],
                "input": t.get("input", {}),
            })
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    if not blocks:
        blocks = [{"type": "text", "text": "Done."}]
    return blocks, stop


def side_text(body):
    """Text for side requests.  If the request demands structured output
    (output_config.format = json_schema, e.g. session-title generation), answer with a
    JSON object that fills every property of the schema with a placeholder."""
    fmt = ((body.get("output_config") or {}).get("format") or {})
    if fmt.get("type") == "json_schema":
        props = (fmt.get("schema") or {}).get("properties") or {}
        fill = {"string": "Fake title", "integer": 0, "number": 0, "boolean": False,
                "array": [], "object": {}}
        return json.dumps({k: fill.get((v or {}).get("type"), "fake") for k, v in props.items()})
    return State.script.get("side_text", "ok")


def decide(body):
    """Return (kind, turn_index, blocks, stop_reason)."""
    turns = State.script.get("turns", [])
    tools = body.get("tools") or []
    tool_names = {t.get("name") for t in tools if isinstance(t, dict)}
    idx = count_tool_rounds(body.get("messages"))
    if idx < len(turns):
        turn = subst(turns[idx], State.vars)
    else:
        last = turns[-1] if turns else {}
        turn = {"text": subst(last.get("text") or "Done.", State.vars)}
    needed = []
    tu = turn.get("tool_use")
    if tu:
        needed = [t["name"] for t in (tu if isinstance(tu, list) else [tu])]
    if not tool_names or any(n not in tool_names for n in needed):
        return "side", idx, [{"type": "text", "text": side_text(body)}], "end_turn"
    blocks, stop = turn_blocks(turn)
    return "main", idx, blocks, stop


def usage(inp=50, out=20):
    return {"input_tokens": inp, "output_tokens": out,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def sse(event, data):
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def build_sse(msg_id, model, blocks, stop):
    out = [sse("message_start", {
        "type": "message_start",
        "message": {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                    "content": [], "stop_reason": None, "stop_sequence": None,
                    "usage": usage(50, 1)}})]
    out.append(sse("ping", {"type": "ping"}))
    for i, b in enumerate(blocks):
        if b["type"] == "text":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            txt = b["text"]
            # split text into two deltas to exercise the delta path
            half = max(1, len(txt) // 2)
            for part in (txt[:half], txt[half:]):
                if part:
                    out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "text_delta", "text": part}}))
        elif b["type"] == "tool_use":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "tool_use", "id": b["id"],
                                                                     "name": b["name"], "input": {}}}))
            js = json.dumps(b["input"], ensure_ascii=False)
            cut = len(js) // 2
            for part in (js[:cut], js[cut:]):
                if part:
                    out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": {"type": "input_json_delta",
                                                                     "partial_json": part}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": 20}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-anthropic/0.1"

    def log_message(self, fmt, *args):  # silence stderr access log
        pass

    def _read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if not n and self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        try:
            body = json.loads(raw) if raw else None
        except Exception:
            body = {"_raw": raw.decode("utf-8", "replace")}
        return raw, body

    def _send(self, code, payload, ctype="application/json", extra=None):
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", "req_fake_" + uuid.uuid4().hex[:16])
        self.send_header("anthropic-organization-id", "00000000-0000-0000-0000-000000000000")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _handle(self):
        seq = next(COUNTER)
        t0 = now()
        raw, body = self._read_body()
        path = self.path.split("?")[0]
        log({"kind": "request", "seq": seq, "ts": t0, "method": self.command, "path": self.path,
             "headers": {k: v for k, v in self.headers.items()
                         if k.lower() not in ("x-api-key", "authorization")},
             "auth_present": bool(self.headers.get("x-api-key") or self.headers.get("authorization")),
             "body_len": len(raw), "body": body})
        if self.command == "POST" and path.endswith("/v1/messages/count_tokens"):
            n = max(1, len(raw) // 4)
            log({"kind": "response", "seq": seq, "path": path, "input_tokens": n})
            return self._send(200, {"input_tokens": n})
        if self.command == "POST" and path.endswith("/v1/messages"):
            body = body or {}
            if State.delay:
                time.sleep(State.delay)
            kind, idx, blocks, stop = decide(body)
            model = body.get("model", "claude-fake")
            msg_id = "msg_fake_" + uuid.uuid4().hex[:20]
            log({"kind": "response", "seq": seq, "path": path, "decision": kind, "turn": idx,
                 "model": model, "stream": bool(body.get("stream")), "stop_reason": stop,
                 "blocks": blocks})
            if body.get("stream"):
                return self._send(200, build_sse(msg_id, model, blocks, stop),
                                  ctype="text/event-stream; charset=utf-8",
                                  extra={"Cache-Control": "no-cache"})
            return self._send(200, {"id": msg_id, "type": "message", "role": "assistant",
                                    "model": model, "content": blocks, "stop_reason": stop,
                                    "stop_sequence": None, "usage": usage()})
        log({"kind": "response", "seq": seq, "path": path, "generic": True})
        return self._send(200, {})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--var", action="append", default=[], help="VAR=value for ${VAR} placeholders")
    ap.add_argument("--delay", type=float, default=0.0, help="seconds to sleep before each /v1/messages answer")
    a = ap.parse_args()
    with open(a.script) as f:
        State.script = json.load(f)
    State.vars = dict(v.split("=", 1) for v in a.var)
    State.log_path = a.log
    State.delay = a.delay
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    print(f"fake API listening on http://127.0.0.1:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
