"""The capture settings, read one way by the hook, the gate and the writer,
with the built-in defaults of memtree.config.defaults.

The config gate fails closed.

The hook reads the config files without a JSON parser on its fast path
(``json`` imports ``re``, ~20 ms). Whether the files are usable is cached as
their signature (path, mtime, size) in ``<store>/hook-config.ok``, written
by the supervisor after it validated the config and by the hook after it
parsed them itself (once per change). A file that cannot be read or parsed
makes the hook store nothing, not even to the spool (the user's deny rules
are unknown), say so once in hook.log, and leave the reason in
``<store>/hook-config.error`` for ``memtree ctl status``.

``get``/``section`` read a value from a loaded Config or from the plain
sections the hook parsed itself (``sections``), so the ingest plan and the
rewrite see the same settings in the hook and in the writer.

Standard library only (``os``, and ``json`` off the fast path); the hook
imports it on every run.
"""

import os

from memtree.config.defaults import defaults

# The sections a capture reads: what the hook needs to plan and gate on its own.
CAPTURE_SECTIONS = ("capture", "bash", "path")
ENV_TIMEOUT = "MEMTREE_HOOK_TIMEOUT_MS"  # overrides capture.hookTimeoutMs (tests, benches)

CONFIG_OK = "hook-config.ok"  # in the store dir: the signature of config files last parsed fine
CONFIG_ERROR = "hook-config.error"  # in the store dir: why the hook captures nothing (ctl status shows it)


def config_texts(project_root: str, home: str) -> tuple[list[str], str]:
    """The global then the project config file's text (missing files skipped),
    and their signature (path, mtime, size) for the validity cache."""
    texts, sig = [], []
    for path in (os.path.join(home, "config.json"), os.path.join(project_root, ".memtree", "config.json")):
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                data = f.read()
        except FileNotFoundError:
            continue
        except OSError as e:
            data, st = None, None
            sig.append(f"{path}:unreadable:{e.errno}")
            texts.append(None)
            continue
        sig.append(f"{path}:{st.st_mtime_ns}:{st.st_size}")
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:
            texts.append(None)
    return texts, "\n".join(sig)


def _config_problem(texts: list, paths_list: list[str]) -> str | None:
    """Why the config cannot be used, or None: the loader's own validation
    (memtree.config.loader), so the hook refuses exactly what ``memtree
    serve`` refuses (slow path: runs once per change)."""
    import json

    from memtree.config.loader import ConfigError, validate

    merged = defaults()
    for text, path in zip(texts, paths_list):
        if text is None:
            return f"{path}: cannot be read as UTF-8 text"
        try:
            data = json.loads(text)
        except ValueError as e:
            return f"{path}: not valid JSON ({e.msg} at line {e.lineno})"
        try:
            merged = validate(data, path, merged)
        except ConfigError as e:
            return str(e)
    return None


def hook_timeout_ms(texts: list) -> float:
    """How long the hook waits for the writer's ack: $MEMTREE_HOOK_TIMEOUT_MS,
    else capture.hookTimeoutMs (project over global), else the default. Found
    without a JSON parser (the key name is unique in the schema)."""
    candidates = [os.environ.get(ENV_TIMEOUT)]
    for text in reversed([t for t in texts if t]):
        at = text.find('"hookTimeoutMs"')
        if at >= 0:
            rest = text[at + len('"hookTimeoutMs"') :].lstrip()
            if rest.startswith(":"):
                rest = rest[1:].lstrip()
                n = 0
                while n < len(rest) and (rest[n].isdigit() or rest[n] == "."):
                    n += 1
                candidates.append(rest[:n])
    for value in candidates:
        try:
            if value and float(value) > 0:
                return float(value)
        except ValueError:
            pass
    return float(defaults()["capture"]["hookTimeoutMs"])


def sections(texts: list) -> dict:
    """The capture sections of the config files, merged over the defaults
    (project over global): what the hook plans with when it spools. The files
    passed ``usable`` before."""
    import json

    merged = {name: dict(defaults()[name]) for name in CAPTURE_SECTIONS}
    for text in [t for t in texts if t]:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict):
            for name in CAPTURE_SECTIONS:
                if isinstance(data.get(name), dict):
                    merged[name].update(data[name])
    return merged


def section(config, name: str) -> dict:
    """One section as a dict, defaults filled in, from a loaded Config, a dict
    of sections (``sections``) or None (the defaults)."""
    base = dict(defaults()[name])
    if config is None:
        return base
    sec = config.get(name) if isinstance(config, dict) else getattr(config, name, None)
    if sec is not None and not isinstance(sec, dict):
        sec = sec.as_dict()
    base.update(sec or {})
    return base


def get(config, name: str, key: str):
    """One value (see ``section``)."""
    return section(config, name)[key]


def usable(paths, texts: list, sig: str, log) -> bool:
    """Whether the config can be used. A file that cannot be read fails closed:
    the hook then stores nothing (not even to the spool), says so once in
    hook.log and leaves the reason for ``memtree ctl status``."""
    ok_path = os.path.join(paths.store_dir, CONFIG_OK)
    err_path = os.path.join(paths.store_dir, CONFIG_ERROR)
    try:
        with open(ok_path, encoding="utf-8") as f:
            if f.read() == sig:
                return True
    except OSError:
        pass
    names = [line.rsplit(":", 2)[0] for line in sig.split("\n") if line]
    problem = _config_problem(texts, names)
    try:
        os.makedirs(paths.store_dir, mode=0o700, exist_ok=True)
        if problem is None:
            _write(ok_path, sig)
            if os.path.exists(err_path):
                os.unlink(err_path)
            return True
        try:
            with open(err_path, encoding="utf-8") as f:
                known = f.read() == problem
        except OSError:
            known = False
        if not known:
            _write(err_path, problem)
            log(f"config unreadable, capturing nothing until it is fixed: {problem}")
    except OSError:
        pass
    return problem is None


def _write(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8", "replace"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def mark_ok(paths, sig: str) -> None:
    """The supervisor validated the config files with signature ``sig`` (taken
    before it loaded them): the hook's fast path may trust them."""
    try:
        os.makedirs(paths.store_dir, mode=0o700, exist_ok=True)
        _write(os.path.join(paths.store_dir, CONFIG_OK), sig)
        err = os.path.join(paths.store_dir, CONFIG_ERROR)
        if os.path.exists(err):
            os.unlink(err)
    except OSError:
        pass
