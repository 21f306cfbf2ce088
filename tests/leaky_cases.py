"""The known-leaky fixture (tests/fixtures/leaky/cases.jsonl), placed in a project.

Each case: a payload in Claude Code's real shape, ``expect`` (``stored`` or
``skipped``: a denied command or path stores nothing), ``secrets`` that must
never reach the store, spool or logs, and ``keep``: benign strings (often
secret look-alikes) that must be stored verbatim.
"""

from __future__ import annotations

import json
import os

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "leaky", "cases.jsonl")


def load_cases(project: str) -> list[dict]:
    with open(CASES, encoding="utf-8") as f:
        return [json.loads(line.replace("${PROJECT}", project)) for line in f if line.strip()]
