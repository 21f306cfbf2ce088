"""A local stand-in for the Anthropic Messages API, speaking its real format.

``POST /v1/messages`` with headers ``x-api-key`` and ``anthropic-version``
and a body ``{"model", "max_tokens", "messages": [{"role": "user",
"content": str}]}`` answers a Message object ``{"id", "type": "message",
"role": "assistant", "model", "content": [{"type": "text", "text"}],
"stop_reason", "stop_sequence", "usage": {"input_tokens", "output_tokens"}}``;
a wrong key answers 401 with ``{"type": "error", "error": {"type":
"authentication_error", "message"}}``.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class AnthropicStandIn:
    def __init__(self, key: str, reply: str):
        self.key, self.reply = key, reply
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                if self.headers.get("x-api-key") != outer.key:
                    return self._send(401, {"type": "error", "error": {"type": "authentication_error",
                                                                        "message": "invalid x-api-key"}})
                if self.path != "/v1/messages" or not self.headers.get("anthropic-version"):
                    return self._send(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                        "message": "bad request"}})
                self._send(200, {"id": f"msg_{len(outer.requests):04d}", "type": "message", "role": "assistant",
                                 "model": body["model"], "content": [{"type": "text", "text": outer.reply}],
                                 "stop_reason": "end_turn", "stop_sequence": None,
                                 "usage": {"input_tokens": 100, "output_tokens": 20}})

            def _send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
