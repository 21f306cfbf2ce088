"""The gate: the one versioned set of rules that keeps secrets out of the store.

Three checks, each applied before any byte reaches the database, the FTS
index, an embedding, a log or the spool:

- ``redact_text(text)`` / ``redact_value(value)``: secrets replaced in place
  with ``[REDACTED:<tag>]`` (rules.py holds the rules, one record each;
  engine.py runs them fast; replace.py says what a match becomes).
- ``command_denied(command, extra, deny_globs, base_dir)``: Bash commands whose
  output must not be stored (commands.py).
- ``path_denied(path, extra, base_dir)``: secret files; ``refused_outside``:
  files outside the project (paths.py).

Standard library only; ``re`` makes the gate cost a few ms to import, so the
hook imports it only on its spool path.
"""

from memtree.gate.commands import command_denied
from memtree.gate.engine import redact_text, redact_value
from memtree.gate.paths import allowed_outside, inside, path_denied, refused_outside
from memtree.gate.rules import REDACTION_VERSION

__all__ = [
    "REDACTION_VERSION",
    "redact_text",
    "redact_value",
    "command_denied",
    "path_denied",
    "refused_outside",
    "inside",
    "allowed_outside",
]
