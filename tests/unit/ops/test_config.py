import json

import pytest

from memtree.config import ConfigError, load_config


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_precedence_project_over_global_over_defaults(tmp_path):
    home, proj = tmp_path / "home", tmp_path / "proj"
    g = _write(home / "config.json", {"capture": {"maxBytes": 5000, "filterMinSize": 10}})
    p = _write(proj / ".memtree" / "config.json", {"capture": {"filterMinSize": 99, "bash": False}})
    cfg = load_config(str(proj), str(home))
    assert (cfg.capture.maxBytes, cfg.capture.filterMinSize, cfg.capture.bash) == (5000, 99, False)
    assert cfg.capture.hookTimeoutMs == 100  # untouched default survives the section merge
    assert cfg.sources == [g, p]


def test_no_files_means_defaults(tmp_path):
    cfg = load_config(str(tmp_path / "p"), str(tmp_path / "h"))
    assert cfg.sources == [] and cfg.capture.filterMinSize == 50


@pytest.mark.parametrize(
    "data, needle",
    [
        ({"capture": {"maxBytez": 1}}, "unknown key capture.'maxBytez' (did you mean capture.maxBytes?)"),
        ({"nope": 1}, "unknown key 'nope'"),
        ({"retension": {}}, "unknown key 'retension' (did you mean retention?)"),
        ({"supervisor": {"maxRestarts": -1}}, "supervisor.maxRestarts must be 0 or more, got -1"),
        ({"supervisor": {"heartbeatMs": 0}}, "supervisor.heartbeatMs must be more than 0, got 0"),
        ({"walkers": {"stalenessIntervalMs": -5}}, "walkers.stalenessIntervalMs must be more than 0, got -5"),
        ({"capture": {"maxBytes": "big"}}, 'capture.maxBytes must be a number, got "big"'),
        ({"capture": {"bash": 1}}, "capture.bash must be a boolean, got 1"),
        ({"bash": {"deny": [1]}}, "bash.deny must be a list of strings"),
        ({"retention": 3}, "'retention' must be an object"),
        ("[1, 2]", "top level must be a JSON object"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_config_names_the_key_and_the_file(tmp_path, data, needle):
    f = _write(tmp_path / "p" / ".memtree" / "config.json", data)
    with pytest.raises(ConfigError) as e:
        load_config(str(tmp_path / "p"), str(tmp_path / "h"))
    assert f in str(e.value) and needle in str(e.value)


def test_config_round_trips_to_children(tmp_path):
    from memtree.config import Config

    _write(tmp_path / "h" / "config.json", {"walkers": {"prunerIntervalMs": 1234}})
    cfg = load_config(None, str(tmp_path / "h"))
    assert Config.from_json(cfg.to_json()).walkers.prunerIntervalMs == 1234


def test_an_unknown_key_far_from_any_known_one_gets_no_guess(tmp_path):
    f = _write(tmp_path / "p" / ".memtree" / "config.json", {"capture": {"zzz": 1}})
    with pytest.raises(ConfigError) as e:
        load_config(str(tmp_path / "p"), str(tmp_path / "h"))
    assert str(e.value) == f"{f}: unknown key capture.'zzz'"


def test_zero_is_accepted_where_it_means_something(tmp_path):
    _write(
        tmp_path / "p" / ".memtree" / "config.json",
        {"supervisor": {"maxRestarts": 0, "shutdownTimeoutS": 0}, "capture": {"filterMinSize": 0}},
    )
    cfg = load_config(str(tmp_path / "p"), str(tmp_path / "h"))
    assert (cfg.supervisor.maxRestarts, cfg.supervisor.shutdownTimeoutS, cfg.capture.filterMinSize) == (0, 0, 0)
