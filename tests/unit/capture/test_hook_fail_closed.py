"""A config the hook cannot read fails closed: nothing stored or spooled, said once in hook.log, shown in ctl status."""

from __future__ import annotations

import json
import os

from tests.support import COLD_START_S, wait_until
from tests.support.hook_support import bash_payload, contents, run_hook


def _hook_log(system) -> list[str]:
    try:
        with open(os.path.join(system.paths.log_dir, "hook.log"), encoding="utf-8") as f:
            return [line for line in f if "config unreadable" in line]
    except FileNotFoundError:
        return []


def test_a_broken_config_stores_nothing_says_so_once_and_recovers_when_fixed(system):
    config = os.path.join(system.project, ".memtree", "config.json")
    with open(config, encoding="utf-8") as f:
        good = f.read()
    run_hook(system, bash_payload(system, 1, extra="before the typo"), MEMTREE_HOOK_TIMEOUT_MS="10000")
    assert len(contents(system, "%before the typo%")) == 1  # positive control

    with open(config, "w", encoding="utf-8") as f:
        f.write(good[:-1] + ',\n  "path": {"deny": ["private/**"]\n')  # a typo: the object never closes
    run_hook(system, bash_payload(system, 2, extra="during the typo, writer up"), MEMTREE_HOOK_TIMEOUT_MS="10000")
    assert system.ctl("stop", "writer").returncode == 0
    run_hook(system, bash_payload(system, 3, extra="during the typo, writer down"))
    assert not os.path.exists(system.paths.spool) or "during the typo" not in open(system.paths.spool).read()
    assert len(_hook_log(system)) == 1  # said once, not per capture
    status = system.ctl("status")
    assert "hook: capturing nothing, config unreadable" in status.stdout and "not valid JSON" in status.stdout
    assert json.loads(system.ctl("status", "--json").stdout)["hook_config_error"].endswith(")")
    assert system.ctl("start", "writer").returncode == 0

    with open(config, "w", encoding="utf-8") as f:
        f.write(good)
    os.utime(config, ns=(1, 1))  # same size as before the typo: make sure the signature differs
    run_hook(system, bash_payload(system, 4, extra="after the fix"), MEMTREE_HOOK_TIMEOUT_MS="10000")
    wait_until(lambda: contents(system, "%after the fix%"), timeout=COLD_START_S, what="the capture after the fix")
    assert contents(system, "%during the typo%") == {}
    assert "config unreadable" not in system.ctl("status").stdout
