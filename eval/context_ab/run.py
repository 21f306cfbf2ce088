"""Context A/B through the real Claude Code CLI: what each way of reading adds to the context.

    .venv/bin/python -m memtree.eval.context_ab.run [--arms a,b,...] [--out DIR]

Arms (eval/context_ab/arms.py): native whole-file reads; native targeted
offset/limit reads; native tools with memtree installed (capture + rewrite);
memtree's tools; two sessions (session 2 asks what session 1 explored), each
with its native counterpart. Figures come from the fake API's request log,
every count by memtree.tokens (one counter):
- added: sum over main-loop requests of (request tokens - the fixed prompt,
  i.e. the native whole-file arm's first request), so memtree's own tool
  definitions, instructions and brief count against it;
- input: sum of request tokens; last: the last request; defs: tool
  definitions per request; results: tool-result tokens in the last request;
- facts: each needed string seen by the model, else one named call away
  (a listed line range or a named memtree node holds it), else missing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile

from memtree import tokens
from memtree.eval import sdists
from memtree.eval.context_ab import arms, cli

ALL_ARMS = ("native-whole", "native-targeted", "memtree-installed", "memtree-tools", "two-session")


def sdist() -> str:
    """click's sdist from PyPI (pip, the ordinary client), cached outside the repo."""
    cache = os.path.expanduser("~/.cache/memtree-context-ab")
    return sdists.download(arms.PACKAGE, arms.VERSION, cache, timeout=300)


def make_project(work: str, name: str) -> str:
    with tarfile.open(sdist()) as tar:
        tar.extractall(os.path.join(work, name), filter="data")
    proj = os.path.join(work, name, f"{arms.PACKAGE}-{arms.VERSION}")
    git = ["git", "-c", "user.name=ab", "-c", "user.email=ab@localhost"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "sdist"]):
        subprocess.run(git + cmd, cwd=proj, check=True, capture_output=True)
    return proj


CONFIG: dict = {}  # --config: the memtree arms' project config (e.g. capture thresholds)


def install(proj: str) -> None:
    # --shared: the project's own files, which the isolated CLI reads (the default
    # would file the server in this machine's ~/.claude.json).
    subprocess.run(
        [sys.executable, "-P", "-m", "memtree.cli", "install", "--project", proj, "--shared"],
        check=True,
        capture_output=True,
    )
    if CONFIG:
        os.makedirs(os.path.join(proj, ".memtree"), exist_ok=True)
        with open(os.path.join(proj, ".memtree", "config.json"), "w") as f:
            json.dump(CONFIG, f)


def shutdown(proj: str, env: dict) -> None:
    subprocess.run(
        [sys.executable, "-P", "-m", "memtree.cli", "ctl", "shutdown"],
        cwd=proj,
        env={**os.environ, **env},
        capture_output=True,
        timeout=60,
    )


# -- measuring -------------------------------------------------------------------------------


def request_tokens(body: dict) -> int:
    return sum(tokens.count(json.dumps(body.get(k) or [], ensure_ascii=False)) for k in ("system", "tools", "messages"))


def seen_texts(body: dict) -> list[str]:
    """What the model read in the conversation: tool results, user texts, mid-conversation system text."""
    out = [t for _n, t, _e in cli.tool_results(body)]
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            out.append(c)
        for b in c if isinstance(c, list) else []:
            if isinstance(b, dict) and b.get("type") == "text":
                out.append(b.get("text", ""))
    return out


def _line_of(proj: str, rel: str, needle: str) -> int:
    with open(os.path.join(proj, rel), encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if needle in line:
                return i
    return 0


def _stored(db: str | None, node: str) -> str:
    if not db or not os.path.isfile(db):
        return ""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT content FROM nodes WHERE id = ?", (node,)).fetchone()  # any status: audit view
    finally:
        conn.close()
    return row[0] if row else ""


def fact_status(texts: list[str], proj: str, rel: str, needle: str, db: str | None) -> str:
    if any(needle in t for t in texts):
        return "seen"
    line, base = _line_of(proj, rel, needle), os.path.basename(rel)
    for t in texts:
        if base not in t and rel not in t:
            continue
        starts = sorted(int(x) for x in re.findall(r"\bL(\d+)\b", t))
        for a, b in re.findall(r"\bL(\d+)-(\d+)", t):
            if int(a) <= line <= int(b) and int(b) - int(a) < 300:
                return "1 call"
        if any(s <= line < nxt and nxt - s < 300 for s, nxt in zip(starts, starts[1:])):
            return "1 call"
    for t in texts:
        for node in re.findall(r"(?:memtree node |memtree recall ids=)(\w{26})", t):
            if needle in _stored(db, node):
                return "1 call"
    return "missing"


def measure(bodies: list[dict], fixed: int, proj: str, db: str | None) -> dict:
    sizes = [request_tokens(b) for b in bodies]
    last = bodies[-1] if bodies else {}
    texts = seen_texts(last)
    return {
        "requests": len(bodies),
        "added": sum(s - fixed for s in sizes),
        "input": sum(sizes),
        "first": sizes[0] if sizes else 0,
        "last": sizes[-1] if sizes else 0,
        "defs": tokens.count(json.dumps(last.get("tools") or [], ensure_ascii=False)),
        "results": sum(tokens.count(t) for _n, t, _e in cli.tool_results(last)),
        "errors": sum(1 for _n, _t, e in cli.tool_results(last) if e),
        "rewritten": sum(1 for _n, t, _e in cli.tool_results(last) if "[memtree]" in t[:400]),
        "facts": {name: fact_status(texts, proj, rel, needle, db) for name, (rel, needle) in arms.FACTS.items()},
    }


# -- running ---------------------------------------------------------------------------------


def _db(proj: str, home: str) -> str | None:
    done = subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            "import sys; from memtree import paths as p; print(p.paths_for_cwd(sys.argv[1]).db)",
            proj,
        ],
        env={**os.environ, "MEMTREE_HOME": home},
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or None


def session(
    claude: str,
    work: str,
    name: str,
    turns,
    memtree: bool,
    allowed: str,
    proj: str | None = None,
    home: str | None = None,
) -> tuple[list[dict], str, str | None]:
    proj = proj or make_project(work, name)
    env = {}
    if memtree:
        home = home or os.path.join(work, name, "memtree-home")
        env["MEMTREE_HOME"] = home
        install(proj)
    try:
        log = cli.run(claude, proj, arms.script(turns), os.path.join(work, name, "run"), allowed=allowed, env=env)
    finally:
        if memtree:
            shutdown(proj, env)
    return cli.main_requests(log), proj, (_db(proj, home) if memtree else None)


def run(selected, work: str) -> dict:
    claude, why = cli.find_claude(install=True)
    if claude is None:
        raise SystemExit(f"context A/B needs the real Claude Code CLI: {why}")
    native, with_mt = "Read Grep Bash", "Read Grep Bash mcp__memtree"
    results, fixed = {}, None
    bodies, proj, _ = session(claude, work, "native-whole", arms.NATIVE_WHOLE, False, native)
    fixed = request_tokens(bodies[0])
    results["native-whole"] = measure(bodies, fixed, proj, None)
    plan = {
        "native-targeted": (arms.NATIVE_TARGETED, False, native),
        "memtree-installed": (arms.INSTALLED, True, with_mt),
        "memtree-tools": (arms.MEMTREE_TOOLS, True, with_mt),
    }
    for name, (turns, mt, allowed) in plan.items():
        if name in selected:
            bodies, proj, db = session(claude, work, name, turns, mt, allowed)
            results[name] = measure(bodies, fixed, proj, db)
    if "two-session" in selected:
        # session 1 explores with memtree installed; session 2 asks again in a new session.
        _b, proj, db = session(claude, work, "two-session", arms.INSTALLED, True, with_mt)
        home = os.path.join(work, "two-session", "memtree-home")
        bodies, proj, db = session(
            claude, work, "two-session-2", arms.SESSION2_MEMTREE, True, with_mt, proj=proj, home=home
        )
        results["session 2, memtree"] = measure(bodies, fixed, proj, db)
        results["session 2, native"] = dict(results["native-whole"])  # native has no memory: it explores again
    return {"fixed_prompt": fixed, "arms": results}


def table(report: dict) -> str:
    arms_ = report["arms"]
    base = arms_["native-whole"]["added"]
    targeted = arms_.get("native-targeted", {}).get("added")
    rows = [
        f"fixed prompt (native whole-file arm, first request): {report['fixed_prompt']:,} tokens",
        f"{'arm':<22}{'reqs':>5}{'added':>9}{'vs whole':>9}{'vs targ':>9}{'input':>10}{'last':>8}"
        f"{'defs':>7}{'results':>8}  facts (seen / 1 call / missing)",
    ]
    for name, m in arms_.items():
        facts = list(m["facts"].values())
        vs_t = f"{100 * (m['added'] - targeted) / targeted:+.0f}%" if targeted else "-"
        rows.append(
            f"{name:<22}{m['requests']:>5}{m['added']:>9,}{100 * (m['added'] - base) / base:>+8.0f}%"
            f"{vs_t:>9}{m['input']:>10,}{m['last']:>8,}{m['defs']:>7,}{m['results']:>8,}  "
            f"{facts.count('seen')} / {facts.count('1 call')} / {facts.count('missing')}"
            + (f"  errors={m['errors']}" if m["errors"] else "")
            + (f"  previews={m['rewritten']}" if m.get("rewritten") else "")
        )
    if "session 2, memtree" in arms_:
        s2, s2n = arms_["session 2, memtree"]["added"], arms_["session 2, native"]["added"]
        rows.append(f"session 2: memtree {s2:,} vs native {s2n:,} added tokens ({100 * (s2 - s2n) / s2n:+.0f}%)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="context_ab")
    p.add_argument("--arms", default=",".join(ALL_ARMS))
    p.add_argument("--out", help="keep the run directories and report.json here")
    p.add_argument(
        "--config",
        default="{}",
        help='JSON project config for the memtree arms, e.g. \'{"capture": {"previewTokens": 600}}\'',
    )
    args = p.parse_args(argv)
    CONFIG.update(json.loads(args.config))
    selected = set(args.arms.split(","))
    work = args.out or tempfile.mkdtemp(prefix="context-ab-")
    os.makedirs(work, exist_ok=True)
    try:
        report = run(selected, work)
        with open(os.path.join(work, "report.json"), "w") as f:
            json.dump(report, f, indent=2)
        print(table(report))
        for name, m in report["arms"].items():
            print(f"  {name}: " + ", ".join(f"{k}={v}" for k, v in m["facts"].items()))
    finally:
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
