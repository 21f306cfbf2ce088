"""Load config: built-in defaults < $MEMTREE_HOME/config.json < <project>/.memtree/config.json.

Sections merge key by key (a project may set only ``capture.bash``); values
inside a section replace whole. Unknown keys and wrong types raise ConfigError
naming the key path and the file.
"""

from __future__ import annotations

import json
import os
from types import MappingProxyType

from memtree.config.defaults import OPEN_SECTIONS, ZERO_OK, defaults
from memtree.errors import ConfigError


class Section:
    """Read-only attribute view of one config section."""

    __slots__ = ("_d",)

    def __init__(self, d: dict):
        object.__setattr__(self, "_d", MappingProxyType(dict(d)))

    def __getattr__(self, name: str):
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("config is read-only")

    def as_dict(self) -> dict:
        return dict(self._d)


class Config:
    """The merged configuration, plus the files it came from."""

    def __init__(self, data: dict, sources: list[str]):
        self.data = data
        self.sources = sources
        for key, value in data.items():
            setattr(self, key, Section(value) if isinstance(value, dict) else value)

    def to_json(self) -> str:
        return json.dumps(self.data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Config:
        return cls(validate(json.loads(text), "<inherited>", defaults()), ["<inherited>"])


def _type_ok(default, value) -> bool:
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, list):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, type(default))


def _type_name(default) -> str:
    if isinstance(default, bool):
        return "a boolean"
    if isinstance(default, (int, float)):
        return "a number"
    if isinstance(default, list):
        return "a list of strings"
    if isinstance(default, dict):
        return "an object"
    return "a string"


def did_you_mean(key: str, known) -> str:
    """`` (did you mean X?)`` for a near miss among ``known``, else ''."""
    import difflib

    close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _range_error(path: str, value) -> str | None:
    """Why a number is out of range, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value < 0 or (value == 0 and path not in ZERO_OK):
        return f"{path} must be {'0 or more' if path in ZERO_OK else 'more than 0'}, got {json.dumps(value)}"
    return None


def validate(data, source: str, base: dict) -> dict:
    """Check ``data`` against the defaults' shape; return ``base`` merged with it."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a JSON object")
    merged = {k: (dict(v) if isinstance(v, dict) else v) for k, v in base.items()}
    schema = defaults()
    for key, value in data.items():
        if key not in schema:
            raise ConfigError(f"{source}: unknown key {key!r}{did_you_mean(key, schema)}")
        default = schema[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: {key!r} must be an object, got {type(value).__name__}")
            if key in OPEN_SECTIONS:
                merged[key].update(value)
                continue
            for sub, subval in value.items():
                if sub not in default:
                    hint = did_you_mean(sub, default)
                    raise ConfigError(
                        f"{source}: unknown key {key}.{sub!r}{hint and hint.replace('mean ', f'mean {key}.')}"
                    )
                if not _type_ok(default[sub], subval):
                    raise ConfigError(
                        f"{source}: {key}.{sub} must be {_type_name(default[sub])}, got {json.dumps(subval)}"
                    )
                if (why := _range_error(f"{key}.{sub}", subval)) is not None:
                    raise ConfigError(f"{source}: {why}")
                merged[key][sub] = subval
        else:
            if not _type_ok(default, value):
                raise ConfigError(f"{source}: {key} must be {_type_name(default)}, got {json.dumps(value)}")
            if (why := _range_error(key, value)) is not None:
                raise ConfigError(f"{source}: {why}")
            merged[key] = value
    return merged


def _read(path: str):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def config_files(project_root: str | None, home: str) -> list[str]:
    files = [os.path.join(home, "config.json")]
    if project_root:
        files.append(os.path.join(project_root, ".memtree", "config.json"))
    return files


def load_config(project_root: str | None, home: str) -> Config:
    merged, sources = defaults(), []
    for path in config_files(project_root, home):
        data = _read(path)
        if data is not None:
            merged = validate(data, path, merged)
            sources.append(path)
    return Config(merged, sources)
