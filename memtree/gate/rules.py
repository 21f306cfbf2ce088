"""The text rules: one record per rule, in the order they run.

Each ``Rule`` names its tag, its pattern, the hints that must occur for it to
possibly match, how the engine finds where to try it (memtree/gate/engine.py)
and how a match is replaced (memtree/gate/replace.py). Whole-structure rules
come first (a key block, a URL with a password), so later rules see their
tags; the word rules (a secret-named key and its value) come after the
token formats.

Bump REDACTION_VERSION whenever a rule changes, so stored rows can say which
rules cleaned them (recall re-redacts older rows; ``memtree redact --rescan``).
"""

from __future__ import annotations

import re

from memtree.gate import programs
from memtree.gate import replace as rp
from memtree.gate.lazy import Lazy
from memtree.gate.patterns import (
    AWS,
    CREDENTIAL,
    NA,
    NAMED,
    NAMED_FLAT,
    NAMED_HINTS,
    NAMED_LITS,
    NB,
    NEAR_HINTS,
    NEAR_WORDS,
    SECRET_NAME,
    SECRETISH,
    STRONG,
    STRONG_HINTS,
    TOK,
    TOKEN_FORMATS,
    WEAK_END,
    WEAK_HINTS,
    named_pair_trigger,
)

# 8: programs' password options and arguments (zip -P, ldap* -w, keytool -storepass, htpasswd -b,
# -U user%x, user/x@db, piped into sudo -S), auth tuples, <entry key=...>, a token as a URL's user, prose,
# %3D pairs, any-case table rows; 7: a URL's password holding '/' or '@', a JWT whatever its payload, redis's requirepass, an INI
# file's bare word, Notion, Telegram, Discord and Terraform Cloud tokens; 6: typed declarations,
# #define / ENV, header directives, config set, SQL passwords, registry logins, key flags;
# 5: mysql's every -p; 4: escaped JSON, subscripts, XML, other separators, YAML blocks; 3: glued -p'x', ...
REDACTION_VERSION = 8

# A name that starts with a secret word but names something about the secret, not
# the secret (PASSWORD_MIN_LENGTH, SECRET_NAME, password_file, secretArn): its value
# is a number, a name or a path. Lookbehinds at the name's end, one per word (fixed width).
_ABOUT = (
    "name names file path dir length len min max size count policy hint arn ref env var field type ttl "
    "expiry expires version label prompt rotation enabled required regex pattern format prefix suffix provider "
    "backend store manager header param mode source"
).split()
# In a command or declaration with no `=` (#define, ENV, a header directive, config set): a
# secret-named name, or a weak one (STRIPE_KEY) when its value is shaped like a credential.
NAME_OR_WEAK = r"(?:" + SECRET_NAME + r"|(?P<weak>[A-Za-z0-9_.\-]*?" + WEAK_END + r"))(?![A-Za-z0-9_])"
WEAK_VALUE = r"(?(weak)(?=[\"']?" + CREDENTIAL + r"))"
NOT_ABOUT = "".join(rf"(?<![_.\-]{w})(?<!(?-i:[a-z0-9]{w.title()}))" for w in _ABOUT)  # and passwordMinLength
# A secret-named name or a weak one, matched from its secret word on (``db_`` of db_password is not
# looked at: the match starts where a literal finder finds "password", and a leading
# ``[A-Za-z0-9_.-]*?`` tried at every offset of a megabyte line cost seconds).
NAME_END_OR_WEAK = r"(?:" + NAMED + r"|(?P<weak>" + WEAK_END + r"))(?![A-Za-z0-9_])"


class Rule:
    """One text rule.

    ``hints``: lowercase literals of which one must occur for the rule to
    possibly match; a text without any skips it (a 1 MB Bash output then costs
    milliseconds, not a second). ``cased``: for a rule that matches one letter
    case only, a case-sensitive pattern searched in the text itself instead of
    ``hints`` (one search, not one scan per hint).

    Where the rule is tried (one of): ``lines``, a case-sensitive pattern every
    match holds, for a rule whose matches never span a newline: only the lines
    where it occurs are tried; ``ops``, literals of which one is on every
    matching line (with a hint): those lines are tried; ``gate``, a test of the
    folded text, then the whole text; otherwise ``starts``, a case-sensitive
    pattern found over the lowercased text wherever a match can begin (``lits``:
    the literals every such beginning starts with; ``back``: a match begins up
    to that many characters before, for a leading ``(?:^|\\s)``).

    ``replace(rule, tags)`` builds the ``re.sub`` replacement, adding the tags
    it applies to ``tags``; ``group`` is the part of a match it replaces.
    """

    __slots__ = (
        "tag",
        "pattern",
        "hints",
        "group",
        "cased",
        "starts",
        "lits",
        "back",
        "lines",
        "ops",
        "gate",
        "replace",
    )

    def __init__(
        self,
        tag: str,
        pattern: str,
        hints=(),
        *,
        group=0,
        flags: int = 0,
        cased: str | None = None,
        starts: str | None = None,
        lits: tuple = (),
        back: int = 0,
        lines: str | None = None,
        ops: tuple = (),
        gate=None,
        replace=rp.group,
    ):
        self.tag, self.pattern, self.group = tag, Lazy(pattern, flags), group
        self.hints = frozenset((cased,) if cased else hints)
        self.cased = Lazy(cased) if cased else None
        self.starts, self.lits, self.back = (Lazy(starts) if starts else None), tuple(lits), back
        self.lines, self.ops, self.gate, self.replace = (Lazy(lines) if lines else None), tuple(ops), gate, replace

    def __repr__(self) -> str:
        return f"Rule({self.tag!r}, {self.pattern.source[:40]!r}...)"


# What follows the '@' that ends a URL's password: a host with a dot or a port, then its path.
_NOT_HOST = r"(?![\w\-]*(?:\.[\w\-]+)+(?::\d{1,5})?/|[\w.\-]+:\d{1,5}/|localhost/)"

RULES = [
    Rule(
        "private_key",
        r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY(?: BLOCK)?-----(?:.*?-----END \1PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
        ("private key",),
        flags=re.S,
        starts="-----begin ",
    ),
    Rule(
        "private_key",
        r"PuTTY-User-Key-File-\d+:.*?Private-MAC: *[0-9a-f]+",
        ("putty-user-key",),
        flags=re.S,
        starts="putty-user-key-file-",
    ),
    # scheme://user:password@host
    Rule(
        "conn_password",
        # The password runs to the last '@' of the address: a '/' (base64) or an '@'
        # (unescaped, as drivers take it) inside it is the password's, not the host's.
        # A port and a path ("host:8080/docs/@latest", "[::1]:8080/@home") is no password.
        # An '@' followed by a host and a path ("@localhost:3000/users/@bob") ends it.
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@'\"\[]{0,256}:(?!\d{1,5}/)"
        r"((?:[^\s@'\"]|@(?=[^\s@'\"]*@)" + _NOT_HOST + r"){1,512})@",
        ("://",),
        group=1,
        lines=r"://",
    ),
    Rule(
        "aws_access_key_id",
        NB + r"(?:" + "|".join(AWS) + r")[0-9A-Z]{16}" + NA,
        cased="A(?:" + "|".join(a[1:] for a in AWS) + ")",
        starts="(?:" + "|".join(AWS).lower() + ")",
    ),
    Rule("gcp_api_key", NB + r"AIza[0-9A-Za-z_\-]{35}" + NA, ("aiza",), starts="aiza"),
    Rule("gcp_client_secret", NB + r"GOCSPX-[0-9A-Za-z_\-]{20,}" + NA, ("gocspx-",), starts="gocspx-"),
    Rule("gcp_access_token", NB + r"ya29\.[0-9A-Za-z_\-]{20,}" + NA, ("ya29.",), starts=r"ya29\."),
    Rule("azure_client_secret", NB + r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + NA, ("q~",), lines=r"\dQ~"),
    Rule(
        "azure_sas",
        r"[?&](?:sig|se?cret)=([A-Za-z0-9%+/=]{20,})",
        ("sig=", "secret=", "scret="),
        group=1,
        starts=r"[?&](?:sig|se?cret)=",
    ),
    Rule(
        "github_token",
        NB + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})" + NA,
        cased="gh[pousr]_|github_pat_",
        starts="gh[pousr]_|github_pat_",
    ),
    Rule(
        "gitlab_token",
        NB + r"gl(?:pat|dt|rt|ptt|soat|cbt|imt)-[0-9A-Za-z_\-]{20,}" + NA,
        ("gl",),
        starts="gl(?:pat|dt|rt|ptt|soat|cbt|imt)-",
    ),
    Rule("slack_token", NB + r"xox[abposr]-[0-9A-Za-z\-]{10,}" + NA, ("xox",), starts="xox[abposr]-"),
    Rule("slack_token", NB + r"xapp-\d-[0-9A-Za-z\-]{10,}" + NA, ("xapp-",), starts=r"xapp-\d-"),
    Rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+",
        ("hooks.slack.com",),
        starts=r"https://hooks\.slack\.com/",
    ),
    Rule(
        "stripe_key",
        NB + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + NA,
        ("k_live_", "k_test_"),
        starts="(?:sk|rk)_(?:live|test)_",
    ),
    Rule("stripe_key", NB + r"whsec_[0-9A-Za-z]{20,}" + NA, ("whsec_",), starts="whsec_"),
    Rule("npm_token", NB + r"npm_[A-Za-z0-9]{36}" + NA, ("npm_",), starts="npm_"),
    Rule("docker_token", NB + r"dckr_pat_[A-Za-z0-9_\-]{20,}" + NA, ("dckr_pat_",), starts="dckr_pat_"),
    Rule("anthropic_key", NB + r"sk-ant-[" + TOK + r"]{20,}" + NA, ("sk-ant-",), starts="sk-ant-"),
    Rule("openai_key", NB + r"sk-(?:proj-|svcacct-|admin-)?[" + TOK + r"]{20,}" + NA, ("sk-",), starts="sk-"),
    *(
        Rule(tag, NB + re.escape(prefix) + body + NA, (prefix.lower(),), starts=re.escape(prefix.lower()))
        for tag, prefix, body in TOKEN_FORMATS
    ),
    # Formats with no fixed prefix: a Telegram bot's id:AA..., a Discord bot token (its
    # first part the base64 of a numeric id, so it holds a digit), a Terraform Cloud token.
    Rule("telegram_bot_token", NB + r"\d{8,10}:AA[A-Za-z0-9_\-]{33}" + NA, (":aa",), lines=r":AA"),
    Rule(
        "discord_token",
        NB + r"[MNO](?=[A-Za-z0-9_\-]{0,25}\d)[A-Za-z0-9_\-]{23,25}\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,38}" + NA,
        cased=r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}",
        lines=r"\.[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27}",
    ),
    Rule(
        "terraform_token",
        NB + r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}" + NA,
        (".atlasv1.",),
        lines=r"\.atlasv1\.",
    ),
    Rule(
        "jwt",
        # The header is JSON ("eyJ"); the payload need not be (a JWE's, "{ " with a space).
        NB + r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*" + NA,
        ("eyj",),
        starts=r"eyj[a-z0-9_\-]{8,}\.[a-z0-9_\-]{8}",
    ),
    # Authorization: Bearer|Basic|token <credential>
    Rule(
        "auth_header",
        r"(?i)\b(?:proxy-)?authorization\b[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token|digest)?\s*"
        r"((?!\[REDACTED)[^\s\"',;]{8,})",
        ("authorization",),
        group=1,
        starts="proxy-authorization[\"']?\\s*[:=]|authorization[\"']?\\s*[:=]",
    ),  # a literal first: fast
    Rule(
        "auth_header",
        r"(?i)\bbearer\s+((?!\[REDACTED)[A-Za-z0-9+/=_\-.~]{16,})",
        ("bearer",),
        group=1,
        starts=r"bearer\s",
    ),
    # curl -u user:password, netrc "login x password y"
    Rule(
        "basic_auth",
        r"(?:^|\s)(?:-[A-Za-z]*u|--user|-a|--auth)\s*['\"]?[^\s:'\"[]*:((?!\[REDACTED)[^\s'\"]{3,})",
        ("-", "--user", "--auth"),
        group=1,
        starts=r"-(?:[a-z]*u|-user|a|-auth)",
        back=1,
    ),
    Rule(
        "cli_secret",
        r"\bsshpass\b[^\n]{0,100}?\s-p\s*['\"]?((?!\[REDACTED)[^\s'\"]{3,})",
        ("sshpass",),
        group=1,
        starts="sshpass",
    ),
    Rule(
        "cli_secret",
        r"\bredis-cli\b[^\n]{0,200}?\s(?:-a|--pass)\s+['\"]?((?!\[REDACTED)[^\s'\"]{3,})",
        ("redis-cli",),
        group=1,
        starts="redis-cli",
    ),
    Rule("netrc_password", r"(?i)\blogin\s+\S+\s+password\s+(\S+)", ("login",), group=1, starts=r"login\s"),
    # redis.conf's and redis-server's requirepass / masterauth: the directive names the secret
    Rule(
        "secret_value",
        r"(?m)(?:^|(?<=[ \t])|(?<=--))(?:requirepass|masterauth)[ \t]+"
        r"(?:\"(?P<v1>[^\"\n]+)\"|'(?P<v2>[^'\n]+)'|(?P<v>(?!\[REDACTED|\$)[^\s\"']+))",
        ("requirepass", "masterauth"),
        lines=r"requirepass|masterauth",
        replace=rp.value,
    ),
    # --password x, --token=x, mysql -pSECRET
    Rule(
        "cli_secret",
        r"(?i)(?:^|\s)--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|passcode|token|api-key|apikey|secret|"
        r"client-secret|auth-token)(?:=|[ \t]+)['\"]?((?!\[REDACTED|-)[^\s'\"]{3,})",
        ("--",),
        group=1,
        starts=r"--(?:[a-z0-9]+-)*(?:password|passwd|pass|passphrase|passcode|token|api-key|apikey|secret|client-secret"
        r"|auth-token)",
        back=1,
    ),
    # --private-key x, --signing-key=x (not a key file's path: --private-key ~/.ssh/id_rsa); a weak
    # --stripe-key / --deploy-token when its value is shaped like a credential
    Rule(
        "cli_secret",
        r"(?i)(?:^|\s)--(?:[a-z0-9]+-)*(?:pwd|credentials?|(?:private|secret|signing|encryption|master|access|"
        r"session|client|auth|api|app)-key|(?P<weak>key|token))(?:=|[ \t]+)['\"]?"
        + WEAK_VALUE
        + r"((?!\[REDACTED|-|[/~$<]"
        r"|\.\.?/|[^\s'\"]*\.(?:pem|key|p12|pfx|json|crt|der|txt|ppk|jks|gpg|asc)(?![^\s'\"]))[^\s'\"]{3,})",
        ("--",),
        group=2,
        starts=r"--(?:[a-z0-9]+-)*(?:pwd|credential|(?:private|secret|signing|encryption|master|access|session|"
        r"client|auth|api|app)-key|key|token)",
        back=1,
    ),
    # A header given on a command line: curl -H "X-Auth-Token: x", --header 'Api-Key: x'.
    Rule(
        "secret_value",
        r"(?i)(?:^|\s)(?:-H|--header)[ \t=]*(?P<hq>[\"'])[ \t]*[A-Za-z0-9_\-]*?" + NAMED + r"[ \t]*:[ \t]*+"
        r"(?P<v>(?!\[REDACTED|\$)[^\"'\n]{2,}?)[ \t]*(?P=hq)",
        NAMED_HINTS,
        ops=("-H", "--header"),
        replace=rp.value,
    ),
    # mysql -p'x' / -p"x" (and the tools with its convention), set -x's '-px'
    # (two rules, each found by str.find of its literal start: a trigger regex without one is
    # tried at every offset)
    Rule(
        "cli_secret",
        r"(?:(?<=[\s=])|^)-p(?P<q>['\"])(?P<v>(?!\[REDACTED|\$)[^'\"\n]{2,})(?P=q)",
        ("-p",),
        starts=r"-p['\"]",
        lits=("-p",),
        replace=rp.value,
    ),
    Rule(
        "cli_secret",
        r"(?:(?<=[\s=])|^)(?P<q>['\"])-p(?P<v>(?!\[REDACTED|\$)[^'\"\s]{2,})(?P=q)",
        ("-p",),
        starts="'-p|\"-p",
        lits=("'-p", '"-p'),
        replace=rp.value,
    ),
    # (and the rest of its command: a second -p overrides the first, so both are secrets)
    Rule(
        "mysql_password",
        r"\b(?:mysql|mariadb)[a-z]*\b[^\n|;&]{0,200}?\s-p((?!\[REDACTED)[^\s'\"]{3,})(?P<rest>[^\n|;&]*)",
        ("mysql", "mariadb"),
        group=1,
        starts="mysql|mariadb",
        replace=rp.each_flag,
    ),
    # -- word rules: a secret-named key and its value -------------------------------------------------------
    # NAME=value (shell / .env / env dump; quoted or not), "name": "value" (JSON),
    # name: value (YAML), name = "value" (code). The v* group is the secret.
    Rule(
        "secret_value",
        r"(?i)" + STRONG + r"[A-Za-z0-9_.\-]{0,40}(?=[\"']?\s*[:=])" + NOT_ABOUT + r"[\"']?"
        r"(?:"
        r"=(?P<q1>[\"']?)(?P<v1>(?<=[\"'])[^\"'\n]{3,}(?=[\"'])|(?!\[REDACTED|\$\{|\$\()[^\s\"';&]{3,})"
        r"|\s*(?::=|=>|=|:)\s*(?P<q2>[\"'])(?P<v2>(?!\[REDACTED|\$\{)[^\"'\n]{3,})(?P=q2)"
        r"|\s*(?::|=)[ \t]*(?P<v3>(?!\[REDACTED)" + SECRETISH + r"))",
        STRONG_HINTS,
        starts=STRONG + r"[a-z0-9_.\-]{0,40}[\"']?\s*[:=]",
        lits=(*STRONG_HINTS, "client", "_authtoken"),  # the hints, and the names' other first words
        replace=rp.assignment,
    ),
    Rule(
        "secret_value",
        r"(?i)" + WEAK_END + r"[\"']?\s*(?::=|=>|=|:)\s*[\"']?(?P<v>(?!\[REDACTED)" + CREDENTIAL + r")",
        WEAK_HINTS,
        starts=WEAK_END + r"[\"']?\s*[:=]",
        lits=WEAK_HINTS,
        replace=rp.weak,
    ),
    Rule(
        "secret_near_keyword",
        r"(?i)\b" + NEAR_WORDS + r"[A-Za-z_]{0,40}[\"']?"
        r"(?:\s*(?:[:=]|is|:=|=>)\s*|\s+)[\"']?(?P<v>(?!\[REDACTED)(?=[A-Za-z0-9+/_\-]{0,200}\d)"
        r"(?=[A-Za-z0-9+/_\-]{0,200}[A-Za-z])[A-Za-z0-9+/_\-]{20,}={0,2})(?![A-Za-z0-9+/_\-=])",
        NEAR_HINTS,
        starts=NEAR_WORDS + r"[a-z_]{0,40}[\"']?[\s:=i]",
        lits=NEAR_HINTS,
        replace=rp.near,
    ),
    # key: value / key=value / "key": "value", as the last thing on its line (YAML,
    # JSON, .env, properties, HCL, grep hits with their path prefix). The name must
    # END in a secret word, so secretName, passwordFile, token_count are not values.
    Rule(
        "secret_value",
        r"(?im)(?P<key>" + NAMED + r")[\"']?"
        r"(?P<sp1>[ \t]*)(?P<sep>:|=)(?P<sp2>[ \t]*)(?P<q>[\"']?)(?P<v>[^\s\"'#,]{2,}?)(?P=q)"
        r"(?=[ \t]*,?[ \t]*(?:#[^\n]*)?$)",
        NAMED_HINTS,
        starts=NAMED_FLAT + r"[\"']?[ \t]*[:=]",
        lits=NAMED_LITS,
        replace=rp.keyed,
    ),
    # Build files: NAME ?= v, NAME := v, NAME += v, export NAME ?= v, override NAME ::= v, at
    # the start of a line (after a grep prefix); the value runs to the line's end or a comment.
    Rule(
        "secret_value",
        r"(?im)^(?:[^\s:]*[:\-](?:\d+[:\-])?|\d+[:\-])??[ \t]*(?:(?:export|override)[ \t]+)*"
        r"(?P<name>[A-Za-z0-9_.\-]*?" + NAMED + r"s?)[ \t]*"
        r"(?P<sep>\?=|:::=|::=|:=|\+=)[ \t]*(?:(?P<q>[\"'])(?P<v>(?!\[REDACTED)[^\"'\n]+)(?P=q)"
        r"|(?P<v2>(?!\[REDACTED)[^\s#][^#\n]*?))[ \t]*(?=#|$)",
        NAMED_HINTS,
        lines=r"(?:\?|::?:?|\+)=",
        replace=rp.make,
    ),
    # A name: / value: pair (Kubernetes env, ECS JSON), on one line or the next (a
    # grep context line keeps its path-N- prefix).
    Rule(
        "secret_value",
        r"(?im)\bname[\"']?[ \t]*[:=][ \t]*[\"']?[A-Za-z0-9_.\-]*" + NAMED + r"s?[\"']?[ \t]*,?[ \t]*"
        r"(?:\n(?:[^\s:]*?[:\-]\d+[:\-]|[^\s:]*?[:\-](?=[ \t]))?[ \t]*)?(?:-[ \t]+)?[\"']?value[\"']?[ \t]*[:=][ \t]*+"
        r"(?P<q>[\"']?)(?P<v>(?!\[REDACTED)[^\"'\n,}]{2,}?)(?P=q)[ \t]*(?=[,}]|$)",
        ("value",),
        starts="name[\"']?[ \t]*[:=]",
        lits=("name",),
        replace=rp.value,
    ),
    # NAME=value with a secret-named UPPER_CASE variable anywhere on a line:
    # `export DEPLOY_TOKEN=x && ...`, `docker run -e POSTGRES_PASSWORD=x`, `+ export X_SECRET=x` (set -x).
    Rule(
        "secret_value",
        r"(?<![A-Za-z0-9_])(?:[A-Z0-9_]*_)?(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|API_?KEY|"
        r"ACCESS_KEY|PRIVATE_KEY|SECRET_KEY|MASTER_KEY|AUTH|CREDENTIALS?|SALT)=(?:(?P<q>[\"'])"
        r"(?P<v1>(?!\$|\[REDACTED)[^\"'\n]{2,})(?P=q)|(?P<v2>(?!\$|\[REDACTED)[^\s\"';&|)`]{2,}))",
        NAMED_HINTS,
        lines=r"(?:TOKEN|SECRET|PASS(?:WORD|WD)?|PWD|KEY|AUTH|CREDENTIALS?|SALT)=",
        replace=rp.value,
    ),
    # 'DB_PASSWORD', 'value' (PHP define, getenv("X", "default"), tuples).
    Rule(
        "secret_value",
        r"(?i)[\"'][A-Za-z0-9_.\-]*(?:" + NAMED[3:-1] + r"|_key)[\"']\s*,\s*(?P<q>[\"'])"
        r"(?P<v>(?!\[REDACTED)[^\"'\n]{3,})(?P=q)",
        NAMED_HINTS,
        gate=named_pair_trigger,
        replace=rp.value,
    ),
    # A secret-named lookup with a literal fallback: env.DB_PASSWORD || 'x', ${ADMIN_PASSWORD:=x}.
    Rule(
        "secret_value",
        r"(?i)(?:" + NAMED + r"[\]\"')]*\s*(?:\|\||\?\?|\bor\b)\s*(?P<q>[\"'])"
        r"(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)"
        r"|\$\{(?:[A-Za-z0-9]+_)*" + NAMED + r":?[\-=](?P<v2>(?!\[REDACTED)[^}\s]{2,})\})",
        NAMED_HINTS,
        ops=("||", "??", " or ", "${"),
        replace=rp.value,
    ),
    # The same secret-named keys in the other syntaxes a tool's output shows them in (a weak
    # name, STRIPE_KEY, when its value is shaped like a credential: NAME_OR_WEAK, WEAK_VALUE).
    # JSON inside a JSON string, at any depth: \"db_password\": \"x\" (aws secretsmanager's SecretString).
    Rule(
        "secret_value",
        r"(?i)(?P<bs>\\+)\""
        + NAME_OR_WEAK
        + r"(?P=bs)\"[ \t]*:[ \t]*(?P=bs)\""
        + WEAK_VALUE
        + r"(?P<v>(?!\[REDACTED)[^\"\\\n]{2,})(?P=bs)\"",
        NAMED_HINTS,
        lines=r'\\"',
        replace=rp.literal,
    ),
    # A subscript assigned a literal: os.environ["API_KEY"] = "x", settings['db_password'] = 'x'.
    Rule(
        "secret_value",
        r"(?i)\[[ \t]*(?P<kq>[\"'])" + NAME_OR_WEAK + r"(?P=kq)[ \t]*\][ \t]*(?::|\|\||\?\?)?=[ \t]*"
        r"(?P<q>[\"'])" + WEAK_VALUE + r"(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)",
        NAMED_HINTS,
        lines=r"\][ \t]*(?::|\|\||\?\?)?=",
        replace=rp.literal,
    ),
    # XML: <db_password>x</db_password> (Maven settings, .NET, plists; a weak name's credential-shaped
    # value too: <stripe_key>), key="API_KEY" value="x".
    Rule(
        "secret_value",
        r"(?i)<(?P<tag>"
        + NAME_OR_WEAK
        + r")(?:[ \t][^<>\n]*)?>"
        + WEAK_VALUE
        + r"(?P<v>(?!\[REDACTED)[^<>\n]{2,}?)</(?P=tag)[ \t]*>",
        NAMED_HINTS,
        lines="</",
        replace=rp.literal,
    ),
    Rule(
        "secret_value",
        r"(?i)\b(?:key|name)[ \t]*=[ \t]*(?P<kq>[\"'])" + NAME_OR_WEAK + r"(?P=kq)[ \t]+value[ \t]*=[ \t]*"
        r"(?P<q>[\"'])" + WEAK_VALUE + r"(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)",
        NAMED_HINTS,
        lines=r"(?i)value[ \t]*=",
        replace=rp.literal,
    ),
    # A secret-named UPPER_CASE name (or any *_KEY), another separator, a credential-shaped value:
    # fish's `set -gx X v`, `X -> v`, `| X | v |`, tab-separated. Shaped like one (SECRETISH,
    # 16 characters or more), so `| GITHUB_TOKEN | required |` is prose; not *_AUTH (EVENT_AUTH,
    # an event's name in prose) nor *_TOKENS (MAX_TOKENS: a count).
    Rule(
        "secret_value",
        r"(?<![A-Za-z0-9_$])(?:[A-Z0-9_]*_)?(?:TOKEN|SECRET|PASSWORD|PASSWD|PASS|PWD|API_?KEY|ACCESS_KEY|"
        r"PRIVATE_KEY|SECRET_KEY|MASTER_KEY|CREDENTIALS?|SALT|[A-Z0-9]+_KEY)(?![A-Za-z0-9_])"
        r"[ \t|:>\-]*[ \t][ \t|:>\-]*[\"']?(?P<v>(?!\[REDACTED|\$)" + CREDENTIAL + r")",
        NAMED_HINTS,
        lines=r"(?:TOKEN|SECRET|PASS(?:WORD|WD)?|PWD|KEY|CREDENTIALS?|SALT)[ \t|:>\-]*[ \t]",
        replace=rp.literal,
    ),
    # A YAML block scalar: `db_password: |` and the indented lines under it.
    Rule(
        "secret_value",
        r"(?i)" + NAMED + r"s?[\"']?[ \t]*:[ \t]*[|>][+\-]?[0-9]?[ \t]*\n(?P<ind>[ \t]++)"
        r"(?P<v>(?!\[REDACTED)[^\n]+(?:\n(?P=ind)[^\n]+)*)",
        NAMED_HINTS,
        starts=NAMED_FLAT + r"s?[\"']?[ \t]*:[ \t]*[|>]",
        lits=NAMED_LITS,
        replace=rp.block,
    ),
    # -- commands and declarations that name a secret without an `=` beside it (v6) ----------------------
    # A typed declaration: `const PASSWORD: &str = "x"`, `password: str = "x"`, `val apiKey: String = "x"`,
    # `def f(token: str = "x")`; a declaration's start, not `if password: msg = "x"`; a weak name
    # (`STRIPE_KEY: &str`) when its value is shaped like a credential.
    Rule(
        "secret_value",
        r"(?im)(?:^(?:[^\s:]*:\d+[:\-])?[ \t]*|\b(?:const|let|var|val|static|mut|pub|readonly|private|public|"
        r"protected|final|export)[ \t]+|[(,][ \t]*)"
        + NAME_OR_WEAK
        + r"[ \t]*:[ \t]*[A-Za-z_&*\[][\w<>\[\]&*,.' ]{0,40}?[ \t]*="
        r"[ \t]*(?P<q>[\"'])" + WEAK_VALUE + r"(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)(?=[ \t]*(?:[;,)#]|//|$))",
        NAMED_HINTS,
        lines=r":[ \t]*[A-Za-z_&*\[][^\n=:]{0,60}=[ \t]*[\"']",  # a literal first: re skips to each ':'
        replace=rp.literal,
    ),
    # `#define API_KEY "x"`; a Dockerfile's `ENV DB_PASSWORD x` / `ARG TOKEN x` (its older, space form).
    Rule(
        "secret_value",
        r"(?im)^(?:[^\s:]*:\d+[:\-])?[ \t]*(?-i:#[ \t]*define|ENV|ARG)[ \t]+"
        + NAME_OR_WEAK
        + r"[ \t]+"
        + WEAK_VALUE
        + r"(?:(?P<q>[\"'])(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)|(?P<v2>(?!\[REDACTED)[^\s=\"'][^\n]*?))[ \t]*$",
        NAMED_HINTS,
        ops=("define ", "define\t", "ENV ", "ENV\t", "ARG ", "ARG\t"),  # not ENV inside base64
        replace=rp.value,
    ),
    # A header an nginx (or similar) directive sets: `proxy_set_header X-Api-Key x;`.
    Rule(
        "secret_value",
        r"(?i)\b(?:proxy_set_header|add_header|grpc_set_header|more_set_(?:input_)?headers|fastcgi_param|uwsgi_param)"
        r"[ \t]+[\"']?"
        + NAME_OR_WEAK
        + r"[\"']?:?[ \t]+"
        + WEAK_VALUE
        + r"(?P<q>[\"']?)(?P<v>(?!\[REDACTED|\$)[^\s;\"']{2,})(?P=q)",
        NAMED_HINTS,
        ops=("_header", "_param"),
        replace=rp.value,
    ),
    # `config set <name> <value>`: aws configure set, npm/yarn/pnpm config set, git config's secret keys.
    Rule(
        "secret_value",
        r"(?i)\bconfig(?:ure)?[ \t]+set[ \t]+(?:-\S+[ \t]+)*(?:[^\s'\"]*[:/])?"  # npm's //registry/:_authToken
        + NAME_OR_WEAK
        + r"[\"']?[ \t]+"
        + WEAK_VALUE
        + r"(?P<q>[\"']?)(?P<v>(?!\[REDACTED|\$)[^\s\"']{3,})(?P=q)",
        NAMED_HINTS,
        ops=("config", "CONFIG", "Config"),  # redis-cli CONFIG SET requirepass x
        replace=rp.value,
    ),
    # SQL: CREATE/ALTER USER|ROLE ... IDENTIFIED BY 'x' / ... WITH PASSWORD 'x' (not prose's "identified by 'name'").
    Rule(
        "secret_value",
        r"(?i)\b(?:user|role|login)\b[^\n;]{0,80}?\b(?:identified[ \t]+(?:with[ \t]+\w+[ \t]+)?by(?:[ \t]+password)?"
        r"|password)[ \t]+"
        r"(?P<q>['\"])(?P<v>(?!\[REDACTED)[^'\"\n]{2,})(?P=q)",
        ("identified", "password"),
        ops=("identified", "password", "IDENTIFIED", "PASSWORD", "Identified", "Password"),
        replace=rp.literal,
    ),
    # A registry login's -p (docker, podman, helm, ...): `docker login -u x -p y host`.
    Rule(
        "cli_secret",
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|regctl|az|cf|oc|ibmcloud|odo)\b[^\n|;&]{0,100}?"
        r"\blogin\b[^\n|;&]{0,200}?[ \t]-p(?:[ \t]+|=)['\"]?((?!\[REDACTED|\$)[^\s'\"]{3,})",
        ("login",),
        group=1,
        starts="docker|podman|nerdctl|buildah|skopeo|helm|oras|crane|regctl|az|cf|oc|ibmcloud|odo",
    ),
    # -- programs that take a password as an option or an argument (gate v8): the program says what
    # the value is, so it is a secret whatever it looks like (memtree/gate/programs.py: zip -P x, ldapsearch
    # -w x, keytool -storepass x, ssh-keygen -N x, rabbitmqctl add_user bob x, sqlplus scott/x@db, ...).
    # Found by str.find of the programs' names; every value on the command line goes.
    Rule(
        "cli_secret",
        programs.COMMAND,
        (" ",),
        starts=programs.STARTS,
        lits=programs.LITS,
        replace=rp.program_values,
    ),
    # htpasswd -b file user x, htpasswd -nbB user x: the last word is the password, whatever its first character.
    Rule(
        "cli_secret",
        r"\bhtpasswd\b(?=[^\n|;&]*[ \t]-[A-Za-z]*b)[^\n|;&]*[ \t]" + programs.ANY_WORD + r"(?=[ \t]*(?:$|[|;&]))",
        ("htpasswd",),
        flags=re.M,
        starts="htpasswd",
        replace=rp.option,
    ),
    # Samba's -U user%x (smbclient, rpcclient, net, smbcacls, ...).
    Rule(
        "cli_secret",
        r"(?:^|[ \t])(?:-U|--user(?:name)?)(?:[ \t]+|=)['\"]?[^\s%'\"]+%(?P<v>(?!\[REDACTED|\$)[^\s'\"]+)",
        ("%",),
        starts=r"-u[ \t=]|--user",
        back=1,
        replace=rp.option,
    ),
    # Oracle's user/x@db beyond the command's first: RMAN's catalog rman/x@db, SQL*Plus's connect scott/x@db
    # (the programs' own user/x are programs.py's).
    Rule(
        "cli_secret",
        r"(?i)\b(?:conn(?:ect)?|target|catalog|auxiliary)[ \t]+['\"]?[A-Za-z][\w$#.]*/"
        + programs.ORACLE_PASSWORD
        + r"@",
        ("@",),
        starts="conn|target|catalog|auxiliary",
        lits=("conn", "target", "catalog", "auxiliary"),
        replace=rp.option,
    ),
    # A password piped into the program that reads it: echo x | sudo -S, | docker login --password-stdin,
    # | passwd --stdin, | gh auth login --with-token, | openssl passwd -stdin, | chpasswd, | kinit,
    # | cryptsetup, | a command about a secret (gcloud secrets create x --data-file=-, docker secret create).
    Rule(
        "cli_secret",
        r"\b(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+)*(?:(?P<fq>['\"])%s(?:\\n)?(?P=fq)[ \t]+)?"
        + programs.VALUE
        + r"[ \t]*\|[ \t]*(?:sudo\b[^|\n;&]*?[ \t]-[A-Za-z]*S\b|[^|\n;&]*?(?:--password-stdin|--with-token"
        r"|[ \t]-stdin|--stdin|/dev/stdin)\b|[^|\n;&]*?\bsecrets?\b|chpasswd\b|kinit\b|cryptsetup\b)",
        ("echo", "printf"),
        starts="echo|printf",
        lits=("echo", "printf"),
        replace=rp.option,
    ),
    # A here-string fed to a command about a secret: vercel env add X production <<< x, gcloud secrets ... <<< x.
    Rule(
        "cli_secret",
        r"(?i)\b(?:secrets?|env[ \t]+add|token|login|passw(?:or)?d)\b[^\n|;&]*?<<<[ \t]*" + programs.VALUE,
        ("<<<",),
        ops=("<<<",),
        replace=rp.option,
    ),
    # PowerShell: ConvertTo-SecureString 'x' -AsPlainText (a plain-text password made a SecureString).
    Rule(
        "cli_secret",
        r"(?i)\bConvertTo-SecureString[ \t]+(?:-String[ \t]+)?" + programs.VALUE + r"(?=[^\n]*-AsPlainText)",
        ("convertto-securestring",),
        starts="convertto-securestring",
        replace=rp.option,
    ),
    # -- credentials a call, a markup or prose names (gate v8) ------------------------------------------------
    # requests' auth=('user', 'x'), HTTPBasicAuth('user', 'x'), .NET's NetworkCredential("user", "x").
    Rule(
        "secret_value",
        r"(?i)(?:\b(?:basic_|http_|proxy_)?auth[ \t]*=[ \t]*[(\[]|\b(?:HTTPBasicAuth|HTTPDigestAuth|HTTPProxyAuth"
        r"|BasicAuth|DigestAuth|NetworkCredential|UsernamePasswordCredentials|PasswordAuthentication)[ \t]*\()"
        r"[ \t]*(?:\w+[ \t]*=[ \t]*)?(?P<uq>['\"])[^'\"\n]*(?P=uq)[ \t]*,[ \t]*(?:\w+[ \t]*=[ \t]*)?"
        r"(?P<q>['\"])(?P<v>(?!\[REDACTED)[^'\"\n]{1,})(?P=q)",
        ("auth", "credential"),
        starts=r"auth[ \t]*=|basic_auth|http_auth|proxy_auth|httpbasicauth|httpdigestauth|httpproxyauth|basicauth"
        r"|digestauth|networkcredential|usernamepasswordcredentials|passwordauthentication",
        lits=(
            "auth",
            "basic_",
            "http_",
            "proxy_",
            "httpbasic",
            "httpdigest",
            "httpproxy",
            "basicauth",
            "digestauth",
            "networkcredential",
            "usernamepassword",
            "passwordauth",
        ),
        replace=rp.literal,
    ),
    # XML naming the secret in an attribute: <entry key="db.password">x</entry>, <property name="password">x<...
    Rule(
        "secret_value",
        r"(?i)<(?P<tag>[A-Za-z][\w:.\-]*)[ \t][^<>\n]*?\b(?:key|name)[ \t]*=[ \t]*(?P<kq>[\"'])"
        + NAME_OR_WEAK
        + r"(?P=kq)[^<>\n]*>"
        + WEAK_VALUE
        + r"(?P<v>(?!\[REDACTED)[^<>\n]{2,}?)</(?P=tag)[ \t]*>",
        NAMED_HINTS,
        lines="</",
        replace=rp.literal,
    ),
    # A token as a URL's whole user part: https://<token>@github.com/o/r (shaped like one: 20 or more
    # letters, digits, '_' or '-', with a digit and a letter; no user name is).
    Rule(
        "secret_value",
        r"://(?P<v>(?!\[REDACTED)(?=[A-Za-z0-9_\-]{0,200}\d)(?=[A-Za-z0-9_\-]{0,200}[A-Za-z])"
        r"[A-Za-z0-9_\-]{20,})@(?=[A-Za-z0-9][A-Za-z0-9.\-]*(?::\d{1,5})?(?:[/\s'\"]|$))",
        ("://",),
        flags=re.M,
        starts="://",
        replace=rp.value,
    ),
    # Prose and prompts: "the password is x", "db_password is: x" (shaped like a credential: "is required"
    # is not; a weak name's value as a credential).
    Rule(
        "secret_value",
        r"(?i)"
        + NAME_END_OR_WEAK
        + r"[ \t]+is[ \t]*:?[ \t]+(?P<q>['\"`]?)"
        + WEAK_VALUE
        + r"(?P<v>(?!\[REDACTED)"
        + SECRETISH
        + r")",
        NAMED_HINTS,
        ops=(" is ", " is:", " IS ", " Is "),
        replace=rp.literal,
    ),
    # A URL-encoded pair: ?next=%2Flogin%3Fpassword%3Dx%26..., password%3Dx.
    Rule(
        "secret_value",
        r"(?i)" + NAME_END_OR_WEAK + r"%3D" + WEAK_VALUE + r"(?P<v>(?!\[REDACTED)(?:(?!%26)[^\s&\"'<>])+)",
        NAMED_HINTS,
        ops=("%3D", "%3d"),
        replace=rp.value,
    ),
    # A table row of any case, the name its first cell and the value its second: ` db_password | x`
    # (psql), `| api_key | x |` (markdown); not a template's filter (`{{ .Values.password | b64enc }}`).
    # A strong name's value holds a capital or a digit and is no type (varchar(255), TEXT) or word; a
    # weak name's is credential-shaped.
    Rule(
        "secret_value",
        r"(?im)^(?:[^\s:|]*:\d+[:\-])?[ \t]*(?:\|[ \t]*)?" + NAME_OR_WEAK + r"[ \t]*\|[ \t]*"
        r"(?(weak)(?=" + CREDENTIAL + r")|(?-i:(?=[^\s|'\"()]{0,200}[A-Z0-9])(?![A-Z]+(?![^\s|'\"()]))))"
        r"(?P<v>(?!\[REDACTED|\$)[^\s|'\"()]{6,})[ \t]*(?=\||$)",
        NAMED_HINTS,
        lines=r"\|",
        replace=rp.value,
    ),
    # A secret-named name given a call with a literal default: password: str = Field(default='x'),
    # api_key = config.get('api', 'key', fallback='x') (a lookup whose key is secret-named, env('DB_PASSWORD',
    # 'x'), is the named pair's above).
    Rule(
        "secret_value",
        r"(?i)" + NAME_END_OR_WEAK + r"[\"']?[ \t]*(?::[ \t]*[\w\[\]., |]{1,40}?[ \t]*)?(?:=>|:=|=|:)[ \t]*"
        r"[\w.]*[ \t]*\([^()\n]*?\b(?:default|fallback)[ \t]*=[ \t]*"
        r"(?P<q>[\"'])" + WEAK_VALUE + r"(?P<v>(?!\[REDACTED)[^\"'\n]{2,})(?P=q)",
        NAMED_HINTS,
        ops=("default", "fallback"),
        replace=rp.literal,
    ),
    # SQL's PASSWORD('x') (MySQL's SET PASSWORD ... = PASSWORD('x'), OLD_PASSWORD('x')).
    Rule(
        "secret_value",
        r"(?i)\b(?:old_)?password[ \t]*\([ \t]*'(?P<v>(?!\[REDACTED)[^'\n]{2,})'[ \t]*\)",
        ("password",),
        ops=("PASSWORD(", "password(", "Password("),
        replace=rp.literal,
    ),
]

# Key material without its BEGIN/END lines: whole lines of base64 at PEM/OpenSSH
# width (a grep hit keeps its "path:N:" prefix), then the short last line.
KEY_LINE = Lazy(
    r"(?m)^(?P<pre>(?:[^\s:]+:\d+[:-])?[ \t]*[\"']?)"
    r"(?P<v>[A-Za-z0-9+/]{40,76}={0,2}|[A-Za-z0-9+/]{16,75}={1,2})(?=[\"']?[ \t]*$)"
)
KEY_TAIL = Lazy(
    r"(?m)(?<=\[REDACTED:key_material\])(?P<gap>[\"']?[ \t]*\n(?:[^\s:]+:\d+[:-])?[ \t]*[\"']?)"
    r"(?P<v>[A-Za-z0-9+/]{4,76}={0,2})(?=[\"']?[ \t]*$)"
)
BASE64 = Lazy(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
ANSI = Lazy(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
