"""The building blocks of the text rules (memtree/gate/rules.py): token
character classes, the words that make a value secret, the documented token
formats by prefix, and the hint words derived from them."""

from __future__ import annotations

from memtree.gate.lazy import Lazy

TOK = r"A-Za-z0-9_\-"  # url-safe token characters
NB = r"(?<![A-Za-z0-9_\-])"  # no token character right before (a real token start)
NA = r"(?![A-Za-z0-9_\-])"  # no token character right after

# Words that make the value assigned to them a secret, whatever it looks like.
STRONG = (
    r"(?:secret|passw(?:or)?d|pwd|api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key|"
    r"credentials?|auth[_\-]?token|access[_\-]?token|refresh[_\-]?token|client[_\-]?secret|"
    r"accountkey|sharedaccesskey|_authtoken|session[_\-]?key|signing[_\-]?key|encryption[_\-]?key|master[_\-]?key)"
)
# Names ending in these are secret only when the value also looks like one.
WEAK_END = r"(?:token|key|pass|auth|sig|signature|salt|cookie)"
SECRETISH = r"(?=[^\s'\"]{0,200}[0-9])(?=[^\s'\"]{0,200}[A-Za-z])[A-Za-z0-9+/=_\-.~!@#$%^&*]{12,}"
# SECRETISH of 16 characters or more: what a weak name's value must look like to be a secret.
CREDENTIAL = SECRETISH.replace("{12,}", "{16,}")
# A long hex/base64 blob right after a secret-like word ("token 3f9a...").
NEAR_WORDS = r"(?:secret|token|passw(?:or)?d|api[_\-\s]?key|credential|signature|auth)"
# Secret-named words for value-level rules: the value is a secret whatever it looks like.
# The words before ``key`` in a secret key name (access_key, signing-key, ...).
KEY_WORDS = ("access", "private", "client", "master", "signing", "encryption", "session", "auth", "secret", "nonce")
_NAMED_WORDS = r"(?:passw(?:or)?d|passphrase|passcode|secret|token|api[_\-]?key|apikey|salt|credentials?|pwd|pass|"
NAMED = _NAMED_WORDS + r"(?:" + "|".join(KEY_WORDS) + r"|logged[_\-]?in)[_\-]?key|key[_\-]?data)"
# The same words with no group first in any branch: ``re`` then skips ahead by
# first character when searching for candidates (the keyed rule's starts).
NAMED_FLAT = _NAMED_WORDS + "|".join(w + r"[_\-]?key" for w in (*KEY_WORDS, r"logged[_\-]?in")) + r"|key[_\-]?data)"
# A whole secret-named name in a quoted key, an element or a subscript:
# whatever comes first, ending in a secret word (db_password, AWS_SECRET_ACCESS_KEY;
# not max_tokens, a count).
SECRET_NAME = r"[A-Za-z0-9_.\-]*?" + NAMED
# A literal every named match begins with (the keyed rule's literal finder).
NAMED_LITS = ("pass", "secret", "token", "api", "salt", "credential", "pwd", *KEY_WORDS, "logged", "key")

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
    ("notion_token", "secret_", r"[A-Za-z0-9]{43}"),  # an integration's token
    ("notion_token", "ntn_", r"[0-9]{11}[A-Za-z0-9]{35}"),
)

AWS = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")
# Hints of the word rules: a lowercase literal every match holds.
STRONG_HINTS = (
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
    "master",
)
WEAK_HINTS = ("token", "key", "pass", "auth", "sig", "salt", "cookie")
NEAR_HINTS = ("secret", "token", "passw", "api", "credential", "signature", "auth")
NAMED_HINTS = frozenset(("pass", "secret", "token", "key", "salt", "credential", "pwd", "auth"))

# What every named-pair match holds (over the folded text), a name then
# ``' , '``: the rule runs only if it occurs. Searched the fast way round: the
# quote-comma-quote (a rare first character), then a name ending right at its
# first quote (the longest is 14 characters).
QUOTE_COMMA_QUOTE = Lazy(r"[\"']\s*,\s*[\"']")
NAMED_PAIR_NAME = Lazy(r"(?:" + NAMED[3:-1] + r"|_key)\Z")


def named_pair_trigger(low: str) -> bool:
    """Whether ``low`` holds a name then ``' , '``. A match's first quote always starts a
    quote-comma-quote that ``finditer`` returns: no earlier one can cover it,
    since an earlier one's closing quote follows a comma or a space, not a name."""
    name = NAMED_PAIR_NAME.rx().search
    return any(name(low, max(0, m.start() - 24), m.start()) for m in QUOTE_COMMA_QUOTE.rx().finditer(low))
