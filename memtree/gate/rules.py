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

from memtree.gate import replace as rp
from memtree.gate.lazy import Lazy

REDACTION_VERSION = 3  # 3: glued -p'x', build-file assignments, more token formats, name/value pairs, references kept


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


_TOK = r"A-Za-z0-9_\-"  # url-safe token characters
_NB = r"(?<![A-Za-z0-9_\-])"  # no token character right before (a real token start)
_NA = r"(?![A-Za-z0-9_\-])"  # no token character right after

# Words that make the value assigned to them a secret, whatever it looks like.
_STRONG = (
    r"(?:secret|passw(?:or)?d|pwd|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
    r"credentials?|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|client[_\-]?secret|"
    r"accountkey|sharedaccesskey|_authtoken|session[_\-]?key|signing[_\-]?key|encryption[_\-]?key)"
)
# Names ending in these are secret only when the value also looks like one.
_WEAK_END = r"(?:token|key|pass|auth|sig|signature|salt|cookie)"
_SECRETISH = r"(?=[^\s'\"]{0,200}[0-9])(?=[^\s'\"]{0,200}[A-Za-z])[A-Za-z0-9+/=_\-.~!@#$%^&*]{12,}"
# A long hex/base64 blob right after a secret-like word ("token 3f9a...").
_NEAR_WORDS = r"(?:secret|token|passw(?:or)?d|api[_\-\s]?key|credential|signature|auth)"
# Secret-named words for value-level rules: the value is a secret whatever it looks like.
NAMED = (
    r"(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|apikey|salt|credentials?|pwd|pass|"
    r"(?:access|private|client|master|signing|encryption|session|auth|secret|nonce|logged[_\-]?in)[_\-]?key|"
    r"key[_\-]?data)"
)
# The same words with no group first in any branch: ``re`` then skips ahead by
# first character when searching for candidates (the keyed rule's starts).
_NAMED_FLAT = (
    r"(?:passw(?:or)?d|passphrase|secret|token|api[_\-]?key|apikey|salt|credentials?|pwd|pass|"
    + "|".join(
        w + r"[_\-]?key"
        for w in (
            "access",
            "private",
            "client",
            "master",
            "signing",
            "encryption",
            "session",
            "auth",
            "secret",
            "nonce",
            r"logged[_\-]?in",
        )
    )
    + r"|key[_\-]?data)"
)

# Token formats known by their prefix (vendor documentation; the body as
# published, at least as long): (tag, prefix, body regex). Case-sensitive;
# hints and starts are the prefix lowercased.
TOKEN_FORMATS = (
    ("pypi_token", "pypi-AgE", r"[A-Za-z0-9_\-]{50,}"),  # PyPI / TestPyPI upload tokens (a macaroon)
    ("huggingface_token", "hf_", r"[A-Za-z0-9]{30,}"),
    ("digitalocean_token", "dop_v1_", r"[a-f0-9]{64}"),
    ("digitalocean_token", "doo_v1_", r"[a-f0-9]{64}"),
    ("digitalocean_token", "dor_v1_", r"[a-f0-9]{64}"),
    ("sendgrid_key", "SG.", r"[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64}"),
    ("twilio_key", "SK", r"[0-9a-fA-F]{32}"),
    ("shopify_token", "shpat_", r"[a-fA-F0-9]{32}"),
    ("shopify_token", "shpss_", r"[a-fA-F0-9]{32}"),
    ("shopify_token", "shpca_", r"[a-fA-F0-9]{32}"),
    ("shopify_token", "shppa_", r"[a-fA-F0-9]{32}"),
    ("atlassian_token", "ATATT3", r"[A-Za-z0-9_\-=]{100,}"),
    ("linear_key", "lin_api_", r"[A-Za-z0-9]{40}"),
    ("vault_token", "hvs.", r"[A-Za-z0-9_\-]{24,}"),
    ("vault_token", "hvb.", r"[A-Za-z0-9_\-]{24,}"),
    ("databricks_token", "dapi", r"[a-f0-9]{32}(?:-\d)?"),
    ("sentry_token", "sntrys_", r"[A-Za-z0-9_+/=\-]{30,}"),
    ("sentry_token", "sntryu_", r"[a-f0-9]{64}"),
    ("grafana_token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana_token", "glc_", r"[A-Za-z0-9+/]{32,}={0,2}"),
    ("tailscale_key", "tskey-", r"[a-z]+-[A-Za-z0-9]+-[A-Za-z0-9]{16,}"),
    ("age_secret_key", "AGE-SECRET-KEY-1", r"[0-9A-Z]{58}"),
    ("groq_key", "gsk_", r"[A-Za-z0-9]{48,}"),
    ("replicate_token", "r8_", r"[A-Za-z0-9]{37}"),
    ("perplexity_key", "pplx-", r"[A-Za-z0-9]{48}"),
    ("xai_key", "xai-", r"[A-Za-z0-9]{70,}"),
    ("postman_key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}"),
    ("newrelic_key", "NRAK-", r"[A-Z0-9]{27}"),
    ("heroku_token", "HRKU-", r"[A-Za-z0-9_\-]{30,}"),
    ("rubygems_key", "rubygems_", r"[a-f0-9]{48}"),
    ("pulumi_token", "pul-", r"[a-f0-9]{40}"),
    ("supabase_token", "sbp_", r"[a-f0-9]{40}"),
    ("planetscale_token", "pscale_tkn_", r"[A-Za-z0-9_\-.]{32,}"),
    ("planetscale_token", "pscale_pw_", r"[A-Za-z0-9_\-.]{32,}"),
    ("figma_token", "figd_", r"[A-Za-z0-9_\-]{40,}"),
    ("doppler_token", "dp.st.", r"[A-Za-z0-9_\-.]{40,}"),
    ("doppler_token", "dp.pt.", r"[A-Za-z0-9_\-.]{40,}"),
    ("mailgun_key", "key-", r"[0-9a-f]{32}"),
    ("npm_token", "npm_", r"[A-Za-z0-9]{36,}"),
    ("gitlab_token", "gloas-", r"[0-9A-Za-z_\-]{20,}"),
    ("gitlab_token", "glft-", r"[0-9A-Za-z_\-]{20,}"),
    ("slack_token", "xoxe.xox", r"[bp]-[0-9A-Za-z\-]{10,}"),
    ("slack_token", "xoxe-", r"\d-[0-9A-Za-z\-]{10,}"),
    ("square_token", "sq0atp-", r"[0-9A-Za-z_\-]{22,}"),
    ("square_token", "sq0csp-", r"[0-9A-Za-z_\-]{40,}"),
    ("netlify_token", "nfp_", r"[A-Za-z0-9]{36,}"),
    ("buildkite_token", "bkua_", r"[a-f0-9]{40}"),
    ("fly_token", "fo1_", r"[A-Za-z0-9_\-]{43}"),
    ("circleci_token", "CCIPAT_", r"[A-Za-z0-9]{22}_[a-f0-9]{40}"),
)

_AWS = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
# Hints of the word rules: a lowercase literal every match holds.
_STRONG_HINTS = (
    "secret",
    "passw",
    "pwd",
    "api",
    "access",
    "private",
    "credential",
    "auth",
    "refresh",
    "accountkey",
    "sharedaccesskey",
    "session",
    "signing",
    "encryption",
)
_WEAK_HINTS = ("token", "key", "pass", "auth", "sig", "salt", "cookie")
_NEAR_HINTS = ("secret", "token", "passw", "api", "credential", "signature", "auth")
NAMED_HINTS = frozenset(("pass", "secret", "token", "key", "salt", "credential", "pwd", "auth"))

# What every named-pair match holds (over the folded text), a name then
# ``' , '``: the rule runs only if it occurs. Searched the fast way round: the
# quote-comma-quote (a rare first character), then a name ending right at its
# first quote (the longest is 14 characters).
_QUOTE_COMMA_QUOTE = Lazy(r"[\"']\s*,\s*[\"']")
_NAMED_PAIR_NAME = Lazy(r"(?:" + NAMED[3:-1] + r"|_key)\Z")


def named_pair_trigger(low: str) -> bool:
    """Whether ``low`` holds a name then ``' , '``. A match's first quote always starts a
    quote-comma-quote that ``finditer`` returns: no earlier one can cover it,
    since an earlier one's closing quote follows a comma or a space, not a name."""
    name = _NAMED_PAIR_NAME.rx().search
    return any(name(low, max(0, m.start() - 24), m.start()) for m in _QUOTE_COMMA_QUOTE.rx().finditer(low))


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
        r"\b[a-zA-Z][a-zA-Z0-9+.\-]{0,30}://[^\s:/@'\"]{0,256}:([^\s@/'\"]{1,512})@",
        ("://",),
        group=1,
        lines=r"://",
    ),
    Rule(
        "aws_access_key_id",
        _NB + r"(?:" + "|".join(_AWS) + r")[0-9A-Z]{16}" + _NA,
        cased="A(?:" + "|".join(a[1:] for a in _AWS) + ")",
        starts="(?:" + "|".join(_AWS).lower() + ")",
    ),
    Rule("gcp_api_key", _NB + r"AIza[0-9A-Za-z_\-]{35}" + _NA, ("aiza",), starts="aiza"),
    Rule("gcp_client_secret", _NB + r"GOCSPX-[0-9A-Za-z_\-]{20,}" + _NA, ("gocspx-",), starts="gocspx-"),
    Rule("gcp_access_token", _NB + r"ya29\.[0-9A-Za-z_\-]{20,}" + _NA, ("ya29.",), starts=r"ya29\."),
    Rule("azure_client_secret", _NB + r"[A-Za-z0-9_~.\-]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _NA, ("q~",), lines=r"\dQ~"),
    Rule(
        "azure_sas",
        r"[?&](?:sig|se?cret)=([A-Za-z0-9%+/=]{20,})",
        ("sig=", "secret=", "scret="),
        group=1,
        starts=r"[?&](?:sig|se?cret)=",
    ),
    Rule(
        "github_token",
        _NB + r"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})" + _NA,
        cased="gh[pousr]_|github_pat_",
        starts="gh[pousr]_|github_pat_",
    ),
    Rule(
        "gitlab_token",
        _NB + r"gl(?:pat|dt|rt|ptt|soat|cbt|imt)-[0-9A-Za-z_\-]{20,}" + _NA,
        ("gl",),
        starts="gl(?:pat|dt|rt|ptt|soat|cbt|imt)-",
    ),
    Rule("slack_token", _NB + r"xox[abposr]-[0-9A-Za-z\-]{10,}" + _NA, ("xox",), starts="xox[abposr]-"),
    Rule("slack_token", _NB + r"xapp-\d-[0-9A-Za-z\-]{10,}" + _NA, ("xapp-",), starts=r"xapp-\d-"),
    Rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_\-]+",
        ("hooks.slack.com",),
        starts=r"https://hooks\.slack\.com/",
    ),
    Rule(
        "stripe_key",
        _NB + r"(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}" + _NA,
        ("k_live_", "k_test_"),
        starts="(?:sk|rk)_(?:live|test)_",
    ),
    Rule("stripe_key", _NB + r"whsec_[0-9A-Za-z]{20,}" + _NA, ("whsec_",), starts="whsec_"),
    Rule("npm_token", _NB + r"npm_[A-Za-z0-9]{36}" + _NA, ("npm_",), starts="npm_"),
    Rule("docker_token", _NB + r"dckr_pat_[A-Za-z0-9_\-]{20,}" + _NA, ("dckr_pat_",), starts="dckr_pat_"),
    Rule("anthropic_key", _NB + r"sk-ant-[" + _TOK + r"]{20,}" + _NA, ("sk-ant-",), starts="sk-ant-"),
    Rule("openai_key", _NB + r"sk-(?:proj-|svcacct-|admin-)?[" + _TOK + r"]{20,}" + _NA, ("sk-",), starts="sk-"),
    *(
        Rule(tag, _NB + re.escape(prefix) + body + _NA, (prefix.lower(),), starts=re.escape(prefix.lower()))
        for tag, prefix, body in TOKEN_FORMATS
    ),
    Rule(
        "jwt",
        _NB + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*" + _NA,
        ("eyj",),
        starts=r"eyj[a-z0-9_\-]{8,}\.eyj",
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
        r"(?:^|\s)(?:-[A-Za-z]*u|--user|-a|--auth)\s*['\"]?[^\s:'\"]+:((?!\[REDACTED)[^\s'\"]{3,})",
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
    # --password x, --token=x, mysql -pSECRET
    Rule(
        "cli_secret",
        r"(?i)(?:^|\s)--(?:[a-z0-9]+-)*(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|"
        r"auth-token)(?:=|\s+)['\"]?((?!\[REDACTED|-)[^\s'\"]{3,})",
        ("--",),
        group=1,
        starts=r"--(?:[a-z0-9]+-)*(?:password|passwd|pass|token|api-key|apikey|secret|client-secret|auth-token)",
        back=1,
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
    Rule(
        "mysql_password",
        r"\b(?:mysql|mariadb)[a-z]*\b[^\n]{0,200}?\s-p((?!\[REDACTED)[^\s'\"]{3,})",
        ("mysql", "mariadb"),
        group=1,
        starts="mysql|mariadb",
    ),
    # -- word rules: a secret-named key and its value -------------------------------------------------------
    # NAME=value (shell / .env / env dump; quoted or not), "name": "value" (JSON),
    # name: value (YAML), name = "value" (code). The v* group is the secret.
    Rule(
        "secret_value",
        r"(?i)" + _STRONG + r"[A-Za-z0-9_.\-]{0,40}[\"']?"
        r"(?:"
        r"=(?P<q1>[\"']?)(?P<v1>(?<=[\"'])[^\"'\n]{3,}(?=[\"'])|(?!\[REDACTED|\$\{|\$\()[^\s\"';&]{3,})"
        r"|\s*(?::=|=>|=|:)\s*(?P<q2>[\"'])(?P<v2>(?!\[REDACTED|\$\{)[^\"'\n]{3,})(?P=q2)"
        r"|\s*(?::|=)[ \t]*(?P<v3>(?!\[REDACTED)" + _SECRETISH + r"))",
        _STRONG_HINTS,
        starts=_STRONG + r"[a-z0-9_.\-]{0,40}[\"']?\s*[:=]",
        lits=(
            "secret",
            "passw",
            "pwd",
            "api",
            "access",
            "private",
            "credential",
            "auth",
            "refresh",
            "client",
            "accountkey",
            "sharedaccesskey",
            "_authtoken",
            "session",
            "signing",
            "encryption",
        ),
        replace=rp.assignment,
    ),
    Rule(
        "secret_value",
        r"(?i)"
        + _WEAK_END
        + r"[\"']?\s*(?::=|=>|=|:)\s*[\"']?(?P<v>(?!\[REDACTED)"
        + _SECRETISH.replace("{12,}", "{16,}")
        + r")",
        _WEAK_HINTS,
        starts=_WEAK_END + r"[\"']?\s*[:=]",
        lits=("token", "key", "pass", "auth", "sig", "salt", "cookie"),
        replace=rp.weak,
    ),
    Rule(
        "secret_near_keyword",
        r"(?i)\b" + _NEAR_WORDS + r"[A-Za-z_]{0,40}[\"']?"
        r"(?:\s*(?:[:=]|is|:=|=>)\s*|\s+)[\"']?(?P<v>(?!\[REDACTED)(?=[A-Za-z0-9+/_\-]{0,200}\d)"
        r"(?=[A-Za-z0-9+/_\-]{0,200}[A-Za-z])[A-Za-z0-9+/_\-]{20,}={0,2})(?![A-Za-z0-9+/_\-=])",
        _NEAR_HINTS,
        starts=_NEAR_WORDS + r"[a-z_]{0,40}[\"']?[\s:=i]",
        lits=("secret", "token", "passw", "api", "credential", "signature", "auth"),
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
        starts=_NAMED_FLAT + r"[\"']?[ \t]*[:=]",
        lits=(
            "pass",
            "secret",
            "token",
            "api",
            "salt",
            "credential",
            "pwd",
            "access",
            "private",
            "client",
            "master",
            "signing",
            "encryption",
            "session",
            "auth",
            "nonce",
            "logged",
            "key",
        ),
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
        r"(?:\n(?:[^\s:]*?[:\-]\d+[:\-]|[^\s:]*?[:\-](?=[ \t]))?[ \t]*)?(?:-[ \t]+)?[\"']?value[\"']?[ \t]*[:=][ \t]*"
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
