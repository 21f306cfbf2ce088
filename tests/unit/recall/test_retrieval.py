"""Retrieval over real stdio against a real writer and a real SQLite store:
the live predicate by default (negative cases by exact id sets beside a live
positive control), no top-k-then-filter starvation, freshness of file chunks,
clear errors that change nothing, and budgets that hold for every tool."""

from __future__ import annotations

import os
import re
import time

import pytest

from memtree import protocol, tokens
from tests.support import deadline, wait_until
from tests.support.front_harness import ids_in, module_front

HIDDEN = ("stale", "superseded", "pruned", "dropped", "forgotten")


front = module_front("retrieval")


def _hidden_family(front, word: str):
    """A live root R with a live child L and one child per hidden status, all
    linked from L by edges; X is live and linked from L only by an edge."""
    root = front.add(f"Root observation for the {word[:3]} family tree, parent of the rest.", kind="note")
    live = front.add(
        f"The live {word} node: positive control for every retrieval tool.", kind="observation", parent_id=root
    )
    linked = front.add(f"Linked {word} node reachable only by an edge from the live one.", kind="observation")
    hidden = {}
    for status in HIDDEN:
        nid = front.add(
            f"A {status} {word} node that must never come back by default.",
            kind="observation",
            parent_id=root,
            status="pending",
        )
        if status == "forgotten":
            front.set_status([nid], "live")
            front.caller.call(protocol.Forget(node_id=nid, reason="test"))
        else:
            front.set_status([nid], status)
        hidden[status] = nid
    for dst in [linked, *hidden.values()]:
        front.edge(live, dst, "references")
    statuses = dict(
        front.rows(f"SELECT id, status FROM nodes WHERE id IN ({','.join('?' * len(hidden))})", list(hidden.values()))
    )
    assert statuses == {nid: s for s, nid in hidden.items()}
    return root, live, linked, hidden


def test_hidden_statuses_never_come_back_by_default(front):
    t0 = int(time.time() * 1000)
    root, live, linked, hidden = _hidden_family(front, "ocelot")
    assert ids_in(front.ok("recall", {"query": "ocelot", "limit": 100})) == {live, linked}
    assert ids_in(front.ok("recall", {"filters": {"kind": "observation", "since": t0}, "limit": 100})) == {live, linked}
    assert ids_in(front.ok("recall", {"op": "neighbors", "ids": [root]})) - {root} == {live}
    assert ids_in(front.ok("recall", {"op": "neighbors", "ids": [live], "depth": 2})) - {live} == {root, linked}
    composed = front.ok("recall", {"op": "compose", "ids": [root], "budget_tokens": 4000, "depth": 2})
    assert ids_in(composed) == {root, live, linked}


def test_hidden_statuses_come_back_only_when_named(front):
    t0 = int(time.time() * 1000)
    root, live, linked, hidden = _hidden_family(front, "tapir")
    got = ids_in(front.ok("recall", {"query": "tapir", "filters": {"status": ["stale", "superseded"]}}))
    assert got == {hidden["stale"], hidden["superseded"]}
    got = ids_in(
        front.ok("recall", {"filters": {"kind": "observation", "since": t0, "status": list(HIDDEN)}, "limit": 100})
    )
    assert got == set(hidden.values())
    # pruned, dropped and forgotten have left the search index for good
    got = ids_in(front.ok("recall", {"query": "tapir", "filters": {"status": ["pruned", "dropped", "forgotten"]}}))
    assert got == set()


def test_compose_drops_a_hidden_seed_and_says_why(front):
    root, live, linked, hidden = _hidden_family(front, "okapi")
    out = front.ok("recall", {"ids": [hidden["stale"], live], "budget_tokens": 3000, "depth": 0})
    manifest = out[out.index("manifest:") :]
    assert f"{hidden['stale']}(stale)" in manifest.split("dropped:")[1]
    assert "okapi node that must never" not in out
    # The same call in the form the schema shows: ids as one string, the rest in opts.
    same = front.ok("recall", {"ids": f"{hidden['stale']}, {live}", "opts": "budget=3000 depth=0"})
    assert same.split("manifest:")[1] == manifest.split("manifest:")[1]


def test_hidden_matches_ahead_of_a_live_one_do_not_starve_it(front):
    live = front.add("A single live narwhal record among many hidden ones.", kind="tool_output")
    ids = []
    for i in range(300):  # newer and better BM25 matches than the live one, all hidden
        ids.append(front.add(f"narwhal narwhal narwhal narwhal hidden twin {i}", kind="tool_output", status="pending"))
    front.set_status(ids[:200], "stale")
    front.set_status(ids[200:], "superseded")
    assert ids_in(front.ok("recall", {"query": "narwhal", "limit": 1})) == {live}
    assert ids_in(front.ok("recall", {"query": "narwhal", "limit": 1, "filters": {"kind": "tool_output"}})) == {live}
    assert ids_in(front.ok("recall", {"filters": {"kind": "tool_output"}, "limit": 1})) == {live}


def _put_file(front, name: str, text: str) -> tuple[str, str]:
    path = os.path.join(front.root, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    st = os.stat(path)
    res = front.caller.call(
        protocol.PutFile(
            path=path,
            mtime=st.st_mtime_ns,
            size=st.st_size,
            chunks=[{"start": 1, "end": text.count("\n"), "symbol": None, "kind": "window", "content": text}],
        )
    )
    return path, res["chunk_ids"][0]


def _status(front, nid):
    return front.rows("SELECT status FROM nodes WHERE id = ?", (nid,))[0][0]


def test_a_chunk_whose_file_changed_is_marked_stale_in_the_answer_and_in_the_store(front):
    path, chunk = _put_file(front, "wombat.py", "def wombat_burrow():\n    return 'deep tunnels'\n")
    fresh = front.ok("recall", {"query": "wombat_burrow"})
    assert ids_in(fresh) == {chunk} and "STALE" not in fresh
    # The path as the agent uses it (relative, no scheme) and the matching line as it is, numbered.
    assert "\nwombat.py#L1-2" not in fresh and " wombat.py#L1-2" in fresh and "file://" not in fresh
    assert "\n1:def wombat_burrow():" in fresh and "deep tunnels" not in fresh  # only the line that matched
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    changed = front.ok("recall", {"query": "wombat_burrow"})
    line = next(ln for ln in changed.splitlines() if chunk in ln)
    assert "STALE" in line
    wait_until(
        lambda: _status(front, chunk) == "stale", timeout=deadline(10), what="the writer to learn the chunk is stale"
    )
    assert ids_in(front.ok("recall", {"query": "wombat_burrow"})) == set()


def test_a_chunk_whose_file_was_deleted_is_marked_stale(front):
    path, chunk = _put_file(front, "quagga.py", "QUAGGA_STRIPES = 42\nprint(QUAGGA_STRIPES)\n")
    keep_path, keep = _put_file(front, "zebra.py", "QUAGGA_STRIPES_ZEBRA = 1\nprint('zebra quagga')\n")
    os.unlink(path)
    out = front.ok("recall", {"ids": [chunk, keep], "budget_tokens": 2000, "depth": 0})
    assert f"id={chunk}" in out and "stale=" in out.split(f"id={chunk}")[1].split(">")[0]
    assert "stale=" not in out.split(f"id={keep}")[1].split(">")[0]
    wait_until(
        lambda: _status(front, chunk) == "stale", timeout=deadline(10), what="the writer to learn the chunk is stale"
    )
    assert _status(front, keep) == "live"


UNKNOWN = "01HZZZZZZZZZZZZZZZZZZZZZZZ"
BAD_CALLS = [
    ("note", {}, "text"),
    ("note", {"text": 5}, "text"),
    ("note", {"text": "   "}, "text"),
    ("note", {"text": "ok text", "parent_id": "nope"}, "parent_id"),
    ("note", {"text": "ok text", "colour": "red"}, "colour"),
    ("recall", {"ids": "x"}, "ids"),
    ("recall", {"ids": [UNKNOWN]}, "ids"),
    ("recall", {"ids": ["{live}"], "budget_tokens": -1}, "budget_tokens"),
    ("recall", {"ids": ["{live}"], "filters": {"status": ["bogus"]}}, "status"),
    ("recall", {"ids": ["{live}"], "limit": 3}, "limit"),
    ("recall", {"op": "fetch"}, "op"),
    ("recall", {"op": "get"}, "ids"),
    ("recall", {"ids": 5}, "ids"),
    ("recall", {"filters": {"since": "the other day"}}, "since"),
    ("recall", {"limit": 0}, "limit"),
    ("recall", {"filters": {"kind": "widget"}}, "kind"),
    ("recall", {"filters": {"status": "nope"}}, "status"),
    ("recall", {"budget_tokens": 0}, "budget_tokens"),
    ("recall", {"query": ""}, "query"),
    ("recall", {"query": "x", "mode": "fuzzy"}, "mode"),
    ("recall", {"query": "x", "limit": 1000}, "limit"),
    ("recall", {"query": "x", "filters": {"colour": 1}}, "colour"),
    ("recall", {"query": "x", "filters": {"status": "bogus"}}, "status"),
    ("recall", {"query": ["x"]}, "query"),
    ("recall", {"op": "neighbors", "ids": ["{live}"], "depth": 9}, "depth"),
    ("recall", {"op": "neighbors", "ids": ["{live}"], "filters": {"edge_kinds": ["bogus"]}}, "edge_kinds"),
    ("recall", {"op": "neighbors", "ids": [UNKNOWN]}, "ids"),
    ("recall", {"op": "path", "ids": [123]}, "ids"),
    ("recall", {"op": "path", "ids": [UNKNOWN]}, "ids"),
    ("recall", {"op": "compose", "ids": []}, "ids"),
    ("recall", {"op": "compose", "ids": ["x"]}, "ids"),
    ("recall", {"op": "compose", "ids": [UNKNOWN]}, "ids"),
    ("recall", {"op": "compose", "ids": ["{live}"], "budget_tokens": 0}, "budget_tokens"),
    ("recall", {"op": "compose", "ids": ["{live}"], "format": "fancy"}, "format"),
    ("recall", {"op": "compose", "ids": ["{live}"], "depth": -1}, "depth"),
    ("forget", {"node_id": "{live}", "reason": ""}, "reason"),
    ("forget", {"node_id": UNKNOWN, "reason": "x"}, "node_id"),
    ("forget", {"node_id": "{live}"}, "reason"),
    ("read", {"path": 5}, "path"),
    ("read", {"path": "big.txt", "lines": "abc"}, "lines"),
    ("read", {"path": "big.txt", "budget_tokens": -1}, "budget_tokens"),
    ("grep", {}, "pattern"),
    ("grep", {"pattern": "x", "context": -1}, "context"),
    ("bash", {}, "command"),
    ("bash", {"command": "touch SHOULD_NOT_EXIST", "timeout_s": -1}, "timeout_s"),
    ("bash", {"command": "touch SHOULD_NOT_EXIST", "opts": "timeout=-1"}, "timeout_s"),
    ("bash", {"command": "touch SHOULD_NOT_EXIST", "opts": "timeout=soon"}, "timeout"),
    ("recall", {"query": "x", "opts": "colour=red"}, "colour"),
    ("recall", {"query": "x", "opts": 5}, "opts"),
    ("recall", {"query": "x", "limit": 2, "opts": "limit=3"}, "twice"),
    ("read", {"path": "big.txt", "opts": "budget=0"}, "budget_tokens"),
    ("note", {"text": "an opts note that must not be stored", "opts": "parent=x"}, "parent"),
    # note and forget folded into recall: the same checks, naming recall's arguments.
    ("recall", {"note": ""}, "note"),
    ("recall", {"note": 5}, "note"),
    ("recall", {"note": "   "}, "note"),
    ("recall", {"note": "ok text", "ids": "nope"}, "ids"),
    ("recall", {"note": "ok text", "ids": [UNKNOWN]}, "ids"),
    ("recall", {"note": "ok text", "limit": 2}, "limit"),
    ("recall", {"note": "ok text", "opts": "op=search"}, "note"),
    ("recall", {"opts": "op=forget"}, "ids"),
    ("recall", {"ids": "{live}", "opts": "op=forget"}, "note"),
    ("recall", {"ids": "{live}", "note": "  ", "opts": "op=forget"}, "note"),
    ("recall", {"ids": UNKNOWN, "note": "x", "opts": "op=forget"}, "ids"),
    ("recall", {"ids": ["{live}", UNKNOWN], "note": "x", "opts": "op=forget"}, "one id"),
    ("recall", {"ids": "{live}", "note": "x", "query": "y", "opts": "op=forget"}, "query"),
]


def _fill(args: dict, live: str) -> dict:
    def sub(v):
        if isinstance(v, str):
            return v.replace("{live}", live)
        if isinstance(v, list):
            return [sub(x) for x in v]
        return v

    return {k: sub(v) for k, v in args.items()}


def test_bad_arguments_to_every_tool_are_one_line_errors_that_change_nothing(front):
    live = front.add("A live node that bad calls point at; it must stay exactly as it is.")
    with open(os.path.join(front.root, "big.txt"), "w") as f:
        f.write("hello\n")
    before = front.snapshot()
    for tool, args, word in BAD_CALLS:
        err = front.error(tool, _fill(args, live))
        assert word in err, f"{tool}({args}): {err!r} does not name {word!r}"
        assert "\n" not in err and "Traceback" not in err, f"{tool}({args}): {err!r}"
    assert front.snapshot() == before
    assert not os.path.exists(os.path.join(front.root, "SHOULD_NOT_EXIST"))


@pytest.mark.parametrize("budget", [1, 5, 20, 100, 1000])
def test_no_tool_answer_ever_exceeds_its_budget(front, budget):
    big = f"budget sweep {budget}\n" + "\n".join(
        f"capybara line {i}: " + "lorem ipsum dolor sit amet " * 3 for i in range(800)
    )
    parent = front.add(f"Capybara parent node for the budget sweep {budget}, it has a large child.")
    nid = front.add(big, parent_id=parent)
    for i in range(5):
        front.edge(nid, front.add(f"capybara neighbour {budget}.{i} " + "words " * 200), "references")
    with open(os.path.join(front.root, "capybara.txt"), "w") as f:
        f.write(big)
    calls = [
        ("recall", {"ids": [nid]}),
        ("recall", {"limit": 100}),
        ("recall", {"query": "capybara", "limit": 100}),
        ("recall", {"op": "neighbors", "ids": [nid], "depth": 3}),
        ("recall", {"op": "path", "ids": [nid]}),
        ("recall", {"ids": [nid, parent]}),
        ("read", {"path": "capybara.txt"}),
        ("read", {"path": "capybara.txt", "lines": "1-700"}),
        ("grep", {"pattern": "capybara"}),
        ("bash", {"command": "seq 1 5000"}),
    ]
    for tool, args in calls:
        text = front.ok(tool, {**args, "budget_tokens": budget})
        assert tokens.count(text) <= budget, f"{tool} at budget {budget}: {tokens.count(text)} tokens"
    for tool, args in [
        ("note", {"text": "capybara note " * 2000}),
        ("recall", {"note": "capybara note " * 2000}),
        ("forget", {"node_id": nid, "reason": "sweep"}),
    ]:
        err, text = front.call(tool, args)
        assert tokens.count(text) <= 2000


def test_search_says_when_more_relevant_hits_lie_beyond_the_limit(front):
    ids = {front.add(f"The pangolin ledger entry number {i} records a reconciled pangolin payment.") for i in range(3)}
    cut = front.ok("recall", {"query": "pangolin ledger", "limit": 2})
    assert len(ids_in(cut) & ids) == 2
    assert 'more relevant hits beyond limit=2: recall(query="pangolin ledger", opts="limit=4")' in cut, cut
    whole = front.ok("recall", {"query": "pangolin ledger", "limit": 3})  # control: nothing left out
    assert ids_in(whole) == ids and "beyond limit" not in whole


def test_a_cut_answer_names_the_exact_call_that_returns_all_of_it(front):
    nid = front.add("\n".join(f"armadillo burrow survey line {i}" for i in range(300)))
    cut = front.ok("recall", {"ids": [nid], "budget_tokens": 200})
    m = re.search(r"all of it: (recall\(ids=\[\"(\w+)\"\], opts=\"budget=(\d+)\"\))\]$", cut)
    assert m and m.group(2) == nid, cut
    whole = front.ok("recall", {"ids": nid, "opts": f"budget={m.group(3)}"})  # the call as named, through opts
    assert "armadillo burrow survey line 299" in whole and "cut to fit" not in whole


def test_files_op_gives_one_hit_per_file_and_counts_its_other_matching_chunks(front):
    funcs = "".join(f"def quokka_{i}():\n    return 'quokka hop {i}'\n\n\n" for i in range(3))
    for name, text in (("many.py", funcs), ("one.py", "def quokka_solo():\n    return 'quokka hop'\n")):
        with open(os.path.join(front.root, name), "w") as f:
            f.write(text)
        front.ok("read", {"path": name})
    chunks = dict(
        front.rows(
            "SELECT id, json_extract(metadata, '$.path') FROM nodes "
            "WHERE kind = 'file_chunk' AND status = 'live' AND content LIKE '%quokka%'"
        )
    )
    by_chunk = ids_in(front.ok("recall", {"query": "quokka hop", "filters": {"kind": "file_chunk"}}))
    assert len(by_chunk & set(chunks)) == 4  # control: every matching chunk is a hit of its own
    grouped = front.ok("recall", {"op": "files", "query": "quokka hop", "filters": {"kind": "file_chunk"}})
    files = [chunks[i] for i in ids_in(grouped) & set(chunks)]
    assert sorted(os.path.basename(p) for p in files) == ["many.py", "one.py"], grouped
    assert "(+2 more matching chunk(s) of this file)" in grouped


def test_neighbors_stops_at_its_node_cap_and_says_so(front):
    from memtree.recall.retrieval import MAX_NEIGHBORS

    root = front.add("The okapi census root node, parent of many survey nodes.")
    kids = [front.add(f"okapi survey {i}", parent_id=root) for i in range(50)]
    for i, kid in enumerate(kids):
        for j in range(5):
            front.add(f"okapi sighting {i}.{j}", parent_id=kid)
    near = front.ok("recall", {"op": "neighbors", "ids": [root], "budget_tokens": 20000})
    assert ids_in(near) - {root} == set(kids) and "stopped at" not in near  # control: depth 1 is under the cap
    far = front.ok("recall", {"op": "neighbors", "ids": [root], "depth": 2, "budget_tokens": 20000})
    assert f"stopped at {MAX_NEIGHBORS} nodes" in far.splitlines()[0]
    assert set(kids) <= ids_in(far) and len(ids_in(far) - {root}) == MAX_NEIGHBORS


def test_a_hit_shows_its_best_matching_line_and_the_best_line_near_it_exactly():
    from memtree.recall import render

    log = "\n".join(
        [
            "Version 9.1.0",
            "-------------",
            "",
            "Released 2030-01-02",
            "- other change",
            "Version 9.0.0",
            "-------------",
            "",
            "Released 2029-05-11",
            "- first change",
        ]
    )
    assert (
        render.matching_lines({"content": log, "kind": "tool_output"}, "Version 9.0.0 Released")
        == "Version 9.0.0\nReleased 2029-05-11"
    )
    chunk = {
        "content": "x = 1\nif width is None:\n    width = parent.width\n",
        "kind": "file_chunk",
        "metadata": '{"start": 40}',
    }
    # In file order, with file line numbers: the match and its neighbour holding "width".
    assert render.matching_lines(chunk, "parent.width") == "41:if width is None:\n42:    width = parent.width"
    assert render.matching_lines(chunk, "pangolin") == ""  # control: no line holds a query word


def _matching_lines_unfiltered(node: dict, query: str) -> str:
    """render.matching_lines as it was before lines were ruled out by substring:
    every line split into words and scored (the choice among them is render's)."""
    from memtree.recall import render

    terms = {w.lower() for w in re.findall(r"\w+", query)}
    tokens_ = [t.lower() for t in query.split()]

    def score(ln: str) -> int:
        low = ln.lower()
        return len({w.lower() for w in re.findall(r"\w+", ln)} & terms) + 2 * sum(t in low for t in tokens_)

    lines = (node.get("content") or "").splitlines()
    return render.shown_lines(node, lines, [(-score(ln), i) for i, ln in enumerate(lines)])


def test_matching_lines_picks_what_scoring_every_line_picked():
    """The lines shown for a hit are the same whether or not lines holding no
    query word are ruled out first: over chunks of this repository's own
    source and queries of their words, a mixed-case word, punctuation, a token
    of no word, a word of no chunk, and non-ASCII text."""
    import random

    from memtree.recall import render

    rng = random.Random(7)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    texts = []
    for folder, _dirs, files in os.walk(os.path.join(root, "memtree")):
        texts += [open(os.path.join(folder, f), encoding="utf-8").read() for f in sorted(files) if f.endswith(".py")]
    texts.append("ΑΣ'Β όνομα\nΟΔΟΣ x = ΑΣ\nplain line\n")  # non-ASCII: scored line by line
    words = sorted({w for t in texts for w in re.findall(r"\w+", t)})
    shown = 0
    for i in range(1500):
        text = texts[i % len(texts)]
        lines = text.splitlines()
        at = rng.randrange(max(1, len(lines) - 40))
        chunk = "\n".join(lines[at : at + 40])
        picked = rng.sample(words, 3) + [rng.choice(re.findall(r"\w+", chunk) or ["x"])]
        query = " ".join(w.upper() if rng.random() < 0.2 else w + rng.choice(["", ".", "()", ","]) for w in picked)
        if i % 10 == 0:
            query = "pangolinzz " + query.split()[0]
        elif i % 7 == 0:  # a token of no word: it counts where it is a substring
            query += " " + rng.choice(["==", "->", "()", ":", "#"])
        node = {"content": chunk, "kind": "file_chunk", "metadata": f'{{"start": {at + 1}}}'}
        got = render.matching_lines(node, query)
        assert got == _matching_lines_unfiltered(node, query), (query, chunk[:200])
        shown += bool(got)
    assert shown > 1000  # most queries hold a word of their chunk: lines were compared, not only ""
