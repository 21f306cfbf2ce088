"""A local stand-in for Ollama's embedding API, speaking its real wire format.

``POST /api/embed`` with ``{"model": str, "input": str | [str]}`` answers
``{"model", "embeddings": [[float]], "total_duration", "load_duration",
"prompt_eval_count"}``; an unknown model answers 404 ``{"error": "model
\\"x\\" not found, try pulling it first"}`` as Ollama does. Vectors are a
deterministic function of the text (letter counts), so tests can predict them.
"""

from __future__ import annotations

import time

from tests.support.http_standin import JsonStandIn

DIM = 26


def letter_vector(text: str) -> list[float]:
    vec = [0.0] * DIM
    for ch in text.lower():
        if "a" <= ch <= "z":
            vec[ord(ch) - 97] += 1.0
    return vec


class OllamaStandIn(JsonStandIn):
    def __init__(self, models=("test-embed",), delay_s: float = 0.0, first_delay_s: float = 0.0):
        super().__init__()
        self.models, self.delay_s = set(models), delay_s
        self.first_delay_s = first_delay_s  # the first request only: a model still loading (Ollama's cold start)

    def handle(self, path, headers, body):
        if path != "/api/embed":
            return 404, {"error": "404 page not found"}
        if body.get("model") not in self.models:
            return 404, {"error": f'model "{body.get("model")}" not found, try pulling it first'}
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        first, self.first_delay_s = self.first_delay_s, 0.0
        time.sleep(self.delay_s + first)  # a big model on a CPU: slower than the supervisor's heartbeat window
        return 200, {
            "model": body["model"],
            "embeddings": [letter_vector(t) for t in inputs],
            "total_duration": 1000,
            "load_duration": 10,
            "prompt_eval_count": len(inputs),
        }
