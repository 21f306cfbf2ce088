"""A local stand-in for Ollama's embedding API, speaking its real wire format.

``POST /api/embed`` with ``{"model": str, "input": str | [str]}`` answers
``{"model", "embeddings": [[float]], "total_duration", "load_duration",
"prompt_eval_count"}``; an unknown model answers 404 ``{"error": "model
\\"x\\" not found, try pulling it first"}`` as Ollama does. Vectors are a
deterministic function of the text (letter counts), so tests can predict
neighbours.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIM = 26


def letter_vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for ch in text.lower():
        if "a" <= ch <= "z":
            vec[ord(ch) - 97] += 1.0
    return vec


class OllamaStandIn:
    def __init__(self, models=("test-embed",), delay_s: float = 0.0):
        self.models, self.delay_s = set(models), delay_s
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                outer.requests.append({"path": self.path, "body": body})
                if self.path != "/api/embed":
                    return self._send(404, {"error": "404 page not found"})
                if body.get("model") not in outer.models:
                    return self._send(404, {"error": f'model "{body.get("model")}" not found, try pulling it first'})
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                time.sleep(outer.delay_s)  # a big model on a CPU: slower than the supervisor's heartbeat window
                self._send(200, {"model": body["model"], "embeddings": [letter_vector(t) for t in inputs],
                                 "total_duration": 1000, "load_duration": 10, "prompt_eval_count": len(inputs)})

            def _send(self, code, obj):
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json; charset=utf-8")
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
