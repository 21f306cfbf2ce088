"""Leak eval: generated secrets in the syntaxes tool output shows them in, under
names of every strength, against the redaction gate; and look-alikes that must
come back unchanged.

The test fixtures (tests/support/leaky_cases.py, leak_variants.py) hold the
cases the gate was built against. This crosses more: 25 names (what a secret
is kept under), 5 value shapes of random length, 83 syntaxes (assignments,
declarations, commands, headers, URLs, connection strings, logs), each case a
fresh value from ``--seed``; and 23 vendors' token formats under no name, in 4
kinds of line. A seed is no fixture: run another and the
figures should hold.

A strong name (password, api_key, signing_key, ...) makes its value a secret
whatever it looks like. A weak one (``*_key``, ``*_token`` of a vendor, bare
``token`` / ``pass``) does only when the value looks like a credential (16
characters or more, letters and digits), so a short value under a weak name
is reported apart, as the gate's known limit, not counted as a leak.

    .venv/bin/python -m memtree.eval.leak_eval [--seed N] [--seeds 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import string
import sys
from collections import Counter

from memtree.gate import redact_text

STRONG = [
    "password", "passwd", "pwd", "secret", "api_key", "apikey", "access_token", "refresh_token",
    "client_secret", "private_key", "auth_token", "db_password", "secret_key", "jwt_secret",
    "session_secret", "signing_key", "encryption_key", "master_key", "credentials", "webhook_secret",
]  # fmt: skip
WEAK = ["stripe_key", "app_key", "token", "pass", "bearer_token"]
BENIGN_NAMES = ["username", "region", "max_tokens", "token_count", "password_min_length", "key_id", "secret_name"]

_AN = string.ascii_letters + string.digits


def _rand(r: random.Random, n: int, alpha: str = _AN) -> str:
    """``n`` characters of ``alpha`` drawn from ``r``."""
    return "".join(r.choice(alpha) for _ in range(n))


def _values(r: random.Random) -> dict:
    def rs(n: int, alpha: str = _AN) -> str:
        return _rand(r, n, alpha)

    return {
        "mixed": lambda: rs(r.randrange(12, 33)),
        "password": lambda: rs(r.randrange(4, 8)) + r.choice("!@#%^*") + rs(r.randrange(2, 6), string.digits) + rs(3),
        "hex": lambda: rs(r.choice((32, 40, 64)), "0123456789abcdef"),
        "base64": lambda: base64.b64encode(bytes(r.randrange(256) for _ in range(r.randrange(18, 40)))).decode(),
        "uuid": lambda: "-".join(rs(n, "0123456789abcdef") for n in (8, 4, 4, 4, 12)),
    }


def _camel(n: str) -> str:
    head, *rest = n.split("_")
    return head + "".join(w.title() for w in rest)


def _header(n: str) -> str:
    return "-".join(w.title() for w in n.split("_"))


# Syntax -> a line holding name k and value v (some name no key: the command says what v is).
SYNTAXES = {
    "env": lambda k, v: f"{k.upper()}={v}",
    "export_quoted": lambda k, v: f"export {k.upper()}='{v}'",
    "dotenv_spaced": lambda k, v: f"{k.upper()} = {v}",
    "declare_x": lambda k, v: f'declare -x {k.upper()}="{v}"',
    "set_cmd": lambda k, v: f"set {k.upper()}={v}",
    "systemd": lambda k, v: f'Environment="{k.upper()}={v}"',
    "docker_e": lambda k, v: f'docker run -e "{k.upper()}={v}" app',
    "dockerfile_arg": lambda k, v: f"ARG {k.upper()}={v}",
    "dockerfile_env_space": lambda k, v: f"ENV {k.upper()} {v}",
    "heroku": lambda k, v: f"heroku config:set {k.upper()}={v} -a app",
    "kubectl_literal": lambda k, v: f"kubectl create secret generic app --from-literal={k}={v}",
    "json": lambda k, v: json.dumps({"user": "app", _camel(k): v}),
    "python_repr": lambda k, v: repr({"user": "app", k: v}),
    "yaml_quoted": lambda k, v: f'  {k}: "{v}"',
    "spring": lambda k, v: f"spring.datasource.{k}: {v}",
    "ini": lambda k, v: f"{k} = {v}",
    "ini_section": lambda k, v: f"[default]\nregion = eu-west-1\n{k} = {v}",
    "toml_hcl": lambda k, v: f'  {k} = "{v}"',
    "js_object": lambda k, v: f"  {_camel(k)}: '{v}',",
    "go_struct": lambda k, v: f'    {_camel(k)[0].upper() + _camel(k)[1:]}: "{v}",',
    "python_kwarg": lambda k, v: f'client = Client(host="db", {k}="{v}")',
    "python_const": lambda k, v: f'{k.upper()} = "{v}"',
    "typed_python": lambda k, v: f'    {k}: str = "{v}"',
    "typed_rust": lambda k, v: f'const {k.upper()}: &str = "{v}";',
    "java_field": lambda k, v: f'private static final String {k.upper()} = "{v}";',
    "c_define": lambda k, v: f'#define {k.upper()} "{v}"',
    "php_define": lambda k, v: f"define('{k.upper()}', '{v}');",
    "php_array": lambda k, v: f"'{k}' => '{v}',",
    "ruby_hash": lambda k, v: f':{k} => "{v}"',
    "powershell_env": lambda k, v: f'$env:{k.upper()} = "{v}"',
    "go_assign": lambda k, v: f'{_camel(k)} := "{v}"',
    "header": lambda k, v: f"X-{_header(k)}: {v}",
    "curl_header": lambda k, v: f'curl -H "X-{_header(k)}: {v}" https://api.example.com',
    "curl_form": lambda k, v: f"curl -d '{k}={v}' https://api.example.com/login",
    "nginx_header": lambda k, v: f"proxy_set_header X-{_header(k)} {v};",
    "url_query": lambda k, v: f"GET https://api.example.com/v1/items?{k}={v}&page=2",
    "jdbc": lambda k, v: f"jdbc:postgresql://db:5432/app?user=app&{k}={v}",
    "logfmt": lambda k, v: f"level=info msg=connect user=app {k}={v} host=db",
    "cli_flag": lambda k, v: f"deploy --{k.replace('_', '-')} {v} --region eu",
    "cli_flag_eq": lambda k, v: f"deploy --{k.replace('_', '-')}={v}",
    "config_set": lambda k, v: f"aws configure set {k} {v}",
    "xml_element": lambda k, v: f"<{k}>{v}</{k}>",
    "connection_string": lambda k, v: f"Server=db;Database=app;User Id=sa;Password={v};",
    "url_credentials": lambda k, v: f"postgres://app:{v}@db.internal:5432/app",
    "url_srv_dotted_user": lambda k, v: f"mongodb+srv://john.doe:{v}@cluster0.ab12c.mongodb.net/app",
    "url_no_user": lambda k, v: f"redis://:{v}@cache:6379/0",
    "url_in_code": lambda k, v: f"engine = create_engine('mysql+pymysql://app:{v}@localhost/app')",
    "sql_identified": lambda k, v: f"ALTER USER app IDENTIFIED BY '{v}';",
    "sql_password": lambda k, v: f"CREATE ROLE app WITH LOGIN PASSWORD '{v}';",
    "registry_login": lambda k, v: f"docker login -u deploy -p {v} registry.example.com",
    "mysql_cli": lambda k, v: f"mysql -h db -u root -p{v} shop",
    "basic_auth": lambda k, v: f"curl -u deploy:{v} https://api.example.com",
    "bearer": lambda k, v: f"Authorization: Bearer {v}",
    "netrc": lambda k, v: f"machine api.example.com login deploy password {v}",
    "redis_conf": lambda k, v: f"bind 127.0.0.1\nrequirepass {v}",
    # gate v8: prose, URL-encoded, a psql row, an attribute naming the key, a lookup's literal fallback
    "prose": lambda k, v: f"Note: the {k} is {v} until the rotation",
    "url_encoded": lambda k, v: f"redirect_uri=https%3A%2F%2Fapp%2Fcb%3F{k}%3D{v}%26x%3D1",
    "psql_row": lambda k, v: f" {k:<20} | {v}",
    "xml_entry": lambda k, v: f'<entry key="{k}">{v}</entry>',
    "laravel_env": lambda k, v: f"'{k}' => env('{k.upper()}', '{v}'),",
    "pydantic_default": lambda k, v: f"    {k}: SecretStr = Field(default='{v}')",
    # gate v8: programs' password options and arguments
    "zip": lambda k, v: f"zip -P {v} out.zip report.pdf",
    "sevenzip": lambda k, v: f"7za x -p{v} dump.7z",
    "sqlcmd": lambda k, v: f"sqlcmd -S tcp:db,1433 -U sa -P '{v}' -i init.sql",
    "mongosh": lambda k, v: f"mongosh 'mongodb://db:27017' -u root -p {v}",
    "ldapwhoami": lambda k, v: f"ldapwhoami -H ldaps://ldap -D uid=svc,ou=people,dc=x -w '{v}'",
    "keytool": lambda k, v: f"keytool -genkeypair -alias app -keystore app.p12 -storepass {v} -keypass {v}",
    "gpg": lambda k, v: f"gpg --pinentry-mode loopback --passphrase '{v}' --decrypt backup.gpg",
    "htpasswd": lambda k, v: f"htpasswd -nbB admin '{v}'",
    "smbclient": lambda k, v: f"smbclient -U admin%{v} //nas/share",
    "sqlplus": lambda k, v: f"sqlplus 'system/\"{v}\"@localhost:1521/XEPDB1'",
    "sudo_pipe": lambda k, v: f"echo '{v}' | sudo -S -k whoami",
    "stdin_login": lambda k, v: f"printf '%s' '{v}' | helm registry login reg.io -u ci --password-stdin",
    "requests_auth": lambda k, v: f"requests.get(url, auth=('svc', '{v}'))",
    "cf_login": lambda k, v: f"cf login -a https://api.cf.example.com -u ci -p {v}",
    "ssh_keygen_new": lambda k, v: f"ssh-keygen -q -t rsa -b 4096 -N '{v}' -f id_deploy",
    "openssl_enc": lambda k, v: f"openssl aes-256-cbc -salt -pbkdf2 -pass pass:{v} -in dump.sql -out dump.enc",
    "rabbitmqctl": lambda k, v: f"rabbitmqctl change_password admin '{v}'",
    "mysqladmin": lambda k, v: f"mysqladmin -u root password '{v}'",
    "cargo_login": lambda k, v: f"cargo login --registry internal '{v}'",
    "gh_secret": lambda k, v: f"gh secret set {k.upper()} -b '{v}' -R org/app",
    "ssm_parameter": lambda k, v: f"aws ssm put-parameter --name /prod/{k} --type SecureString --value '{v}'",
    "here_string": lambda k, v: f"gcloud secrets versions add {k} --data-file=- <<< '{v}'",
}
# Syntaxes whose value is a secret whatever the name beside it (the command or format says so).
NAMELESS = {
    "connection_string", "url_credentials", "url_srv_dotted_user", "url_no_user", "url_in_code", "sql_identified", "sql_password", "registry_login", "mysql_cli",
    "basic_auth", "bearer", "netrc", "redis_conf", "zip", "sevenzip", "sqlcmd", "mongosh", "ldapwhoami", "keytool",
    "gpg", "htpasswd", "smbclient", "sqlplus", "sudo_pipe", "stdin_login", "requests_auth", "cf_login",
    "ssh_keygen_new", "openssl_enc", "rabbitmqctl", "mysqladmin", "cargo_login", "gh_secret", "ssm_parameter",
    "here_string",
}  # fmt: skip


def _tokens(r: random.Random) -> dict:
    """Vendors' token formats (prefix, alphabet, length as published), a fresh one a call:
    under no name, only the format says what they are."""

    def rs(n: int, alpha: str = _AN) -> str:
        return _rand(r, n, alpha)

    url, hexd, digits = _AN + "_-", "0123456789abcdef", string.digits
    return {
        "github": lambda: "ghp_" + rs(36),
        "github_pat": lambda: "github_pat_" + rs(22) + "_" + rs(59),
        "gitlab": lambda: "glpat-" + rs(20, url),
        "slack": lambda: f"xoxb-{rs(11, digits)}-{rs(12, digits)}-{rs(24)}",
        "stripe": lambda: r.choice(("sk", "rk")) + "_live_" + rs(r.randrange(24, 99)),
        "openai": lambda: "sk-proj-" + rs(r.randrange(40, 120), url),
        "anthropic": lambda: "sk-ant-api03-" + rs(93, url) + "AA",
        "aws": lambda: "AKIA" + rs(16, string.ascii_uppercase + "234567"),
        "google": lambda: "AIza" + rs(35, url),
        "npm": lambda: "npm_" + rs(36),
        "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + rs(r.randrange(60, 160), url),
        "huggingface": lambda: "hf_" + rs(34),
        "sendgrid": lambda: "SG." + rs(22, url) + "." + rs(43, url),
        "twilio": lambda: "SK" + rs(32, hexd),
        "vault": lambda: "hvs." + rs(r.randrange(24, 100), url),
        "digitalocean": lambda: "dop_v1_" + rs(64, hexd),
        "shopify": lambda: "shpat_" + rs(32, hexd),
        "databricks": lambda: "dapi" + rs(32, hexd),
        "notion": lambda: "secret_" + rs(43),
        "telegram": lambda: rs(r.randrange(8, 11), digits) + ":AA" + rs(33, url),
        "discord": lambda: (
            r.choice("MNO") + rs(1, digits) + rs(r.randrange(22, 24)) + "." + rs(6, url) + "." + rs(38, url)
        ),
        "terraform": lambda: rs(14) + ".atlasv1." + rs(67),
        "jwt": lambda: "eyJhbGciOiJIUzI1NiJ9." + rs(r.randrange(20, 200), url) + "." + rs(43, url),
    }


# Lines a token shows up in with nothing naming it.
TOKEN_LINES = {
    "log": lambda t: f"2026-12-07T10:00:00Z INFO using {t} for the upload",
    "json_value": lambda t: json.dumps({"integration": {"value": t, "enabled": True}}),
    "bare": lambda t: t,
    "header": lambda t: f"curl -H 'X-Custom: {t}' https://api.example.com",
}


def leaked(redacted: str, secret: str) -> bool:
    """Whether any 10 characters of ``secret`` survived."""
    return any(secret[i : i + 10] in redacted for i in range(0, max(1, len(secret) - 9)))


def run(seed: int) -> dict:
    r = random.Random(seed)
    values = _values(r)
    out = {"cases": Counter(), "leaks": Counter(), "weak_short": Counter(), "benign": 0, "changed": 0, "examples": {}}
    for syntax, line in SYNTAXES.items():
        names = [None] if syntax in NAMELESS else STRONG + WEAK
        for name in names:
            for make in values.values():
                secret = make()
                text = f"$ cmd\n{line(name or 'password', secret)}\nexit 0"
                if not leaked(redact_text(text)[0], secret):
                    out["cases"][syntax] += 1
                    continue
                weak_short = name in WEAK and len(secret) < 16
                (out["weak_short"] if weak_short else out["leaks"])[syntax] += 1
                out["cases"][syntax] += 1
                if not weak_short:
                    out["examples"].setdefault(syntax, text.splitlines()[1])
        if syntax not in NAMELESS:  # look-alikes: a name that holds no secret, or a reference for a value
            for name in BENIGN_NAMES:
                for value in (f"{r.randrange(1, 100_000)}", "eu-west-1", "${" + name.upper() + "}"):
                    text = line(name, value)
                    out["benign"] += 1
                    out["changed"] += redact_text(text)[0] != text
            text = line("password", "$DB_PASSWORD")
            out["benign"] += 1
            out["changed"] += redact_text(text)[0] != text
    for fmt, make in _tokens(r).items():
        for shape, line in TOKEN_LINES.items():
            token = make()
            out["cases"]["token_formats"] += 1
            if leaked(redact_text(line(token))[0], token):
                out["leaks"]["token_formats"] += 1
                out["examples"].setdefault("token_formats", f"{fmt} in {shape}: {line(token)}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="first seed")
    ap.add_argument("--seeds", type=int, default=3, help="how many seeds from --seed")
    args = ap.parse_args(argv)
    total = {"cases": Counter(), "leaks": Counter(), "weak_short": Counter(), "benign": 0, "changed": 0}
    examples: dict = {}
    for seed in range(args.seed, args.seed + args.seeds):
        got = run(seed)
        for key in ("cases", "leaks", "weak_short"):
            total[key].update(got[key])
        total["benign"] += got["benign"]
        total["changed"] += got["changed"]
        for k, v in got["examples"].items():
            examples.setdefault(k, v)
    cases, leaks, weak = (sum(total[k].values()) for k in ("cases", "leaks", "weak_short"))
    print(
        f"seeds {args.seed}..{args.seed + args.seeds - 1}: {len(SYNTAXES)} syntaxes x {len(STRONG)} strong + "
        f"{len(WEAK)} weak names x 5 value shapes; {len(_tokens(random.Random(0)))} token formats x "
        f"{len(TOKEN_LINES)} lines"
    )
    print(f"  secrets: {cases} cases, {leaks} leaked ({100 * leaks / cases:.2f} %)")
    print(f"  weak name, value under 16 characters (the gate's known limit): {weak} left as they were")
    print(f"  look-alikes: {total['benign']} lines, {total['changed']} changed")
    for syntax, n in total["leaks"].most_common():
        print(f"    {syntax:22} {n:4} of {total['cases'][syntax]:4}  e.g. {examples[syntax][:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
