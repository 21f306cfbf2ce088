"""Redaction throughput (memtree/gate), KB per ms, per kind of input, now vs
the rules as they were at a baseline commit, measured interleaved in the same run.

The baseline is the gate at ``--before`` (default: the last commit before the
prefilter rework, whose gate was the one file memtree/redact.py) checked out
from git into a temporary package; without git (an installed copy) only the
current figures are printed.

    .venv/bin/python -m memtree.eval.bench_redact [--runs 7] [--before REV]
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from memtree import gate
from memtree.eval.stats import summary

BASELINE = "ab8fc07"  # main before the prefilter rework of redact.py
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(gate.__file__))))


def _inputs() -> dict[str, str]:
    """Realistic large tool outputs, deterministic: memtree's own code, a service
    log, pretty JSON, a dense 1 MB base64 blob on one line, PEM-width base64,
    base64 of source text (it decodes to printable text, so it is re-checked),
    and a 1 MB line of words with secret-ish names and no secrets."""
    r = random.Random(11)
    src = "".join(
        open(os.path.join(_ROOT, "memtree", f), encoding="utf-8").read()
        for f in sorted(os.listdir(os.path.join(_ROOT, "memtree")))
        if f.endswith(".py")
    )
    log = "".join(
        f"2026-11-30T12:{i % 60:02d}:{i % 59:02d}Z INFO worker[{i % 7}] request id={i:08x} "
        f"path=/api/v1/items/{i} status={200 if i % 13 else 500} took={i % 300}ms user=alice "
        f"token_count={i % 50} cache_key=items:{i}\n"
        for i in range(2500)
    )
    js = json.dumps(
        [
            {
                "id": i,
                "name": f"item{i}",
                "tags": ["a", "b"],
                "key": f"k{i}",
                "password_hint": None,
                "value": i * 3.5,
                "url": f"https://example.com/x/{i}",
                "sha": f"{r.getrandbits(160):040x}",
            }
            for i in range(1200)
        ],
        indent=2,
    )
    blob = base64.b64encode(r.randbytes(750_000)).decode()
    wrapped = base64.b64encode(r.randbytes(150_000)).decode()
    text = (src * 8)[:750_000].encode()
    words = ["alpha", "beta", "x=1", "foo(bar)", "key", "token", "pass", "auth:", "--user", "https://a.b/c"]
    return {
        "code": (src * 2)[:200_000],
        "log": log,
        "json": js,
        "base64 1 MB line": blob,
        "base64 PEM width": "\n".join(wrapped[i : i + 64] for i in range(0, len(wrapped), 64)),
        "base64 of text": base64.b64encode(text).decode(),
        "1 MB line": " ".join(r.choice(words) for _ in range(120_000)),
    }


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", _ROOT, *args], capture_output=True, check=True, timeout=30).stdout


def _baseline(rev: str):
    """The redaction code as it was at ``rev``, loaded under another name: the
    memtree/gate package (its imports of itself renamed), or before the gate
    split memtree/redact.py. None without git or when ``rev`` holds neither."""
    try:
        files = _git("ls-tree", "--name-only", f"{rev}:memtree/gate").decode().split()
    except (OSError, subprocess.SubprocessError):
        files = []
    if "__init__.py" in files:
        name = "gate_baseline_" + "".join(c for c in rev if c.isalnum())
        tmp = tempfile.mkdtemp(prefix="bench_redact_")
        os.mkdir(os.path.join(tmp, name))
        for f in files:
            if f.endswith(".py"):
                src = _git("show", f"{rev}:memtree/gate/{f}").replace(b"memtree.gate", name.encode())
                with open(os.path.join(tmp, name, f), "wb") as out:
                    out.write(src)
        sys.path.insert(0, tmp)
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(tmp)
            shutil.rmtree(tmp, ignore_errors=True)
    try:
        src = _git("show", f"{rev}:memtree/redact.py")
    except (OSError, subprocess.SubprocessError):
        return None
    tmp = tempfile.NamedTemporaryFile("wb", suffix=".py", delete=False)
    with tmp:
        tmp.write(src)
    try:
        spec = importlib.util.spec_from_file_location("redact_baseline", tmp.name)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        os.unlink(tmp.name)
    return mod


def _kbms(samples: list[float], size: int) -> tuple[float, float]:
    """(median, p95) in KB/ms; p95 is the slow tail, so the 95th percentile of time."""
    st = summary(samples)
    return size / 1024 / (st["median"] * 1000), size / 1024 / (st["p95"] * 1000)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--before", default=BASELINE, help="git revision whose gate (or memtree/redact.py) is the baseline")
    args = ap.parse_args(argv)
    old = _baseline(args.before)
    impls = [("now", gate)] + ([(f"before ({args.before})", old)] if old else [])
    if not old:
        print(f"baseline {args.before}: not available (no git checkout, or no gate at it); current figures only")
    inputs = _inputs()
    warm = "password=abc123def456 token: xyzzy1234567890abcdef ghp_x sk- AKIA eyJ key || ${ :// bearer"
    for _, mod in impls:
        mod.redact_text(warm)  # compile the lazy rules outside the timing
    print(f"redaction throughput, KB/ms (higher is better), {args.runs} runs each, interleaved")
    print(
        f"{'input':18s} {'KB':>6s}  "
        + "  ".join(f"{name:>24s}" for name, _ in impls)
        + ("   speed-up (median)" if old else "")
    )
    for kind, text in inputs.items():
        times: dict[str, list[float]] = {name: [] for name, _ in impls}
        outs = {}
        for _ in range(args.runs):
            for name, mod in impls:
                t0 = time.perf_counter()
                outs[name] = mod.redact_text(text)
                times[name].append(time.perf_counter() - t0)
        cells, med = [], {}
        for name, _ in impls:
            m, p = _kbms(times[name], len(text))
            med[name] = m
            cells.append(f"med {m:6.2f} p95 {p:6.2f}".rjust(24))
        line = f"{kind:18s} {len(text) / 1024:6.0f}  " + "  ".join(cells)
        if old:
            names = [n for n, _ in impls]
            same = "same output" if outs[names[0]] == outs[names[1]] else "OUTPUT DIFFERS"
            line += f"   x{med[names[0]] / med[names[1]]:.2f} ({same})"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
