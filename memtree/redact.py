"""Redaction: the one versioned set of rules that keeps secrets out of the store.

Three checks, each applied before any byte reaches the database, the FTS
index, an embedding, a log or the spool:

- ``redact_text(text)``: replaces secrets in place with ``[REDACTED:<tag>]``.
- ``command_denied(command, extra)``: Bash commands whose whole output is an
  environment dump (``env``, ``printenv``, ``set``, ``export -p``,
  ``declare -x``, ...) even behind wrappers (``bash -c 'env'``, ``(env)``,
  ``sudo env``, ``x; env``, ``env | sort``). ``env FOO=1 make`` runs a program
  with a changed environment and prints nothing of it, so it is allowed (the
  program after the assignments is checked in turn: ``env A=1 printenv`` is
  denied).
- ``path_denied(path, extra, base_dir)``: secret files (DESIGN.md's list plus
  a few more), checked on the path as given and on its realpath, so ``..`` and
  symlinks do not get around it.

``redact_text`` also redacts by value: secret-named keys in YAML, JSON, .env,
properties and HCL (``password: x``, ``"SessionToken": "x"``), secret-named
shell variables anywhere (``export DEPLOY_TOKEN=x &&``), quoted pairs
(``define('DB_PASSWORD', 'x')``), literal fallbacks (``env.X_SECRET || 'x'``),
key material without its BEGIN/END lines, and base64 that decodes to a secret.
Redacted spans keep their newlines. ``command_denied`` also denies commands
whose output is a credential, by shape (``kubectl get secret -o``, ``vault kv
get``, ``terraform output``, ``heroku config``, ``gh auth token``, ...) and the
environment printed through indirection (``$(which env)``, aliases).

Speed (the writer redacts before it commits and acks, so a hook waits on it):
a rule runs only if one of its literal hints occurs, and then only where a
case-sensitive search of the lowercased text finds where a match can begin
(``_sub_from``), or only on the lines holding its trigger when it never
spans a newline (``_on_hit_lines``): the same matches as ``rx.sub`` over the
whole text, without trying a case-insensitive alternation at every offset.
eval/bench_redact.py measures it against an older copy of this file.

Bump REDACTION_VERSION whenever a rule changes, so stored rows can say which
rules cleaned them (recall re-redacts older rows; ``memtree redact --rescan``). Standard library only; ``re`` makes this module cost a few
ms to import, so the hook imports it only on its spool path.
"""

from __future__ import annotations

import fnmatch
import heapq
import os
import re
import shlex

REDACTION_VERSION = 2

_TOK = r"A-Za-z0-9_\-"  # url-safe token characters
_NB = r"(?<![A-Za-z0-9_\-])"  # no token character right before (a real token start)
_NA = r"(?![A-Za-z0-9_\-])"  # no token character right after

# Words that make the value assigned to them a secret, whatever it looks like.
_STRONG = (r"(?:secret|passw(?:or)?d|pwd|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
           r"credentials?|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|client[_\-]?secret|"
           r"accountkey|sharedaccesskey|_authtoken|session[_\-]?key|signing[_\-]?key|encryption[_\-]?key)")
# Names ending in these are secret only when the value also looks like one.
_WEAK_END = r"(?:token|key|pass|auth|sig|signature|salt|cookie)"

_SECRETISH = r"(?=[^\s'\"]{0,200}[0-9])(?=[^\s'\"]{0,200}[A-Za-z])[A-Za-z0-9+/=_\-.~!@#$%^&*]{12,}"


def _sub(pattern: str, tag: str, hints: tuple, group: int = 0, flags: int = 0, starts: str | None = None,
         lines: str | None = None, back: int = 0, cased: str | None = None):
    """A rule: replace match group ``group`` (0 = whole match) with the tag.

    ``hints``: lowercase literals of which one must occur for the rule to
    possibly match; a text without any skips the rule (a 1 MB Bash output
    then costs milliseconds, not a second). ``starts``: a case-sensitive
    pattern found, over the lowercased text, wherever a match can begin; the
    rule is then tried only there (see ``_sub_from``). ``lines``: for a rule
    whose matches never span a newline, a case-sensitive pattern every match
    holds; only the lines where it occurs are tried (see ``_on_hit_lines``).
    ``back``: a match begins up to that many characters before where
    ``starts`` is found (a leading ``(?:^|\\s)``: a pattern opening with
    ``^|`` is tried at every offset, a literal is found fast). ``cased``: for a
    rule that matches one letter case only, a case-sensitive pattern searched
    in the text itself instead of ``hints`` (one search, not one scan per hint).
    """
    if cased:
        _CASED[cased] = _lazy(cased)
        hints = (cased,)
    return [pattern, flags], tag, group, frozenset(hints), (_lazy(lines) if lines else (starts, back))


def _lazy(pattern: str, flags: int = 0) -> list:
    return [pattern, flags]


_CASED: dict[str, list] = {}  # the rules' ``cased`` patterns (see _sub)


def _compiled(spec: list):
    """Compile a rule on first use: most texts trip few hints, and compiling all
    rules up front is most of this module's import time (the hook's spool path)."""
    if len(spec) == 2:
        spec.append(re.compile(spec[0], spec[1]))
    return spec[2]


_AWS = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
_STRONG_HINTS = ("secret", "passw", "pwd", "api", "access", "private", "credential", "auth", "refresh",
                 "accountkey", "sharedaccesskey", "session", "signing", "encryption")
_WEAK_HINTS = ("token", "key", "pass", "auth", "sig", "salt", "cookie")
_NEAR_HINTS = ("secret", "token", "passw", "api", "credential", "signature", "auth")
_NAMED_HINTS = ("pass", "secret", "token", "key", "salt", "credential", "pwd", "auth")
_STRONG_HINTS, _WEAK_HINTS, _NEAR_HINTS, _NAMED_HINTS = map(
    frozenset, (_STRONG_HINTS, _WEAK_HINTS, _NEAR_HINTS, _NAMED_HINTS))

# Order matters: whole-structure rules first, so later rules see the tags.
_RULES = [
    _sub(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END \1PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
         "private_key", ("private key",), flags=re.S, starts="-----begin "),
    _sub(r"PuTTY-User-Key-File-\d+:.*?Private-MAC: *[0-9a-f]+", "private_key", ("putty-user-key",), flags=re.S,
         starts="putty-user-key-file-"),
    # scheme://user:password@host
    _sub(r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@'\"]{0,256}:([^\s@/'\"]{1,512})@", "conn_password", ("://",), 1,
         lines=r"://"),
    _sub(_NB + r"(?:" + "|".join(_AWS) + r")[0-9A-Z]{16}" + _NA, "aws_access_key_id", (),
         cased="A(?:" + "|".join(a[1:] for a in _AWS) + ")", starts="(?:" + "|".join(_AWS).lower() + ")"),
    _sub(_NB + r"AIza[0-9A-Za-z_\-]{35}" + _NA, "gcp_api_key", ("aiza",), starts="aiza"),
    _sub(_NB + r"GOCSPX-[0-9A-Za-z_\-]{20,}" + _NA, "gcp_client_secret", ("gocspx-",), starts="gocspx-"),
    _sub(_NB + r"ya29\.[0-9A-Za-z_\-]{20,}" + _NA, "gcp_access_token", ("ya29.",), starts=r"ya29\."),
    _sub(_NB + r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _NA, "azure_client_secret", ("q~",),
         lines=r"\dQ~"),
    _sub(r"[?&](?:sig|se?cret)=([A-Za-z0-9%+/=]{20,})", "azure_sas", ("sig=", "secret=", "scret="), 1,
         starts=r"[?&](?:sig|se?cret)="),
    _sub(_NB + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})" + _NA, "github_token", (),
         cased="gh[pousr]_|github_pat_", starts="gh[pousr]_|github_pat_"),
    _sub(_NB + r"gl(?:pat|dt|rt|ptt|soat|cbt|imt)-[0-9A-Za-z_\-]{20,}" + _NA, "gitlab_token", ("gl",),
         starts="gl(?:pat|dt|rt|ptt|soat|cbt|imt)-"),
    _sub(_NB + r"xox[abposr]-[0-9A-Za-z\-]{10,}" + _NA, "slack_token", ("xox",), starts="xox[abposr]-"),
    _sub(_NB + r"xapp-\d-[0-9A-Za-z\-]{10,}" + _NA, "slack_token", ("xapp-",), starts=r"xapp-\d-"),
    _sub(r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+", "slack_webhook", ("hooks.slack.com",),
         starts=r"https://hooks\.slack\.com/"),
    _sub(_NB + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + _NA, "stripe_key", ("k_live_", "k_test_"),
         starts="(?:sk|rk)_(?:live|test)_"),
    _sub(_NB + r"whsec_[0-9A-Za-z]{20,}" + _NA, "stripe_key", ("whsec_",), starts="whsec_"),
    _sub(_NB + r"npm_[A-Za-z0-9]{36}" + _NA, "npm_token", ("npm_",), starts="npm_"),
    _sub(_NB + r"dckr_pat_[A-Za-z0-9_\-]{20,}" + _NA, "docker_token", ("dckr_pat_",), starts="dckr_pat_"),
    _sub(_NB + r"sk-ant-[" + _TOK + r"]{20,}" + _NA, "anthropic_key", ("sk-ant-",), starts="sk-ant-"),
    _sub(_NB + r"sk-(?:proj-|svcacct-|admin-)?[" + _TOK + r"]{20,}" + _NA, "openai_key", ("sk-",), starts="sk-"),
    _sub(_NB + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*" + _NA, "jwt", ("eyj",),
         starts=r"eyj[a-z0-9_\-]{8,}\.eyj"),
    # Authorization: Bearer|Basic|token <credential>
    _sub(r"(?i)\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*"
         r"((?!\[REDACTED)[^\s\"',;]{8,})", "auth_header", ("authorization",), 1,
         starts="proxy-authorization[\"']?\\s*[:=]|authorization[\"']?\\s*[:=]"),  # a literal first: fast
    _sub(r"(?i)\bbearer\s+((?!\[REDACTED)[A-Za-z0-9+/=_\-.~]{16,})", "auth_header", ("bearer",), 1, starts=r"bearer\s"),
    # curl -u user:password, netrc "login x password y"
    _sub(r"(?:^|\s)(?:-[A-Za-z]*u|--user|-a|--auth)\s*['\"]?[^\s:'\"]+:((?!\[REDACTED)[^\s'\"]{3,})", "basic_auth",
         ("-", "--user", "--auth"), 1, starts=r"-(?:[a-z]*u|-user|a|-auth)", back=1),
    _sub(r"\bsshpass\b[^\n]{0,100}?\s-p\s*['\"]?((?!\[REDACTED)[^\s'\"]{3,})", "cli_secret", ("sshpass",), 1,
         starts="sshpass"),
    _sub(r"\bredis-cli\b[^\n]{0,200}?\s(?:-a|--pass)\s+['\"]?((?!\[REDACTED)[^\s'\"]{3,})", "cli_secret",
         ("redis-cli",), 1, starts="redis-cli"),
    _sub(r"(?i)\blogin\s+\S+\s+password\s+(\S+)", "netrc_password", ("login",), 1, starts=r"login\s"),
    # --password x, --token=x, mysql -pSECRET
    _sub(r"(?i)(?:^|\s)--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token)"
         r"(?:=|\s+)['\"]?((?!\[REDACTED)[^\s'\"]{3,})", "cli_secret", ("--",), 1,
         starts=r"--(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token)", back=1),
    _sub(r"\bmysql(?:dump|admin)?\b[^\n]{0,200}?\s-p((?!\[REDACTED)[^\s'\"]{3,})", "mysql_password", ("mysql",), 1,
         starts="mysql"),
]

# Every hint once, shortest first, each with the shorter hints inside it: when
# one of those is absent so is the hint, without scanning the text for it (a
# scan of a text without the hint reads all of it; most hints are absent).
_HINTS = sorted({h for rule in _RULES for h in rule[3] if h not in _CASED}
                | _STRONG_HINTS | _WEAK_HINTS | _NEAR_HINTS | _NAMED_HINTS, key=lambda h: (len(h), h))
_HINT_PARTS = tuple((h, tuple(g for g in _HINTS if len(g) < len(h) and g in h)) for h in _HINTS)


def _hints_in(low: str, text: str) -> set[str]:
    """The hints that occur in ``low`` (the same answer as ``h in low`` for
    each) and the ``cased`` patterns found in ``text``."""
    found = {c for c, spec in _CASED.items() if _compiled(spec).search(text)}
    for h, parts in _HINT_PARTS:
        if (not parts or found.issuperset(parts)) and h in low:
            found.add(h)
    return found

# NAME=value (shell / .env / env dump; quoted or not), "name": "value" (JSON),
# name: value (YAML), name = "value" (code). The v* group is the secret.
_ASSIGN_STRONG = _lazy(
    r"(?i)" + _STRONG + r"[A-Za-z0-9_.\-]{0,40}[\"']?"
    r"(?:"
    r"=(?P<q1>[\"']?)(?P<v1>(?<=[\"'])[^\"'\n]{3,}(?=[\"'])|(?!\[REDACTED|\$\{|\$\()[^\s\"';&]{3,})"
    r"|\s*(?::=|=>|=|:)\s*(?P<q2>[\"'])(?P<v2>(?!\[REDACTED|\$\{)[^\"'\n]{3,})(?P=q2)"
    r"|\s*(?::|=)[ \t]*(?P<v3>(?!\[REDACTED)" + _SECRETISH + r"))"
)
_ASSIGN_WEAK = _lazy(
    r"(?i)" + _WEAK_END + r"[\"']?\s*(?::=|=>|=|:)\s*[\"']?(?P<v>(?!\[REDACTED)" +
    _SECRETISH.replace("{12,}", "{16,}") + r")"
)
# A long hex/base64 blob right after a secret-like word ("token 3f9a...").
_NEAR_WORDS = r"(?:secret|token|passw(?:or)?d|api[_\-\s]?key|credential|signature|auth)"
_NEAR_WORD = _lazy(
    r"(?i)\b" + _NEAR_WORDS + r"[A-Za-z_]{0,40}[\"']?"
    r"(?:\s*(?:[:=]|is|:=|=>)\s*|\s+)[\"']?(?P<v>(?!\[REDACTED)(?=[A-Za-z0-9+/_\-]{0,200}\d)"
    r"(?=[A-Za-z0-9+/_\-]{0,200}[A-Za-z])[A-Za-z0-9+/_\-]{20,}={0,2})(?![A-Za-z0-9+/_\-=])"
)

# Secret-named words for value-level rules: the value is a secret whatever it looks like.
_NAMED = (r"(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|apikey|salt|credentials?|pwd|pass|"
          r"(?:access|private|client|master|signing|encryption|session|auth|secret|nonce|logged[_\-]?in)[_\-]?key|"
          r"key[_\-]?data)")
# The same words with no group first in any branch: ``re`` then skips ahead by
# first character when searching for candidates (KEYED_LINE's starts).
_NAMED_FLAT = (r"(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|apikey|salt|credentials?|pwd|pass|" + "|".join(
    w + r"[_\-]?key" for w in ("access", "private", "client", "master", "signing", "encryption", "session", "auth",
                                "secret", "nonce", r"logged[_\-]?in")) + r"|key[_\-]?data)")
# key: value / key=value / "key": "value", as the last thing on its line (YAML,
# JSON, .env, properties, HCL, grep hits with their path prefix). The name must
# END in a secret word, so secretName, passwordFile, token_count are not values.
_KEYED_LINE = _lazy(
    r"(?im)(?P<key>" + _NAMED + r")[\"']?"
    r"(?P<sp1>[ \t]*)(?P<sep>:|=)(?P<sp2>[ \t]*)(?P<q>[\"']?)(?P<v>[^\s\"'#,]{2,}?)(?P=q)(?=[ \t]*,?[ \t]*(?:#[^\n]*)?$)"
)
# Where each word rule's match can begin (a case-sensitive pattern over the
# folded text) and the literals every such beginning starts with.
_STRONG_STARTS = (_STRONG + r"[a-z0-9_.\-]{0,40}[\"']?\s*[:=]",
                  ("secret", "passw", "pwd", "api", "access", "private", "credential", "auth", "refresh", "client",
                   "accountkey", "sharedaccesskey", "_authtoken", "session", "signing", "encryption"))
_WEAK_STARTS = (_WEAK_END + r"[\"']?\s*[:=]", ("token", "key", "pass", "auth", "sig", "salt", "cookie"))
_NEAR_STARTS = (_NEAR_WORDS + r"[a-z_]{0,40}[\"']?[\s:=i]",
                ("secret", "token", "passw", "api", "credential", "signature", "auth"))
_KEYED_STARTS = (_NAMED_FLAT + r"[\"']?[ \t]*[:=]",
                 ("pass", "secret", "token", "api", "salt", "credential", "pwd", "access", "private", "client",
                  "master", "signing", "encryption", "session", "auth", "nonce", "logged", "key"))
_NOT_VALUES = {"null", "none", "nil", "true", "false", "undefined", "str", "string", "int", "bool", "bytes",
               "float", "number", "boolean", "any", "object", "dict", "list", "optional", "required", "yes", "no"}
# NAME=value with a secret-named UPPER_CASE variable anywhere on a line:
# `export DEPLOY_TOKEN=x && ...`, `docker run -e POSTGRES_PASSWORD=x`, `+ export X_SECRET=x` (set -x).
_ENV_ASSIGN = _lazy(
    r"(?<![A-Za-z0-9_])(?:[A-Z0-9_]*_)?(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|"
    r"SECRET_KEY|MASTER_KEY|AUTH|CREDENTIALS?|SALT)=(?:(?P<q>[\"'])(?P<v1>(?!\$|\[REDACTED)[^\"'\n]{2,})(?P=q)|"
    r"(?P<v2>(?!\$|\[REDACTED)[^\s\"';&|)`]{2,}))"
)
# What every _ENV_ASSIGN match holds, on the one line it spans.
_ENV_TRIGGER = _lazy(r"(?:TOKEN|SECRET|PASS(?:WORD|WD)?|PWD|KEY|AUTH|CREDENTIALS?|SALT)=")
# 'DB_PASSWORD', 'value' (PHP define, getenv("X", "default"), tuples).
_NAMED_PAIR = _lazy(
    r"(?i)[\"'][A-Za-z0-9_.\-]*(?:" + _NAMED[3:-1] + r"|_key)[\"']\s*,\s*(?P<q>[\"'])(?P<v>(?!\[REDACTED)[^\"'\n]{3,})(?P=q)"
)
# What every _NAMED_PAIR match holds (over the folded text), a name then
# ``' , '``: the rule runs only if it occurs. Searched the fast way round: the
# quote-comma-quote (a rare first character), then a name ending right at its
# first quote (the longest is 14 characters).
_QUOTE_COMMA_QUOTE = _lazy(r"[\"']\s*,\s*[\"']")
_NAMED_PAIR_NAME = _lazy(r"(?:" + _NAMED[3:-1] + r"|_key)\Z")


def _named_pair_trigger(low: str) -> bool:
    """Whether ``low`` holds a name then ``' , '``. A match's first quote always starts a
    quote-comma-quote that ``finditer`` returns: no earlier one can cover it,
    since an earlier one's closing quote follows a comma or a space, not a name."""
    name = _compiled(_NAMED_PAIR_NAME).search
    return any(name(low, max(0, m.start() - 24), m.start())
               for m in _compiled(_QUOTE_COMMA_QUOTE).finditer(low))


# A secret-named lookup with a literal fallback: env.DB_PASSWORD || 'x', ${ADMIN_PASSWORD:=x}.
_FALLBACK = _lazy(
    r"(?i)(?:" + _NAMED + r"[\]\"')]*\s*(?:\|\||\?\?|\bor\b)\s*(?P<q>[\"'])(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)"
    r"|\$\{(?:[A-Za-z0-9]+_)*" + _NAMED + r":?[\-=](?P<v2>(?!\[REDACTED)[^}\s]{2,})\})"
)
# Key material without its BEGIN/END lines: whole lines of base64 at PEM/OpenSSH
# width (a grep hit keeps its "path:N:" prefix), then the short last line.
_KEY_LINE = _lazy(r"(?m)^(?P<pre>(?:[^\s:]+:\d+[:-])?[ \t]*[\"']?)"
                  r"(?P<v>[A-Za-z0-9+/]{40,76}={0,2}|[A-Za-z0-9+/]{16,75}={1,2})(?=[\"']?[ \t]*$)")
_KEY_TAIL = _lazy(r"(?m)(?<=\[REDACTED:key_material\])(?P<gap>[\"']?[ \t]*\n(?:[^\s:]+:\d+[:-])?[ \t]*[\"']?)"
                  r"(?P<v>[A-Za-z0-9+/]{4,76}={0,2})(?=[\"']?[ \t]*$)")
_BASE64 = _lazy(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_ANSI = _lazy(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _on_lines(text: str, spec: list, repl, ops: tuple) -> str:
    """Run a one-line rule only on lines holding a secret word and one of
    ``ops``: its case-insensitive alternation is slow to try at every offset.
    The lines holding an op are found by ``str.find``, not by visiting each line."""
    starts: set[int] = set()
    for o in ops:  # no op holds a newline
        i = text.find(o)
        while i >= 0:
            starts.add(text.rfind("\n", 0, i) + 1)
            i = text.find("\n", i)
            i = -1 if i < 0 else text.find(o, i)
    rx, out, pos = _compiled(spec), [], 0
    for a in sorted(starts):
        b = text.find("\n", a)
        b = len(text) if b < 0 else b
        line = text[a:b]
        if any(h in line.lower() for h in _NAMED_HINTS):
            new = rx.sub(repl, line)
            if new != line:
                out += (text[pos:a], new)
                pos = b
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _on_hit_lines(spec: list, trigger: list, text: str, repl) -> str:
    """``rx.sub(repl, text)`` for a rule whose matches never span a newline and
    always hold ``trigger``: only the lines where the trigger occurs are tried."""
    rx, find, out, pos = _compiled(spec), _compiled(trigger).search, [], 0
    t = find(text)
    while t is not None:
        a = text.rfind("\n", 0, t.start()) + 1
        b = text.find("\n", t.end())
        b = len(text) if b < 0 else b
        # the line alone: a look-behind at its start sees "\n" in the text, nothing here; both are non-word
        out.append(text[pos:a])
        out.append(rx.sub(repl, text[a:b]))
        pos = b
        t = find(text, b)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


# Key material and base64 tokens are runs of 16+ base64 characters on one line.
_B64_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_MARKS = bytes(98 if i in _B64_ALPHABET else 46 for i in range(256))  # b"b" for the alphabet, b"." else
_B64_RUN = b"b" * 16


def _on_run_lines(spec: list, text: str, repl) -> str:
    """``rx.sub(repl, text)`` for a rule whose matches never span a newline and
    always hold 16 base64 characters in a row: only the lines with such a run
    are tried, found by translating bytes (the rules' regexes crawl through
    every offset of a large text at ~30 KB/ms)."""
    marks = text.encode("ascii", "replace").translate(_B64_MARKS)  # one byte per character
    rx, out, pos = _compiled(spec), [], 0
    t = marks.find(_B64_RUN)
    while t >= 0:
        a = text.rfind("\n", 0, t) + 1
        b = text.find("\n", t)
        b = len(text) if b < 0 else b
        out.append(text[pos:a])
        out.append(rx.sub(repl, text[a:b]))  # alone, the line's ends still look like "\n" to ^, $ and look-arounds
        pos = b
        t = marks.find(_B64_RUN, b)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _mixed(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isupper() for c in v) and any(c.islower() for c in v)


def _put(m, group: str, label: str) -> str:
    s, e = m.span(group)
    return m.group(0)[: s - m.start()] + label + m.group(0)[e - m.start():]


def _keyed_repl(tags: set):
    def repl(m):
        v = m.group("v")
        if v[0] in "$<%*[{" or v.startswith("!") or v.lower() in _NOT_VALUES or any(c in v for c in "()[]{}"):
            return m.group(0)
        if not m.group("q") and m.group("sep") == "=" and (m.group("sp1") or m.group("sp2")):
            # `password = other_name` is code; keep it unless the value looks like a credential
            if not any(c.isdigit() for c in v) and all(c.isalnum() or c in "_." for c in v):
                return m.group(0)
        tags.add("secret_value")
        return _put(m, "v", "[REDACTED:secret_value]")
    return repl


def _value_repl(tags: set, groups=("v", "v1", "v2")):
    def repl(m):
        for g in groups:
            if g in m.re.groupindex and m.group(g) is not None:
                tags.add("secret_value")
                return _put(m, g, "[REDACTED:secret_value]")
        return m.group(0)
    return repl


def _key_material(text: str, tags: set) -> str:
    def repl(m):
        if not _mixed(m.group("v")):
            return m.group(0)  # hex digests, words
        tags.add("key_material")
        return _put(m, "v", "[REDACTED:key_material]")
    text = _on_run_lines(_KEY_LINE, text, repl)
    if "key_material" in tags:
        for _ in range(2):
            text = _compiled(_KEY_TAIL).sub(lambda m: m.group("gap") + "[REDACTED:key_material]", text)
    return text


def _encoded_secrets(text: str, tags: set) -> str:
    """A base64 token that decodes to text holding a secret is itself one."""
    import binascii

    def repl(m):
        tok = m.group(0)
        if len(tok) % 4 or tok.isalpha():
            return tok
        try:
            plain = binascii.a2b_base64(tok).decode("utf-8")
        except (binascii.Error, ValueError):
            return tok
        if not plain.isprintable() and not all(c.isprintable() or c in "\n\r\t" for c in plain):
            return tok
        if _redact(plain, depth=1)[1]:
            tags.add("base64_secret")
            return "[REDACTED:base64_secret]"
        return tok
    return _on_run_lines(_BASE64, text, repl)


# Non-ASCII characters that ``re``'s IGNORECASE matches to an ASCII letter:
# folded first, so the lowercase text the prefilters scan misses no candidate.
_FOLD = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}


def _folded(text: str) -> str | None:
    """``text`` lowercased, position for position (None if lowering changes its length)."""
    if text.isascii():
        return text.lower()
    low = text.translate(_FOLD).lower() if any(chr(c) in text for c in _FOLD) else text.lower()
    return low if len(low) == len(text) else None


def _starts(spec: list, words: str):
    """The case-sensitive search for where a match of ``spec`` can begin, over the folded text."""
    if len(spec) < 4:
        _compiled(spec)
        spec.append(re.compile(words))
    return spec[3]


def _regex_finder(rx, low: str):
    def find(pos: int) -> int:
        m = rx.search(low, pos)
        return -1 if m is None else m.start()
    return find


def _literal_finder(rx, lits: tuple, low: str):
    """``rx.search(low, pos).start()`` (-1: none) for a pattern every match of
    which begins with one of ``lits``, asked for with a ``pos`` that never
    goes back: ``str.find`` proposes, ``rx.match`` confirms (a regex opening
    with a long alternation tries it at every offset, several times slower)."""
    heap = [(i, w) for w in lits for i in (low.find(w),) if i >= 0]
    heapq.heapify(heap)

    def find(pos: int) -> int:
        while heap:
            i, w = heap[0]
            if i >= pos and rx.match(low, i):
                return i
            j = low.find(w, max(pos, i + 1))
            if j < 0:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (j, w))
        return -1
    return find


def _sub_from(spec: list, words: str, text: str, low: str | None, repl, back: int = 0, lits: tuple = ()) -> str:
    """``rx.sub(repl, text)`` for a case-insensitive rule whose every match begins
    with one of ``words``: the regex runs only where a cheap case-sensitive
    search over the folded text finds such a word, not at every offset (the same
    matches, 4-8x faster on text with few candidates). ``rx.match`` at an offset
    sees the text before it (look-behinds, \\b), exactly as ``sub`` would.
    With ``back``, a match may begin up to ``back`` characters before a word
    (never before ``pos``): trying one offset too many only costs a ``match``.
    With ``lits``, every match of ``words`` begins with one of them (_literal_finder)."""
    rx = _compiled(spec)
    if low is None:
        return rx.sub(repl, text)
    starts = _starts(spec, words)
    find, out, pos = (_literal_finder(starts, lits, low) if lits else _regex_finder(starts, low)), [], 0
    c = find(0)
    while c >= 0:
        s = max(c - back, pos)
        m = rx.match(text, s)
        if m is None:
            c = find(s + back + 1)
            continue
        out.append(text[pos:s])
        out.append(repl(m))
        pos = m.end()
        c = find((pos if pos > s else s + 1) + back)
    if not out:
        return text
    out.append(text[pos:])
    return "".join(out)


def _group_repl(tag: str, group: int, tags: set):
    label = f"[REDACTED:{tag}]"

    def repl(m):
        tags.add(tag)
        if not group:
            return _keep_lines(label, m.group(0))
        s, e = m.span(group)
        return m.group(0)[: s - m.start()] + _keep_lines(label, m.group(group)) + m.group(0)[e - m.start():]

    return repl


def _keep_lines(label: str, replaced: str) -> str:
    """The label plus the newlines it replaces: line numbers stay right, so a
    whole file redacted before chunking still splits into the same lines."""
    return label + "\n" * replaced.count("\n")


_KWARG_NAME = _lazy(r"[A-Za-z_][A-Za-z_.]*[),]+$")


def _assign_repl(tags: set):
    def repl(m):
        for g in ("v1", "v2", "v3"):
            if m.group(g) is not None:
                s, e = m.span(g)
                break
        if g == "v1" and _compiled(_KWARG_NAME).match(m.group(g)):
            return m.group(0)  # f(SecretId=secret_name): passes a variable, holds no value
        tags.add("secret_value")
        whole = m.group(0)
        return whole[: s - m.start()] + "[REDACTED:secret_value]" + whole[e - m.start():]
    return repl


def _weak_repl(tags: set):
    def repl(m):
        s, e = m.span("v")
        tags.add("secret_value")
        return m.group(0)[: s - m.start()] + "[REDACTED:secret_value]" + m.group(0)[e - m.start():]
    return repl


def redact_text(text: str) -> tuple[str, list[str]]:
    """Replace every secret in ``text``; return (clean text, sorted tags found).

    Redacted spans keep their newlines, so a whole file redacted first and
    chunked after has the same lines (a key across a chunk edge is caught).
    """
    return _redact(text, 0)


def _redact(text: str, depth: int) -> tuple[str, list[str]]:
    if not text:
        return text, []
    tags: set[str] = set()
    if "\x1b" in text:  # colour codes split "KEY:\x1b[39m value"; they carry nothing worth storing
        text = _compiled(_ANSI).sub("", text)
    low = _folded(text)
    present, folded_from = _hints_in(text.lower() if low is None else low, text), text
    for spec, tag, group, hints, starts in _RULES:
        if not present.isdisjoint(hints):
            if isinstance(starts, list):
                text = _on_hit_lines(spec, starts, text, _group_repl(tag, group, tags))
                continue
            if text is not folded_from:
                low, folded_from = _folded(text), text
            text = _sub_from(spec, starts[0], text, low, _group_repl(tag, group, tags), starts[1])
    # Each rule below starts with its secret word, found in the folded text
    # (taken again when a rule changed the text).
    if not present.isdisjoint(_STRONG_HINTS):
        if text is not folded_from:
            low, folded_from = _folded(text), text
        text = _sub_from(_ASSIGN_STRONG, _STRONG_STARTS[0], text, low, _assign_repl(tags), lits=_STRONG_STARTS[1])
    if not present.isdisjoint(_WEAK_HINTS):
        if text is not folded_from:
            low, folded_from = _folded(text), text
        text = _sub_from(_ASSIGN_WEAK, _WEAK_STARTS[0], text, low, _weak_repl(tags), lits=_WEAK_STARTS[1])
    if not present.isdisjoint(_NEAR_HINTS):
        near: set[str] = set()
        if text is not folded_from:
            low, folded_from = _folded(text), text
        text = _sub_from(_NEAR_WORD, _NEAR_STARTS[0], text, low, _weak_repl(near), lits=_NEAR_STARTS[1])
        if near:
            tags.add("secret_near_keyword")
    if not present.isdisjoint(_NAMED_HINTS):
        # one line at most per match (no newline in its pattern), so the whole text at once
        if text is not folded_from:
            low, folded_from = _folded(text), text
        text = _sub_from(_KEYED_LINE, _KEYED_STARTS[0], text, low, _keyed_repl(tags), lits=_KEYED_STARTS[1])
        text = _on_hit_lines(_ENV_ASSIGN, _ENV_TRIGGER, text, _value_repl(tags))
        if _named_pair_trigger(_folded(text) or text.lower()):
            text = _compiled(_NAMED_PAIR).sub(_value_repl(tags), text)
        text = _on_lines(text, _FALLBACK, _value_repl(tags), ("||", "??", " or ", "${"))
    text = _key_material(text, tags)
    if depth == 0:
        text = _encoded_secrets(text, tags)
    return text, sorted(tags)


def redact_value(value):
    """Redact every string inside a JSON-like value (dict keys too); return (value, tags)."""
    tags: set[str] = set()

    def walk(v):
        if isinstance(v, str):
            clean, found = redact_text(v)
            tags.update(found)
            return clean
        if isinstance(v, dict):
            return {walk(k) if isinstance(k, str) else k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value), sorted(tags)


# -- commands ------------------------------------------------------------------

_SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish", "ash", "busybox"}
# Prefixes that run the rest of the words as a command.
_WRAPPERS = {"sudo", "doas", "command", "builtin", "exec", "nohup", "time", "nice", "ionice",
             "stdbuf", "timeout", "xargs", "watch", "strace", "chroot", "unbuffer", "then", "do", "else", "!",
             "{", "}", "if", "while", "until"}
_SPLIT = _lazy(r"\|\||&&|[;|&\n(){}`]|\$\(")
_ENV_READERS = _lazy(
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
        return [seg.split() for seg in _compiled(_SPLIT).split(command)]
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


# Commands whose output is a credential, by shape: (program, words that must all
# appear among its arguments, in any order). Value-level redaction catches
# labelled values; these print bare ones (a token, a decoded secret).
_CREDENTIAL_COMMANDS = (
    ("kubectl", ("get", "secret", "-o")), ("kubectl", ("get", "secrets", "-o")),
    ("kubectl", ("get", "secret", "--output")), ("kubectl", ("config", "view", "--raw")),
    ("kubectl", ("create", "token")), ("vault", ("kv", "get")), ("vault", ("read",)), ("vault", ("login",)),
    ("vault", ("token", "create")), ("vault", ("write",)), ("terraform", ("output",)), ("terraform", ("show", "-json")),
    ("terraform", ("state", "pull")), ("terraform", ("state", "show")), ("heroku", ("config",)),
    ("heroku", ("config:get",)), ("heroku", ("auth:token",)), ("heroku", ("authorizations:create",)),
    ("gh", ("auth", "token")), ("gh", ("auth", "status", "--show-token")), ("gh", ("auth", "status", "-t")),
    ("aws", ("configure", "get")), ("aws", ("configure", "export-credentials")), ("aws", ("get-login-password",)),
    ("aws", ("secretsmanager", "get-secret-value")), ("aws", ("ssm", "--with-decryption")),
    ("gcloud", ("print-access-token",)), ("gcloud", ("print-identity-token",)), ("gcloud", ("secrets", "access")),
    ("az", ("get-access-token",)), ("az", ("keyvault", "secret", "show")), ("op", ("read",)),
    ("op", ("item", "get", "--reveal")), ("security", ("find-generic-password", "-w")),
    ("security", ("find-internet-password", "-w")), ("pass", ("show",)), ("lpass", ("show",)), ("bw", ("get",)),
    ("doppler", ("secrets",)), ("sops", ("-d",)), ("sops", ("--decrypt",)), ("ansible-vault", ("view",)),
    ("ansible-vault", ("decrypt",)), ("kubeseal", ("--raw",)), ("docker", ("secret", "inspect")),
)


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
    for prog, need in _CREDENTIAL_COMMANDS:
        if cmd == prog and all(w in flat for w in need):
            return f"{prog} {' '.join(need)}"
    return None


def _segment_denied(words: list[str], depth: int) -> str | None:
    i = 0
    while i < len(words):  # skip leading VAR=value assignments and wrappers (with their options)
        w = words[i]
        base = os.path.basename(w)
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", w):
            i += 1
        elif base in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            if base == "timeout" and i < len(words) and re.match(r"^[0-9.]+[smhd]?$", words[i]):
                i += 1
        else:
            break
    if i >= len(words):
        return None
    cmd, args = os.path.basename(words[i]), words[i + 1:]
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
    if cmd in ("declare", "typeset") and (not args or any(a.startswith("-") and ("x" in a or "p" in a) for a in args)
                                          and not any(not a.startswith("-") for a in args)):
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
        if words and os.path.basename(words[0]) not in _SEARCHERS and _compiled(_ENV_READERS).search(" ".join(words)):
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


# -- paths ---------------------------------------------------------------------

_DENY_DIRS = {".ssh", ".gnupg"}
_DENY_NAMES = (".env*", ".envrc", ".npmrc", ".pypirc", ".netrc", ".pgpass", ".git-credentials",
               "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx",
               "credentials.json", "service-account*.json", "*.tfstate", "*.tfstate.backup", ".htpasswd",
               "*.jks", "*.keystore", "*.kdbx", ".vault-token")
# (directory, file name) pairs: files that hold nothing but credentials.
_DENY_IN_DIR = {(".aws", "credentials"), (".docker", "config.json"), (".kube", "config"), ("gh", "hosts.yml")}


def _parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def _check(path: str, extra_globs, base_dir: str | None) -> str | None:
    parts = _parts(path)
    if not parts:
        return None
    lower = [p.lower() for p in parts]
    for d in lower[:-1]:
        if d in _DENY_DIRS:
            return f"secret directory {d}/"
    if lower[-1] in _DENY_DIRS:
        return f"secret directory {lower[-1]}/"
    if len(lower) >= 2 and (lower[-2], lower[-1]) in _DENY_IN_DIR:
        return f"secret file {lower[-2]}/{lower[-1]}"
    for pat in _DENY_NAMES:
        if fnmatch.fnmatchcase(lower[-1], pat):
            return f"secret file pattern {pat}"
    rel = None
    if base_dir and os.path.isabs(path):
        rel = os.path.relpath(path, base_dir)
    for pat in extra_globs or ():
        p = pat.rstrip("/")
        if "/" in p:
            cands = [path.replace("\\", "/")] + ([rel.replace("\\", "/")] if rel else [])
            if any(fnmatch.fnmatchcase(c, p) or fnmatch.fnmatchcase(c, p + "/*") for c in cands):
                return f"matches path.deny pattern {pat!r}"
        elif any(fnmatch.fnmatchcase(c, p) for c in parts):
            return f"matches path.deny pattern {pat!r}"
    return None


def path_denied(path: str, extra_globs=(), base_dir: str | None = None) -> str | None:
    """Why a file at ``path`` must not be stored, or None.

    Checks the path as given, made absolute against ``base_dir`` with ``..``
    folded, and its realpath (symlinks resolved). Glob patterns from config
    ``path.deny`` without a ``/`` match any path component; with a ``/`` they
    match the whole path (absolute, or relative to ``base_dir``).
    """
    if not isinstance(path, str) or not path:
        return None
    full = path if os.path.isabs(path) else os.path.join(base_dir or os.getcwd(), path)
    candidates = [path, os.path.normpath(full)]
    try:
        candidates.append(os.path.realpath(full))
    except (OSError, ValueError):
        pass
    for cand in candidates:
        reason = _check(cand, extra_globs, base_dir)
        if reason:
            return reason
    return None
