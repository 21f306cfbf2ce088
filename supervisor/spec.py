"""Child specs: which actors the supervisor runs, in start order.

Actors are named by module string, never imported here (imports go one way:
the supervisor never imports actors). A built-in actor whose module cannot be
found is a startup error naming it (a broken install or a move that missed a
module string must not run half a system); only an actor the user added in
``actors`` may be missing, and is skipped with a log line.
"""

from __future__ import annotations

import importlib.util
import json
import logging

from memtree.config.loader import did_you_mean
from memtree.errors import ConfigError
from memtree.runtime.actorenv import FRONT_NAME

log = logging.getLogger(__name__)

PERMANENT, TRANSIENT, TEMPORARY = "permanent", "transient", "temporary"
FRONT = FRONT_NAME


class ChildSpec:
    """One child: OTP's child spec, adapted (restart policy, shutdown timeout, singleton)."""

    __slots__ = ("name", "module", "restart", "shutdown_timeout", "singleton")

    def __init__(
        self, name: str, module: str, restart: str = PERMANENT, shutdown_timeout: float = 5.0, singleton: bool = True
    ):
        self.name, self.module, self.restart = name, module, restart
        self.shutdown_timeout, self.singleton = shutdown_timeout, singleton

    @property
    def is_front(self) -> bool:
        return self.name == FRONT

    def __repr__(self) -> str:
        return f"ChildSpec({self.name!r}, {self.module!r}, {self.restart})"


# Start order: the front first (its SDK import is the slow part and Claude
# Code is waiting), then the writer, then the walkers. Stop is the reverse.
DEFAULT_TABLE = (
    (FRONT, "memtree.actors.mcp_front"),
    ("writer", "memtree.actors.writer"),
    ("walker.filter", "memtree.actors.walkers.filter"),
    ("walker.staleness", "memtree.actors.walkers.staleness"),
    ("walker.pruner", "memtree.actors.walkers.pruner"),
    ("walker.embed", "memtree.actors.walkers.embed"),
    ("walker.dedupe", "memtree.actors.walkers.dedupe"),
    ("walker.summarize", "memtree.actors.walkers.summarize"),
)
BUILT_IN = frozenset(name for name, _ in DEFAULT_TABLE)
_ACTOR_KEYS = {"module": str, "enabled": bool}


def _source_of(name: str, sources: list[str]) -> str:
    """The config file that set ``actors.<name>`` (the last one wins, like the merge)."""
    for path in reversed(sources):
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("actors"), dict) and name in data["actors"]:
            return path
    return ", ".join(sources) or "<defaults>"


def _validated_actors(actors: dict, sources: list[str]) -> dict[str, dict]:
    known = BUILT_IN
    out = {}
    for name, entry in actors.items():
        where = lambda: _source_of(name, sources)  # noqa: E731 - only read on error
        if not isinstance(entry, dict):
            raise ConfigError(
                f'{where()}: actors.{name} must be an object like {{"module": "pkg.mod", "enabled": true}}'
            )
        for key, value in entry.items():
            if key not in _ACTOR_KEYS:
                hint = did_you_mean(key, _ACTOR_KEYS)
                raise ConfigError(
                    f"{where()}: unknown key actors.{name}.{key}{hint.replace('mean ', f'mean actors.{name}.')}"
                )
            if not isinstance(value, _ACTOR_KEYS[key]):
                kind = "a string" if _ACTOR_KEYS[key] is str else "a boolean"
                raise ConfigError(f"{where()}: actors.{name}.{key} must be {kind}, got {json.dumps(value)}")
        if name not in known and "module" not in entry:
            raise ConfigError(f"{where()}: actors.{name}.module is required for an actor not built in")
        if "module" in entry and not entry["module"].strip():
            raise ConfigError(f"{where()}: actors.{name}.module is empty")
        out[name] = entry
    return out


def importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def enabled(config, name: str) -> bool:
    """Whether the config's ``actors`` section leaves actor ``name`` on (the default)."""
    entry = (config.data.get("actors") or {}).get(name)
    return not isinstance(entry, dict) or entry.get("enabled", True) is not False


def child_specs(config, front: bool) -> list[ChildSpec]:
    """The children to run, in start order, after the config's ``actors`` section.

    Raises ConfigError (naming key and file) for a malformed ``actors`` entry.
    """
    overrides = _validated_actors(dict(config.data.get("actors") or {}), list(config.sources))
    table = [(name, module) for name, module in DEFAULT_TABLE]
    table += [(name, entry["module"]) for name, entry in overrides.items() if name not in dict(DEFAULT_TABLE)]
    timeout = float(config.supervisor.shutdownTimeoutS)
    specs = []
    for name, module in table:
        entry = overrides.get(name, {})
        module = entry.get("module", module)
        if name == FRONT and not front:
            continue
        if not enabled(config, name):
            log.info("%s: disabled by config", name)
            continue
        if not importable(module):
            if name in BUILT_IN:
                raise ConfigError(
                    f"built-in actor {name}: module {module} cannot be found"
                    + (
                        f" (set in {_source_of(name, list(config.sources))})"
                        if "module" in entry
                        else " (a broken install?)"
                    )
                )
            log.warning("%s: module %s is not importable, skipped", name, module)
            continue
        specs.append(
            ChildSpec(
                name,
                module,
                # The front's exit ends the session (stdin belonged to it): never restarted.
                restart=TEMPORARY if name == FRONT else PERMANENT,
                shutdown_timeout=timeout,
                singleton=name != FRONT,
            )
        )
    return specs
