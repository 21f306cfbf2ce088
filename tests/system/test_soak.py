"""The soak (eval/soak.py) at a tiny scale: the real `memtree serve` under the
MCP SDK client, every capture through the real hook process, a budget small
enough to bite; its invariants hold (nothing acknowledged lost, the budget
back under its limit once the pruner has run, integrity clean)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support import PYTHON, deadline


@pytest.mark.timeout(150)
def test_a_tiny_soak_loses_nothing_holds_the_budget_and_stays_intact(tmp_path):
    out = tmp_path / "soak.json"
    argv = [PYTHON, "-m", "memtree.eval.soak", "--sessions", "3", "--captures", "10", "--files", "20"]
    argv += ["--max-mib", "0.5", "--pruner-s", "2", "--idle-s", "1", "--sample-s", "0.5", "--json", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=deadline(140))
    assert out.exists(), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    report = json.loads(out.read_text())
    res, goals = report["result"], report["goals"]
    assert res["captures"] == 30
    # Every hook run is accounted for: acknowledged, spooled and drained, or skipped by its plan.
    assert res["acked"] + res["spooled_drained"] + res["skipped"] == 30, res
    assert res["acked"] + res["spooled_drained"] > 0
    assert res["spooled_left"] == 0 and res["capture_gaps"] == [], res
    # Each id the writer acknowledged is in the store or was purged by the pruner (by id,
    # or by count when Tidy compacted its purge row before the soak read it).
    assert goals["lost_zero"] and goals["lost_unexplained"] == 0, (res["lost"], goals)
    # Positive control: the budget bit (the pruner removed captures), and it holds at the end.
    assert goals["budget_bit"] and res["purged_seen"] > 0, goals
    # (How far over it went between passes depends on the box's load: the eval reports it.)
    assert goals["budget"]["end_bytes"] <= goals["budget"]["max_bytes"], goals["budget"]
    assert res["integrity_check"] == ["ok"] and res["index_problems"] == [], res
    assert res["recall_errors"] == [] and res["serve_stopped"], res
