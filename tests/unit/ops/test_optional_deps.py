"""A walker whose optional dependency cannot be imported idles with the reason; it never crash-loops.

The failing import is real: a directory on PYTHONPATH (outside the project,
which the supervisor would drop) holds a ``numpy.py`` that raises ImportError,
as an environment without numpy would.
"""

import json

from tests.support import deadline, wait_until

SHIM = 'raise ImportError("No module named numpy (test shim)")\n'


def _without_numpy(s, tmp_path) -> None:
    shim = tmp_path / "no-numpy"
    shim.mkdir()
    (shim / "numpy.py").write_text(SHIM)
    s.env["PYTHONPATH"] = f"{shim}:{s.env['PYTHONPATH']}"


def test_without_numpy_dedupe_and_embed_idle_with_the_reason_and_the_rest_runs(system_factory, tmp_path):
    s = system_factory
    _without_numpy(s, tmp_path)
    s.write_config({"walkers": {"dedupeIntervalMs": 200}})
    s.serve()
    actors = {a["name"]: a for a in s.wait_running()}
    idle = {n: a["info"]["idle"] for n, a in actors.items() if "idle" in (a["info"] or {})}
    assert set(idle) == {"walker.dedupe", "walker.embed"}, idle
    assert all("numpy" in why for why in idle.values()), idle
    pid = actors["walker.dedupe"]["pid"]
    # Five dedupe intervals later it is the same process, never restarted.
    later = wait_until(
        lambda: (a := s.actor("walker.dedupe")) and a["uptime_s"] >= 1.0 and a,
        timeout=deadline(30),
        what="walker.dedupe up for 1 s",
    )
    assert (later["state"], later["pid"], later["restarts"]) == ("RUNNING", pid, 0), later
    assert {a["name"] for a in s.status() if a["restarts"]} == set()
    table = s.ctl("status")
    assert table.returncode == 0, table.stderr
    noted = {line.split()[0] for line in table.stdout.splitlines() if "idle=" in line and "numpy" in line}
    assert noted == {"walker.dedupe", "walker.embed"}, table.stdout


def test_with_numpy_importable_no_walker_is_idle(system_factory):
    """The positive control: the same system with numpy has no idle walker."""
    s = system_factory
    s.write_config({"walkers": {"dedupeIntervalMs": 200}})
    s.serve()
    actors = s.wait_running()
    assert {a["name"] for a in actors if "idle" in (a["info"] or {})} == set()
    assert json.dumps([a["info"] for a in actors]).count("numpy") == 0
