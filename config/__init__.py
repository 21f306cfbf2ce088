"""Configuration: built-in defaults, the schema they imply, and the loader.

The loader is imported on first use: the capture hook reads only
``memtree.config.defaults`` (a plain dict) and must not pay for ``json``.
"""

__all__ = ["Config", "ConfigError", "load_config"]


def __getattr__(name: str):
    if name in __all__:
        from memtree.config import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'memtree.config' has no attribute {name!r}")
