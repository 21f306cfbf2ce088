"""What the supervisor hands every child: the actor's context, through its environment.

Standard library only (plus the config loader): the supervisor builds this
before it spawns the front, and must not pay for zmq first.
"""

from __future__ import annotations

import os

from memtree.config import Config
from memtree.paths import StorePaths

FRONT_NAME = "mcp"  # the MCP front: one per session, never a singleton

ENV_NAME = "MEMTREE_ACTOR_NAME"
ENV_PROJECT_ROOT = "MEMTREE_PROJECT_ROOT"
ENV_PROJECT_HASH = "MEMTREE_PROJECT_HASH"
ENV_STORE_DIR = "MEMTREE_STORE_DIR"
ENV_RUN_DIR = "MEMTREE_RUN_DIR"
ENV_SUP_HB = "MEMTREE_SUP_HB"  # the supervisor's heartbeat endpoint
ENV_CONFIG = "MEMTREE_CONFIG_JSON"  # the merged config, resolved once by the supervisor


class ActorContext:
    """What the supervisor hands every child through its environment."""

    def __init__(self, name: str, paths: StorePaths, config: Config, hb_endpoint: str | None):
        self.name = name
        self.paths = paths
        self.config = config
        self.hb_endpoint = hb_endpoint

    @classmethod
    def from_env(cls, default_name: str) -> ActorContext:
        from memtree.runtime.pythonpath import restore_user_pythonpath

        restore_user_pythonpath()  # the supervisor cleaned ours; commands run for the user get theirs back
        env = os.environ
        paths = StorePaths(env[ENV_PROJECT_ROOT], env[ENV_PROJECT_HASH], env[ENV_STORE_DIR], env[ENV_RUN_DIR])
        config = Config.from_json(env.get(ENV_CONFIG) or "{}")
        return cls(env.get(ENV_NAME, default_name), paths, config, env.get(ENV_SUP_HB))

    def child_env(self) -> dict[str, str]:
        """The environment variables that recreate this context in a child."""
        p = self.paths
        env = {
            ENV_NAME: self.name,
            ENV_PROJECT_ROOT: p.project_root,
            ENV_PROJECT_HASH: p.project_hash,
            ENV_STORE_DIR: p.store_dir,
            ENV_RUN_DIR: p.run_dir,
            ENV_CONFIG: self.config.to_json(),
        }
        if self.hb_endpoint:
            env[ENV_SUP_HB] = self.hb_endpoint
        return env
