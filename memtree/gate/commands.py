"""Command denial: Bash commands whose output must not be stored.

``command_denied(command, extra, deny_globs, base_dir)`` names why, or None:
- environment dumps (``env``, ``printenv``, ``set``, ``export -p``,
  ``declare -x``, ...) even behind wrappers (``bash -c 'env'``, ``(env)``,
  ``sudo env``, ``x; env``, ``env | sort``). ``env FOO=1 make`` runs a program
  with a changed environment and prints nothing of it, so it is allowed (the
  program after the assignments is checked in turn: ``env A=1 printenv`` is
  denied), and the environment printed through indirection (``$(which env)``,
  aliases);
- commands whose output is a credential, by shape (``kubectl get secret -o``,
  ``vault kv get``, ``terraform output``, ``heroku config``, ``gh auth token``, ...);
- commands naming a secret file (memtree/gate/paths.py).

Standard library only.
"""

from __future__ import annotations

import os
import re
import shlex

from memtree.gate.lazy import Lazy
from memtree.gate.paths import path_denied

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "busybox"}
# Prefixes that run the rest of the words as a command.
_WRAPPERS = {
    "sudo",
    "doas",
    "command",
    "builtin",
    "exec",
    "nohup",
    "time",
    "nice",
    "ionice",
    "stdbuf",
    "timeout",
    "xargs",
    "watch",
    "strace",
    "chroot",
    "unbuffer",
    "then",
    "do",
    "else",
    "!",
    "{",
    "}",
    "if",
    "while",
    "until",
}
# Wrapper options that take the next word as their value.
_WRAPPER_ARGS = {
    "sudo": "ugCDhprtU",
    "doas": "uC",
    "xargs": "InLPdEsa",
    "nice": "n",
    "ionice": "cnpt",
    "timeout": "sk",
    "watch": "nd",
    "strace": "oepsuE",
    "stdbuf": "ioe",
}
_SPLIT = Lazy(r"\|\||&&|[;|&\n(){}`]|\$\(")
_ENV_READERS = Lazy(
    r"/proc/(?:self|\d+|\$\$|\*)/environ|\bos\.environ\b(?!\s*(?:\[|\.get|\.setdefault|\.pop))|"
    r"(?<!\}\s=\s)(?<!\}=\s)(?<!\}\s=)(?<!\}=)\bprocess\.env\b(?!\s*(?:\.|\[))|\bENV\.(?:to_h|inspect)\b|%ENV\b(?!\s*\{)"
)


def _segments(command: str) -> list[list[str]]:
    """The simple commands in ``command``, as word lists, split at shell
    operators outside quotes. Newlines and backticks count as separators (an
    over-approximation inside quotes only ever denies more)."""
    text = command.replace("\n", " ; ").replace("`", " ; ")
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:  # unbalanced quotes: split on operators regardless of quoting
        return [seg.split() for seg in _SPLIT.rx().split(command)]
    out, cur = [], []
    for tok in tokens:
        if tok and all(c in "();<>|&" for c in tok) or tok == "$":
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(tok)
    if cur:
        out.append(cur)
    return out


# Commands whose output is a credential, by shape: program -> word sets; the first set
# whose words all appear among its arguments (in any order) names the command.
# Value-level redaction catches labelled values; these print bare ones (a token, a
# decoded secret).
_CREDENTIAL_COMMANDS = {
    "kubectl": (
        ("get", "secret", "-o"),
        ("get", "secrets", "-o"),
        ("get", "secret", "--output"),
        ("config", "view", "--raw"),
        ("create", "token"),
    ),
    "vault": (("kv", "get"), ("read",), ("login",), ("token", "create"), ("write",)),
    "terraform": (("output",), ("show", "-json"), ("state", "pull"), ("state", "show")),
    "heroku": (("config",), ("config:get",), ("auth:token",), ("authorizations:create",)),
    "gh": (("auth", "token"), ("auth", "status", "--show-token"), ("auth", "status", "-t")),
    "aws": (
        ("configure", "get"),
        ("configure", "export-credentials"),
        ("get-login-password",),
        ("secretsmanager", "get-secret-value"),
        ("ssm", "--with-decryption"),
    ),
    "gcloud": (("print-access-token",), ("print-identity-token",), ("secrets", "access")),
    "az": (("get-access-token",), ("keyvault", "secret", "show")),
    "op": (("read",), ("item", "get", "--reveal")),
    "security": (("find-generic-password", "-w"), ("find-internet-password", "-w")),
    "pass": (("show",),),
    "lpass": (("show",),),
    "bw": (("get",),),
    "doppler": (("secrets",),),
    "sops": (("-d",), ("--decrypt",)),
    "ansible-vault": (("view",), ("decrypt",)),
    "kubeseal": (("--raw",),),
    "docker": (("secret", "inspect"),),
}


def _credential_command(cmd: str, args: list[str]) -> str | None:
    flat = set()
    for a in args:  # "-o=yaml", "--output=json", "-ojsonpath=..." count as the flag
        flat.add(a)
        if a.startswith("-"):
            flat.add(a.split("=", 1)[0])
            if a.startswith("-o") and not a.startswith("--"):
                flat.add("-o")
        if ":" in a and cmd == "heroku":
            flat.add(a.split(":", 1)[0])
    for need in _CREDENTIAL_COMMANDS.get(cmd, ()):
        if all(w in flat for w in need):
            return f"{cmd} {' '.join(need)}"
    return None


def _program(words: list[str]) -> int:
    """Where the program of a simple command is: after leading VAR=value
    assignments and wrappers (with their options); len(words) if none."""
    i = 0
    while i < len(words):
        w = words[i]
        base = os.path.basename(w)
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            i += 1
        elif base in _WRAPPERS:
            i += 1
            takes = _WRAPPER_ARGS.get(base, "")
            while i < len(words) and words[i].startswith("-"):
                i += 2 if len(words[i]) == 2 and words[i][1] in takes else 1  # sudo -u root, nice -n 5
            if base == "timeout" and i < len(words) and re.match(r"^[0-9.]+[smhd]?$", words[i]):
                i += 1
        else:
            break
    return i


def _segment_denied(words: list[str], depth: int) -> str | None:
    i = _program(words)
    if i >= len(words):
        return None
    cmd, args = os.path.basename(words[i]), words[i + 1 :]
    if cmd == "printenv":
        return "environment dump (printenv)"
    if cmd == "env":
        j = 0
        while j < len(args) and (args[j].startswith("-") or "=" in args[j]):
            j += 2 if args[j] in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string") else 1
        if j >= len(args):
            return "environment dump (env)"
        return _segment_denied(args[j:], depth)  # env A=1 prog: check prog
    if cmd == "set" and (not args or args in (["-o", "posix"], ["--posix"])):
        return "environment dump (set)"
    if cmd == "export" and (not args or args == ["-p"]):
        return "environment dump (export)"
    if cmd in ("declare", "typeset") and (
        not args
        or any(a.startswith("-") and ("x" in a or "p" in a) for a in args)
        and not any(not a.startswith("-") for a in args)
    ):
        return f"environment dump ({cmd})"
    if cmd == "compgen" and any(a in ("-e", "-v") for a in args):
        return "environment dump (compgen)"
    why = _credential_command(cmd, args)
    if why:
        return f"prints a credential ({why})"
    if cmd in _SHELLS or cmd == "eval":
        if cmd == "eval":
            return _denied(" ".join(args), depth + 1)
        for k, a in enumerate(args):
            if a.startswith("-") and "c" in a[1:] and k + 1 < len(args):
                return _denied(args[k + 1], depth + 1)
    return None


_DUMPERS = {"env", "printenv"}
_SEARCHERS = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "git", "sed", "awk", "find", "echo", "printf"}
_LOCATORS = {"which", "whereis", "realpath", "readlink", "type", "command"}


def _denied(command: str, depth: int) -> str | None:
    if depth > 4:
        return "command nests shells too deeply to check"
    for words in _segments(command):  # a search for the text "os.environ" reads nothing
        # ... nor does one run through a wrapper (xargs grep os.environ, timeout 5 rg process.env)
        p = _program(words)
        if (
            p < len(words)
            and os.path.basename(words[p]) not in _SEARCHERS
            and _ENV_READERS.rx().search(" ".join(words))
        ):
            return "environment dump (reads the process environment)"
    substituted = "$(" in command or "`" in command
    for words in _segments(command):
        reason = _segment_denied(words, depth)
        if reason:
            return reason
        if not words:
            continue
        base = os.path.basename(words[0])
        # $(which env) | head, `command -v printenv`: the located program runs
        if substituted and base in _LOCATORS and any(os.path.basename(w) in _DUMPERS for w in words[1:]):
            return "environment dump (runs env through a command substitution)"
        if base == "alias":  # alias e=env; e
            for w in words[1:]:
                name, eq, value = w.partition("=")
                if eq and value and _denied(value, depth + 1):
                    return f"environment dump (alias {name} runs it)"
    return None


def command_denied(command: str, extra_regexes=(), deny_globs=(), base_dir: str | None = None) -> str | None:
    """Why this Bash command's output must not be stored, or None.

    ``extra_regexes`` come from config ``bash.deny`` and are searched in the
    whole command; one that is not a valid regex matches as a plain substring.
    A command naming a secret file (``cat .env``, ``less ~/.ssh/id_rsa``;
    ``path_denied`` with config ``path.deny`` as ``deny_globs``) is denied
    too: its output may hold secrets no pattern recognises.
    """
    for pattern in extra_regexes or ():
        try:
            hit = re.search(pattern, command)
        except re.error:
            hit = pattern in command
        if hit:
            return f"matches bash.deny pattern {pattern!r}"
    reason = _denied(command, 0)
    if reason:
        return reason
    for words in _segments(command):
        for w in words[1:]:
            if w.startswith("-") and "=" not in w:
                continue
            w = os.path.expanduser(w.split("=", 1)[-1] if w.startswith("-") else w)
            if "/" in w or w.startswith(".") or "." in w:
                why = path_denied(w, deny_globs, base_dir)
                if why:
                    return f"names a secret file ({why})"
    return None
