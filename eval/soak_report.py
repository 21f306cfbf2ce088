"""The soak's report (eval/soak.py): the run by tenths, and issue 17's goals checked."""

from __future__ import annotations

from memtree.eval.stats import summary

MIB = 1048576

ACTORS = (
    "mcp",
    "writer",
    "walker.filter",
    "walker.staleness",
    "walker.pruner",
    "walker.embed",
    "walker.dedupe",
    "walker.summarize",
)


def tenths(result: dict) -> list[dict]:
    n = max(1, result["captures"])
    rows = []
    drive = [x for x in result["samples"] if x["captures"] <= n]
    for k in range(10):
        lo, hi = n * k / 10, n * (k + 1) / 10
        inside = [x for x in drive if lo < x["captures"] <= hi] or [min(drive, key=lambda x: abs(x["captures"] - hi))]
        last = inside[-1]
        hooks = [h[2] for h in result["hook_s"] if lo < h[0] <= hi]
        recalls = [r[1] for r in result["recall_s"] if lo < r[0] <= hi]
        row = {
            "tenth": k + 1,
            "captures": last["captures"],
            "t": last["t"],
            "store_mib": max(x.get("store_bytes", 0) for x in inside) / MIB,
            "disk_mib": max(x.get("file_bytes", 0) for x in inside) / MIB,
            "hook": summary(hooks) if hooks else None,
            "recall": summary(recalls) if recalls else None,
            "status": last.get("status", {}),
            "backlog": {
                a: max((x["actors"].get(a, {}).get("backlog") or 0) for x in inside)
                for a in ("walker.filter", "walker.embed", "walker.dedupe", "walker.summarize")
            },
            "rss": {},
            "pruner": last["actors"].get("walker.pruner", {}).get("info", {}),
        }
        for a in ACTORS:
            vals = [x["actors"][a]["rss"] for x in inside if x["actors"].get(a, {}).get("rss")]
            row["rss"][a] = sum(vals) / len(vals) / MIB if vals else None
        rows.append(row)
    return rows


def goals(result: dict, rows: list[dict], args) -> dict:
    limit = result["config"]["storage"]["maxBytes"]
    drive = [x for x in result["samples"] if "store_bytes" in x]
    # Store bytes per payload byte, from the samples before the budget first came near
    # (the pruner had removed nothing yet); captures differ in size, so the allowance
    # is the payload bytes of the busiest pruner interval at that rate.
    sent = [0]  # payload bytes sent up to capture n
    for h in result["hook_s"]:
        sent.append(sent[-1] + h[3])
    before = []
    for x in drive:
        if x["store_bytes"] >= 0.9 * limit:
            break
        before.append(x)
    if len(before) >= 2 and sent[before[-1]["captures"]] > sent[before[0]["captures"]]:
        per_byte = (before[-1]["store_bytes"] - before[0]["store_bytes"]) / (
            sent[before[-1]["captures"]] - sent[before[0]["captures"]]
        )
    else:  # the budget bit before two samples: the whole run's peak per byte sent (an overestimate)
        per_byte = max((x["store_bytes"] for x in drive), default=0) / max(1, sent[-1])
    busiest = busiest_n = j = 0
    hooks = result["hook_s"]
    for i, h in enumerate(hooks):  # the payload bytes of the busiest pruner interval
        while hooks[j][1] < h[1] - args.pruner_s:
            j += 1
        window = sent[h[0]] - sent[hooks[j][0] - 1]
        if window > busiest:
            busiest, busiest_n = window, i - j + 1
    per_capture = sent[-1] * per_byte / max(1, len(hooks))
    allowance = busiest * per_byte if per_byte > 0 else None
    peak = max((x["store_bytes"] for x in drive), default=0)
    end = drive[-1]["store_bytes"] if drive else 0
    rss = {}
    for a in ACTORS:
        first, second, last = rows[0]["rss"].get(a), rows[1]["rss"].get(a), rows[-1]["rss"].get(a)
        if first and last:
            rss[a] = {"first_mib": round(first, 1), "last_mib": round(last, 1), "change": round(last / first - 1, 3)}
            if second:  # past the warm-up (caches, the model, the first imports of a handler)
                rss[a]["change_from_second"] = round(last / second - 1, 3)
    restarts = {a: v.get("restarts") for a, v in (drive[-1]["actors"] if drive else {}).items() if v.get("restarts")}
    bit = any(x["store_bytes"] > limit for x in drive) or bool(
        result["samples"][-1]["actors"].get("walker.pruner", {}).get("info", {}).get("over_budget_removed")
    )
    return {
        "rss_flat": bool(rss) and all(abs(v["change"]) <= 0.10 for v in rss.values()),
        "rss": rss,
        "restarts": restarts,
        "budget_held": allowance is not None and peak - limit <= allowance and end <= limit,
        "budget_bit": bit,
        "budget": {
            "max_bytes": limit,
            "peak_bytes": peak,
            "end_bytes": end,
            "over_peak_bytes": max(0, peak - limit),
            "bytes_per_capture": round(per_capture) if per_capture else None,
            "captures_in_busiest_pruner_interval": busiest_n,
            "payload_bytes_in_busiest_pruner_interval": busiest,
            "store_bytes_per_payload_byte": round(per_byte, 3),
            "allowance_bytes": round(allowance) if allowance else None,
        },
        # An id gone without a purge row seen is lost unless a purge compacted into counts
        # before it was read accounts for it (the counts keep no ids, so this is by number).
        "unseen_purges": result["purges_total"] - result["purged_seen"],
        "lost_unexplained": max(0, len(result["lost"]) - (result["purges_total"] - result["purged_seen"])),
        "lost_zero": len(result["lost"]) <= result["purges_total"] - result["purged_seen"]
        and not result["spooled_left"]
        and not result["capture_gaps"],
        "integrity_clean": result["integrity_check"] == ["ok"] and not result["index_problems"],
    }


def _ms(st) -> str:
    return "-" if st is None else f"{st['median'] * 1000:.0f}/{st['p95'] * 1000:.0f}"


def report(result: dict, rows: list[dict], g: dict, args) -> None:
    limit_mib = result["config"]["storage"]["maxBytes"] / MIB
    if result.get("stopped_early_after_sessions") is not None:
        print(f"soak: --deadline-min reached: {result['stopped_early_after_sessions']} of {args.sessions} sessions run")
    print(
        f"soak: {args.sessions} sessions x {args.captures} captures = {result['captures']} hook runs, "
        f"{result['files']} files, storage.maxBytes {limit_mib:g} MiB, pruner every {args.pruner_s:g} s, "
        f"recall every {args.query_every} captures"
    )
    print(
        "\ntenth  captures     t_s  store_MiB  disk_MiB  hook_ms p50/p95  recall_ms p50/p95"
        "   live  stale  supsd  pruned  dropped  pend  purged  over_budget  backlog f/e/d/s"
    )
    for r in rows:
        st, p, b = r["status"], r["pruner"], r["backlog"]
        print(
            f"{r['tenth']:>5}  {r['captures']:>8}  {r['t']:>6.0f}  {r['store_mib']:>9.2f}  {r['disk_mib']:>8.2f}  "
            f"{_ms(r['hook']):>15}  {_ms(r['recall']):>17}  {st.get('live', 0):>5}  {st.get('stale', 0):>5}  "
            f"{st.get('superseded', 0):>5}  {st.get('pruned', 0):>6}  {st.get('dropped', 0):>7}  {st.get('pending', 0):>4}  "
            f"{p.get('purged', 0):>6}  {p.get('over_budget_removed', 0):>11}  "
            f"{b['walker.filter']}/{b['walker.embed']}/{b['walker.dedupe']}/{b['walker.summarize']}"
        )
    print("\nRSS MiB (mean over the tenth's samples)")
    print("tenth  " + "  ".join(f"{a.replace('walker.', ''):>9}" for a in ACTORS))
    for r in rows:
        print(f"{r['tenth']:>5}  " + "  ".join(f"{(r['rss'][a] or 0):>9.1f}" for a in ACTORS))
    b = g["budget"]
    hooks = summary([h[2] for h in result["hook_s"]])
    recalls = summary([r[1] for r in result["recall_s"]]) if result["recall_s"] else None
    rate = result["captures"] / max(result["drive_s"], 1e-9)
    print(
        f"\nrun: start {result['start_s']} s, driving {result['drive_s']} s ({rate:.2f} captures/s, hook + recall + "
        f"sampling), drain {result['drain_s']} s; full scale 300 x 200 = 60,000 captures at this rate: "
        f"{60000 / rate / 3600:.1f} h"
    )
    print(
        f"hook: {_ms(hooks)} ms p50/p95 (n={hooks['n']}); recall through MCP: {_ms(recalls)} ms p50/p95 "
        f"(n={recalls['n'] if recalls else 0}, errors {len(result['recall_errors'])})"
    )
    print(
        f"captures: {result['acked']} acked, {result['spooled_drained']} spooled and drained, "
        f"{result['spooled_left']} spooled not drained, {result['skipped']} skipped by the plan (unchanged re-reads, refused); "
        f"{result['edits']} file edits ({result['watched_edits']} watched -> {result['file_changed_hooks']} FileChanged hooks)"
    )
    last = result["samples"][-1]
    print(
        f"end: statuses {last.get('status')}; pruner {last['actors'].get('walker.pruner', {}).get('info')}; "
        f"purges seen in the audit {result['purged_seen']}"
    )
    print(f"idle CPU % over {args.idle_s:g} s: {result['idle_cpu']} (sum {sum(result['idle_cpu'].values()):.2f})")
    print(
        f"integrity: PRAGMA integrity_check {result['integrity_check'][:3]}; index checks "
        f"{result['index_problems'] or 'clean'} ({result['index_facts']}); serve stopped cleanly: {result['serve_stopped']}"
    )
    print(f"errors in the actors' logs: {result['log_errors'] or 'none'}")
    if result["hook_log_other"]:
        print(f"hook.log (other lines): {result['hook_log_other']}")
    if result["recall_errors"]:
        print(f"recall errors: {result['recall_errors']}")

    def mark(ok):
        return "MET" if ok else "NOT MET"

    print("\ngoals:")
    print(f"  RSS per actor within +-10 % first vs last tenth: {mark(g['rss_flat'])}")
    for a, v in g["rss"].items():
        print(
            f"      {a:<18} {v['first_mib']:>7.1f} -> {v['last_mib']:>7.1f} MiB  ({v['change'] * 100:+.1f} %; "
            f"from the second tenth {v.get('change_from_second', 0) * 100:+.1f} %)"
        )
    if g["restarts"]:
        print(f"      restarts: {g['restarts']}")
    print(
        f"  budget held (over by at most one pruner interval's captures): {mark(g['budget_held'])}; "
        f"peak {b['peak_bytes'] / MIB:.2f} MiB, end {b['end_bytes'] / MIB:.2f} MiB of {b['max_bytes'] / MIB:g} MiB; "
        f"over by {b['over_peak_bytes'] / 1024:.0f} KiB at most, allowance {((b['allowance_bytes'] or 0) / 1024):.0f} KiB "
        f"({b['captures_in_busiest_pruner_interval']} captures, {b['payload_bytes_in_busiest_pruner_interval'] / 1024:.0f} KiB "
        f"of payload x {b['store_bytes_per_payload_byte']} store bytes per payload byte; {b['bytes_per_capture']} B a capture "
        f"on average); the budget bit: {g['budget_bit']}"
    )
    print(
        f"  0 lost: {mark(g['lost_zero'])}: {len(result['lost'])} acknowledged ids gone without a purge row seen, "
        f"{g['unseen_purges']} purges whose rows Tidy compacted into counts before they were read "
        f"({result['purges_total']} purges in all, {result['purged_seen']} seen by id); unexplained {g['lost_unexplained']}; "
        f"spooled and never drained {result['spooled_left']}"
    )
    print(f"  integrity clean: {mark(g['integrity_clean'])}")
    print(
        f"  the Stop hook's capture check: {len(result['capture_gaps'])} sessions with a gap {result['capture_gaps'][:3]}"
    )
