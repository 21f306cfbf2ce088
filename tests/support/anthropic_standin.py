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

from tests.support.http_standin import JsonStandIn


class AnthropicStandIn(JsonStandIn):
    def __init__(self, key: str, reply: str):
        super().__init__()
        self.key, self.reply = key, reply

    def handle(self, path, headers, body):
        if headers.get("x-api-key") != self.key:
            return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
        if path != "/v1/messages" or not headers.get("anthropic-version"):
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "bad request"}}
        return 200, {
            "id": f"msg_{len(self.requests):04d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": self.reply}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }
