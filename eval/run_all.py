"""`make bench`: every benchmark in turn (core, writer, redact, leak eval, hook, tools, idle, robust, doctor, storage, embed,
recall eval, broad recall eval, search by mode, search at scale, child lookups by store size, context A/B, the month-of-use soak), figures to stdout."""

from __future__ import annotations

import sys

from memtree.eval import (
    bench_core,
    bench_doctor,
    bench_embed,
    bench_hook,
    bench_idle,
    bench_plans,
    bench_redact,
    bench_robust,
    bench_scale,
    bench_search,
    bench_storage,
    bench_tools,
    bench_writer,
    broad_eval,
    leak_eval,
    recall_eval,
    soak,
)
from memtree.eval.context_ab import run as context_ab


def main() -> int:
    for name, bench in (
        ("core", bench_core),
        ("writer", bench_writer),
        ("redact", bench_redact),
        ("leak eval (generated secrets in 55 syntaxes, vendor tokens under no name)", leak_eval),
        ("hook", bench_hook),
        ("tools", bench_tools),
        ("idle", bench_idle),
        ("robust", bench_robust),
        ("doctor", bench_doctor),
        ("storage", bench_storage),
        ("embed", bench_embed),
        ("recall", recall_eval),
        ("broad recall", broad_eval),
        ("search", bench_search),
        ("scale", bench_scale),
        ("child lookups with and without the pinned planner statistics", bench_plans),
        ("context A/B (real Claude Code CLI)", context_ab),
        # Last: hours at full scale, and it exits 1 when one of issue 17's soak goals is not met.
        ("soak (a month of use: 300 sessions x 200 captures)", soak),
    ):
        print(f"\n===== {name} =====", flush=True)
        code = bench.main([])
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
