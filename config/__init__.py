"""Configuration: built-in defaults, the schema they imply, and the loader."""

from memtree.config.loader import Config, ConfigError, load_config

__all__ = ["Config", "ConfigError", "load_config"]
