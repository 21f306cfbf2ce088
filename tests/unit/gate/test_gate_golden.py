"""The gate answers the recorded corpus byte for byte (tests/support/gate_corpus.py).

The corpus was recorded from the gate before it was split into modules, so a
restructuring that changes any answer fails here; a rule changed on purpose
regenerates the file in the same commit.
"""

from __future__ import annotations

from collections import Counter

from tests.support import gate_corpus

ROWS = gate_corpus.load()


def test_the_corpus_covers_every_call_and_holds_redactions_and_denials():  # positive control
    calls = Counter(r["f"] for r in ROWS)
    assert set(calls) == {"redact_text", "redact_value", "command_denied", "path_denied", "refused_outside"}
    assert min(calls.values()) >= 300
    assert sum(1 for r in ROWS if r["f"] == "redact_text" and r["out"][1]) >= 1000
    assert sum(1 for r in ROWS if r["f"] == "command_denied" and r["out"]) >= 500
    assert sum(1 for r in ROWS if r["f"] == "path_denied" and r["out"]) >= 300
    assert sum(1 for r in ROWS if r["f"] == "refused_outside" and r["out"]) >= 300


def test_every_answer_is_byte_identical_to_the_recorded_one():
    fns = gate_corpus.api()
    differ = [(r["f"], r["in"]) for r in ROWS if gate_corpus.answer(fns, r["f"], r["in"]) != r["out"]]
    assert differ[:5] == [] and len(differ) == 0
