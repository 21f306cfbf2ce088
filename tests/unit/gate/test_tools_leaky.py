"""The leaky fixture through the wrapped tools (read, grep, bash) and a real writer.

Each case's files are written into the project; a Bash case's programs
(kubectl, vault, curl, ...) are shims on PATH that print what the case's
command printed, so the command line runs as written. Then the raw bytes of
the database, WAL, FTS index and logs are scanned as for the hook.
"""

from __future__ import annotations

import os
import stat

from memtree.errors import MemtreeError
from memtree.tools.bash import bash
from memtree.tools.grep import grep
from memtree.tools.read import read
from tests.support import leak_scan
from tests.support.leaky_cases import SHIMMED, load_cases, write_files

SHIM = """#!/bin/sh
cat "{dir}/out"
cat "{dir}/err" >&2
"""


def _shims(tmp_path) -> str:
    folder = str(tmp_path / "shims")
    os.makedirs(folder)
    for name in SHIMMED:
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(SHIM.format(dir=folder))
        os.chmod(path, stat.S_IRWXU)
    return folder


def _run(h, case, shim_dir) -> str:
    w = case["wrapped"]
    try:
        if w["tool"] == "read":
            return h.run(read, w["path"], budget_tokens=20000)
        if w["tool"] == "grep":
            return h.run(grep, w["pattern"], path=w.get("path"), context=w.get("context"), budget_tokens=20000)
        for name in ("out", "err"):
            with open(os.path.join(shim_dir, name), "w", encoding="utf-8") as f:
                f.write(w["shim_" + name])
        return h.run(bash, w["command"], budget_tokens=20000)
    except MemtreeError as e:  # a refused secret file: nothing stored
        return f"error: {e}"


def test_leaky_cases_through_the_wrapped_tools_store_no_secret(h, tmp_path, monkeypatch):
    cases = [c for c in load_cases(h.root) if c.get("wrapped")]
    assert len(cases) >= 80
    write_files(h.root, cases)
    shim_dir = _shims(tmp_path)
    monkeypatch.setenv("PATH", shim_dir + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("API_KEY", "set-for-the-echo-case")  # benign_env_var_echo_name prints whether it is set
    seen = {c["name"]: _run(h, c, shim_dir) for c in cases}
    # Positive control: the agent saw most secrets (the shims and files worked), so a clean disk means something.
    shown = {c["name"] for c in cases if c["secrets"] and any(s in seen[c["name"]] for s in c["secrets"])}
    assert len(shown) >= 40, sorted(set(seen) - shown)
    secrets = {s for c in cases for s in c["secrets"]}
    files = leak_scan.files_under(h.paths.store_dir, h.paths.run_dir)
    assert any(f.endswith("store.db") for f in files)
    leaked = set(leak_scan.leaks_in_files(files, secrets)) | leak_scan.leaks_in_fts(h.paths.db, secrets)
    text = leak_scan.stored_text(h.paths.db)
    bad = leak_scan.case_report(cases, leaked, text, None)
    benign = [c for c in cases if (c["cls"] in (7, 12) or c["name"].startswith("benign_")) and c["expect"] == "stored"]
    assert len(benign) >= 20 and sum(len(c["keep"]) for c in benign) >= 50
    lost = {c["name"]: [k for k in c["keep"] if k not in text] for c in benign}
    print("wrapped:", leak_scan.summary(cases, bad))
    assert bad == {}
    assert {n: v for n, v in lost.items() if v} == {}
