"""Every known-leaky fixture through the ingest plan and the writer's content gate."""

from __future__ import annotations

import hashlib
import json

import pytest

from memtree.capture.ingest import plan
from memtree.gate import REDACTION_VERSION, redact_text
from memtree.store.write.mutations import clean_meta
from tests.support import test_config as make_config
from tests.support.leaky_cases import load_cases

CASES = load_cases("/srv/project")


def test_the_fixture_is_big_enough_and_mixes_leaks_with_look_alikes():
    assert len(CASES) >= 30 and REDACTION_VERSION >= 1
    assert sum(bool(c["secrets"]) for c in CASES) >= 30
    assert sum(not c["secrets"] for c in CASES) >= 8
    assert {c["payload"]["tool_name"] for c in CASES} == {"Read", "Grep", "Bash"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_case_is_skipped_or_stored_clean_with_its_benign_text_intact(case):
    out = plan(case["payload"], make_config())
    if case["expect"] == "skipped":
        assert out.skip and out.nodes == []
        return
    assert out.skip is None and out.nodes
    # What the writer stores: content through redact_text (mutations.prepare_content), metadata
    # through mutations.clean_meta, both at insert.
    stored = [
        redact_text(n["content"])[0]
        + "\n"
        + json.dumps(clean_meta(n["metadata"]), ensure_ascii=False)
        + "\n"
        + n["source_uri"]
        for n in out.nodes
    ]
    blob = "\n".join(stored)
    leaked = [s for s in case["secrets"] if s in blob]
    assert leaked == []
    missing = [k for k in case["keep"] if k not in "\n".join(redact_text(n["content"])[0] for n in out.nodes)]
    assert missing == []


def test_the_generated_cases_are_byte_for_byte_the_pinned_ones():
    """The case builders are code: a refactor that changes one secret, id or text changes this digest.
    A case changed or added on purpose updates the digest in the same commit."""
    cases = load_cases("${PROJECT}")
    digest = hashlib.sha256(json.dumps(cases, sort_keys=True).encode()).hexdigest()
    assert len(cases) == 170
    assert digest == "5be1c574701778fc4c36df047065d372a8cb4e87017435db0381d7e3daa87529"
