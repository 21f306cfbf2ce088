"""Generated leak variants: every kind of secret in every syntax a tool's output
shows a secret-named key in, plus look-alikes in the same syntaxes that must
stay as they are. Seeded, so a failure names a reproducible case.

The fixture (tests/support/leaky_cases.py) names the classes; this crosses
them: a class that is redacted as ``NAME=value`` must be redacted as
``os.environ["NAME"] = "value"``, ``<name>value</name>``, JSON inside a JSON
string, ``set -gx NAME value``, a table row or a YAML block too. A value
with no name beside it (a bare hex string) is no case here: nothing tells it
from a hash.
"""

from __future__ import annotations

import base64
import json
import random
import string

_AN = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"


def _rand(r: random.Random, n: int, alpha: str = _AN) -> str:
    """``n`` characters of ``alpha`` drawn from ``r``."""
    return "".join(r.choice(alpha) for _ in range(n))


def _secrets(r: random.Random) -> dict:
    """Kind -> (the variable name it is kept under, a generator of one)."""

    def rs(n: int, alpha: str = _AN) -> str:
        return _rand(r, n, alpha)

    return {
        "aws_secret": ("AWS_SECRET_ACCESS_KEY", lambda: rs(40, _AN + "+/")),
        "password": ("DB_PASSWORD", lambda: rs(6) + "!" + rs(6, string.digits) + "#" + rs(4)),
        "hex_secret": ("APP_SECRET", lambda: rs(32, _HEX)),
        "auth_token": ("TWILIO_AUTH_TOKEN", lambda: rs(32, _HEX)),
        "api_key": ("PAYMENTS_API_KEY", lambda: rs(8, _HEX) + "-" + rs(4, _HEX) + "-" + rs(12, _HEX)),
        "github_token": ("GITHUB_TOKEN", lambda: "ghp_" + rs(36)),
        "client_secret": ("OAUTH_CLIENT_SECRET", lambda: rs(24, _AN + "_-") + rs(3, string.digits)),
    }


KINDS = len(_secrets(random.Random(0)))  # kinds of secret each syntax is crossed with


def _lower(name: str) -> str:
    return name.lower()


def _kebab(name: str) -> str:
    return "-".join(w.title() for w in name.lower().split("_"))


def _camel(name: str) -> str:
    head, *rest = name.lower().split("_")
    return head + "".join(w.title() for w in rest)


# Syntax -> a line (or lines) holding NAME and its value.
SYNTAXES = {
    "env": lambda k, v: f"{k}={v}",
    "json": lambda k, v: json.dumps({_lower(k): v}),
    "json_in_json": lambda k, v: json.dumps(json.dumps({"user": "app", _lower(k): v})),
    "json_in_json_in_json": lambda k, v: json.dumps(json.dumps(json.dumps({_lower(k): v}))),
    "secretsmanager": lambda k, v: json.dumps(
        {"Name": "prod/app", "SecretString": json.dumps({"username": "app", _camel(k): v})}, indent=4
    ),
    "subscript_double": lambda k, v: f'os.environ["{k}"] = "{v}"',
    "subscript_single": lambda k, v: f"settings['{_lower(k)}'] = '{v}'",
    "subscript_default": lambda k, v: f'config["{_lower(k)}"] ||= "{v}"',
    "xml_element": lambda k, v: f"<{_lower(k)}>{v}</{_lower(k)}>",
    "xml_element_upper": lambda k, v: f"  <{k}>{v}</{k}>",
    "xml_attributes": lambda k, v: f'<add key="{k}" value="{v}" />',
    "xml_name_value": lambda k, v: f'<env name="{k}" value="{v}"/>',
    "fish_set": lambda k, v: f"set -gx {k} {v}",
    "arrow": lambda k, v: f"{k} -> {v}",
    "table_row": lambda k, v: f"| {k} | {v} |",
    "tab_separated": lambda k, v: f"{k}\t{v}",
    "yaml": lambda k, v: f"  {_lower(k)}: {v}",
    "yaml_block": lambda k, v: f"stringData:\n  {_lower(k)}: |\n    {v}\n  other: 1",
    "yaml_folded": lambda k, v: f"  {_lower(k)}: >-\n    {v}",
    "toml": lambda k, v: f'{_lower(k)} = "{v}"',
    "ini_section": lambda k, v: f"[client]\nhost = db.internal\n{_lower(k)} = {v}",
    "docker_env": lambda k, v: f"docker run -e {k}={v} app:latest",
    # declarations and commands with no `=` or `:` right after the name (gate v6)
    "typed_const": lambda k, v: f'pub const {k}: &str = "{v}";',
    "typed_param": lambda k, v: f'def connect(host: str, {_lower(k)}: str = "{v}") -> None:',
    "c_define": lambda k, v: f'#define {k} "{v}"',
    "dockerfile_env": lambda k, v: f"ENV {k} {v}",
    "nginx_header": lambda k, v: f"    proxy_set_header X-{_kebab(k)} {v};",
    "config_set": lambda k, v: f"aws configure set {_lower(k)} {v} --profile prod",
    "redis_config_set": lambda k, v: f"127.0.0.1:6379> CONFIG SET {_lower(k)} {v}",
    "cli_flag_space": lambda k, v: f"deploy --{_kebab(k).lower()} {v} --region eu-west-1",
    "curl_header": lambda k, v: f'curl -sS -H "X-{_kebab(k)}: {v}" https://api.example.com/v1/charges',
    "weak_typed_const": lambda k, v: f'const {k.rsplit("_", 1)[0]}_SIGNING_KEY: &str = "{v}";',
    "weak_define": lambda k, v: f'#define {k.rsplit("_", 1)[0]}_KEY "{v}"',
    "weak_env": lambda k, v: f"ENV VENDOR_KEY {v}",
    # no name at all: the command says what the value is
    "sql_identified": lambda k, v: f"ALTER USER 'app'@'%' IDENTIFIED BY '{v}';",
    "sql_with_password": lambda k, v: f"CREATE ROLE app WITH LOGIN PASSWORD '{v}';",
    "registry_login": lambda k, v: f"docker login -u deploy -p {v} registry.example.com",
    # gate v8: a secret-named key in prose, URL-encoded, in a lower-case table row, an attribute, a default
    # (env_default: the named pair's rule, in Laravel's config syntax)
    "prose_is": lambda k, v: f"The {_lower(k)} is {v} for now.",
    "url_encoded": lambda k, v: f"GET /login?next=%2Fhome%3F{_lower(k)}%3D{v}%26lang%3Den HTTP/1.1",
    "table_lower": lambda k, v: f" {_lower(k)} | {v}",
    "xml_entry_key": lambda k, v: f'  <entry key="{_lower(k)}">{v}</entry>',
    "xml_property_name": lambda k, v: f'<property name="{_camel(k)}">{v}</property>',
    "env_default": lambda k, v: f"        '{_lower(k)}' => env('{k}', '{v}'),",
    "field_default": lambda k, v: f'    {_lower(k)}: str = Field(default="{v}")',
    # gate v8: no name at all: a program's password option or argument says what the value is
    "auth_tuple": lambda k, v: f'r = requests.post(url, json=body, auth=("deploy", "{v}"))',
    "basic_auth_class": lambda k, v: f'session.auth = HTTPBasicAuth("deploy", "{v}")',
    "zip_password": lambda k, v: f"zip -P {v} -q -r backup.zip src/",
    "unzip_password": lambda k, v: f"unzip -o -P '{v}' backup.zip -d out",
    "sevenzip_password": lambda k, v: f"7z a -t7z -p{v} -mhe=on backup.7z src",
    "sqlcmd_password": lambda k, v: f"sqlcmd -S db.internal -U sa -P {v} -Q 'SELECT 1'",
    "mongo_password": lambda k, v: f"mongodump --host db -u admin -p {v} --out /backup",
    "ldap_password": lambda k, v: f'ldapsearch -x -D "cn=admin,dc=example,dc=com" -w {v} -b dc=example,dc=com',
    "ldappasswd_new": lambda k, v: f"ldappasswd -x -D cn=admin,dc=example,dc=com -W -s '{v}' uid=bob,dc=example,dc=com",
    "keytool_password": lambda k, v: f"keytool -importcert -file ca.crt -keystore trust.jks -storepass {v} -noprompt",
    "gpg_passphrase": lambda k, v: f"gpg --batch --yes --passphrase {v} -d secrets.tar.gpg",
    "htpasswd_batch": lambda k, v: f"htpasswd -b -B /etc/nginx/.htpasswd admin {v}",
    "samba_user": lambda k, v: f"smbclient //fs.internal/share -U 'CORP\\svc_backup%{v}' -c ls",
    "lftp_user": lambda k, v: f"lftp -u deploy,{v} sftp://files.internal",
    "vault_login": lambda k, v: f"vault login -no-print {v}",
    "oracle_user": lambda k, v: f"sqlplus -s app_owner/{v}@//db.internal:1521/ORCL @migrate.sql",
    "oracle_quoted": lambda k, v: f"rman target 'sys/\"{v}@x\"@prod' catalog rman/{v}@rcat",
    "piped_sudo": lambda k, v: f"echo '{v}' | sudo -S systemctl restart app",
    "piped_stdin": lambda k, v: f"echo {v} | docker login -u deploy --password-stdin registry.example.com",
    "cloud_login": lambda k, v: f"oc login https://api.cluster.internal:6443 -u developer -p {v}",
    "sql_password_function": lambda k, v: f"SET PASSWORD FOR 'app'@'%' = PASSWORD('{v}');",
    "ssh_keygen": lambda k, v: f"ssh-keygen -p -f ~/.ssh/deploy -P 'old{v}' -N '{v}'",
    "openssl_k": lambda k, v: f"openssl enc -aes-256-cbc -pbkdf2 -k {v} -in db.sql -out db.sql.enc",
    "openssl_pass": lambda k, v: f"/usr/bin/openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:{v}",
    "rabbitmq_user": lambda k, v: f"rabbitmqctl add_user deploy '{v}'",
    "net_user": lambda k, v: f'net user svc_backup "{v}" /add /y',
    "cargo_login": lambda k, v: f'cargo login "{v}"',
    "poetry_basic": lambda k, v: f"poetry config http-basic.internal deploy {v}",
    "gh_secret": lambda k, v: f"gh secret set {k} --repo org/app --body '{v}'",
    "az_keyvault": lambda k, v: f"az keyvault secret set --vault-name kv --name {_kebab(k)} --value {v}",
    "aws_secret_string": lambda k, v: f"aws secretsmanager put-secret-value --secret-id prod/app --secret-string '{v}'",
    "powershell_securestring": lambda k, v: f"$pw = ConvertTo-SecureString '{v}' -AsPlainText -Force",
    "here_string": lambda k, v: f"vercel env add {k} production <<< '{v}'",
    "piped_with_token": lambda k, v: f"echo '{v}' | gh auth login --with-token",
    "npm_config_auth": lambda k, v: f"npm config set //npm.internal.example.com/:_authToken '{v}'",
    "curl_empty_user": lambda k, v: f"curl -fsS -u ':{v}' https://api.example.com/v1/me",
}

# Look-alikes in the same syntaxes: not secret-named, a reference, a placeholder,
# or prose. Each must come back unchanged.
BENIGN = [
    'os.environ["DB_PASSWORD"] = os.environ["PG_PASS_FROM_VAULT"]',
    "settings['password_min_length'] = '12'",
    'cfg["token_count"] = "4096"',
    "<token_count>4096</token_count>",
    "<password>${env.DB_PASSWORD}</password>",
    '<add key="PageSize" value="50" />',
    "| GITHUB_TOKEN | required | a personal access token with repo scope |",
    "| SECRET_KEY | Django's signing key, 50 characters |",
    "set -gx EDITOR vim",
    "TOKEN -> IDENT",
    json.dumps(json.dumps({"username": "app", "host": "db.internal", "port": 5432})),
    "  description: |\n    Rotates the 2024 credentials nightly.\n    See runbook_42.",
    "API_KEY -> ${API_KEY}",
    "\t".join(["PASSWORD_POLICY", "strict"]),
    # found in real code (bench_scale's corpus): a header's flag, a count, a format string, an event's name
    'preflight_headers["Access-Control-Allow-Credentials"] = "true"',
    'cfg["max_tokens"] = "4096"',
    "# MAX_BATCH_PREFILL_TOKENS: 4096, MAX_TOTAL_TOKENS: 8192tokensPerBatch",
    "ret['host_token'] = '%s-%s' % (host, port)",
    "# role as the EVENT_HANDSHAKE_FAILED_AUTH handshake2FailedEventName",
    'progress_token: Annotated[ProgressToken, Field(alias="progressToken")]',
    '"""Load and return a dynamic library identified by \'name\'."""',
    # the v6 syntaxes with no secret in them: a condition, a size, a path, a reference, a setting
    'if password: msg = "ok"',
    "max_tokens: int = 4096",
    "#define PASSWORD_MAX_LEN 64",
    "ENV PASSWORD_FILE /run/secrets/db_password",
    "proxy_set_header X-Api-Key $http_x_api_key;",
    "aws configure set region eu-west-1",
    "ssh-add --private-key ~/.ssh/id_ed25519",
    "deploy --signing-key ./keys/release.pem",
    "docker login -u deploy --password-stdin registry.example.com",
    "SELECT user, password FROM accounts WHERE role = 'admin'",
    # names about a secret, not the secret (gate v6)
    "PASSWORD_MIN_LENGTH=12",
    '{"passwordMinLength": "12", "secretName": "prod/db"}',
    "SECRET_NAME=prod/app/db",
    "password_file: /run/secrets/db_password",
    # the v8 syntaxes with no secret in them: an archive, a prompt, a variable, a name, prose
    "zip -r backup.zip src/ -x '*.pyc'",
    "unzip -p archive.zip README.md | head",
    "7z x archive.7z -p",
    "mongosh --host db -u admin -p --authenticationDatabase admin",
    "ldapsearch -x -W -D cn=admin -b dc=example,dc=com",
    "keytool -list -keystore ks.jks -storepass:env KS_PASS",
    "htpasswd -c /etc/nginx/.htpasswd admin",
    "smbclient -L fs.internal -U guest -N",
    "vault login -method=oidc",
    "sqlplus / as sysdba",
    "sqlplus -s @scripts/report.sql",
    "echo $PASSWORD | sudo -S apt-get update",
    "printf '%s' \"$REGISTRY_TOKEN\" | docker login -u ci --password-stdin ghcr.io",
    "r = requests.get(url, auth=(user, password))",
    "session.auth = HTTPBasicAuth(user, os.environ['PW'])",
    '<entry key="password.min.length">12</entry>',
    '<property name="passwordEncoder">bcrypt</property>',
    "The password is required and must be 12 characters long.",
    "the token is valid for 3600 seconds",
    "| password | string | The user's password |",
    "        'password' => env('DB_PASSWORD', ''),",
    "    password: str = Field(default=None)",
    "git clone ssh://git@github.com/org/repo.git",
    "ssh-keygen -t ed25519 -N '' -f key",
    "openssl enc -d -aes-256-cbc -pass env:BACKUP_PASS -in db.sql.enc",
    "net user svc_backup * /add",
    "gh secret set API_KEY < key.txt",
    "az keyvault secret set --vault-name kv --name api --file ./secret.txt",
    'cat <<< "$TOKEN" | gh auth login --with-token',
    "rabbitmqctl list_users",
]


def cases(seed: int = 19, per: int = 3) -> list[dict]:
    """Every kind of secret in every syntax, ``per`` times each: ``{id, text, secret}``."""
    r = random.Random(seed)
    out = []
    for kind, (name, make) in _secrets(r).items():
        for syntax, line in SYNTAXES.items():
            for i in range(per):
                secret = make()
                out.append(
                    {
                        "id": f"{kind}/{syntax}/{i}",
                        "text": f"$ tool --show\n{line(name, secret)}\ndone",
                        "secret": secret,
                    }
                )
    return out


# A weak name (a vendor's *_KEY) holds a secret when its value is shaped like a credential
# (letters and digits, 16 or more): in every syntax but a YAML block, whose rule starts at a
# secret word.
WEAK_NAME = "STRIPE_KEY"
WEAK_SKIPPED = ("yaml_block", "yaml_folded")


def weak_cases(seed: int = 23, per: int = 3) -> list[dict]:
    """A credential-shaped value under WEAK_NAME in every syntax but WEAK_SKIPPED."""
    r = random.Random(seed)
    out = []
    for syntax, line in SYNTAXES.items():
        if syntax in WEAK_SKIPPED:
            continue
        for i in range(per):
            secret = _rand(r, 20) + _rand(r, 4, string.digits)
            out.append(
                {
                    "id": f"weak/{syntax}/{i}",
                    "text": f"$ tool --show\n{line(WEAK_NAME, secret)}\ndone",
                    "secret": secret,
                }
            )
    return out


# A password in a URL (scheme://user:password@host), in every form a driver takes:
# base64 holds '/' and '+', a hand-made one '@', ':' or '#' unescaped (drivers split
# at the last '@'), or percent-escapes. The address around it varies too.
URL_PASSWORDS = {
    "alnum": lambda r: _rand(r, r.randint(12, 32)),
    "base64": lambda r: base64.b64encode(r.randbytes(r.randint(12, 30))).decode(),
    "base64_slash": lambda r: (
        _rand(r, r.randint(3, 9)) + "/" + _rand(r, r.randint(4, 12), _AN + "+/") + "/" + _rand(r, 6)
    ),
    "symbols": lambda r: _rand(r, r.randint(10, 20), _AN + "!#$^&*()-_=+[]{};,.?~"),
    "at_sign": lambda r: _rand(r, 6) + "@" + _rand(r, 6) + r.choice("!#$") + _rand(r, 4),
    "at_and_slash": lambda r: _rand(r, 5) + "@" + _rand(r, 5) + "/" + _rand(r, 6) + "@" + _rand(r, 3),
    "colon": lambda r: _rand(r, 6) + ":" + _rand(r, 8),
    "percent": lambda r: _rand(r, 6) + "%40" + _rand(r, 6) + "%2F" + _rand(r, 5),
}
URL_SCHEMES = [
    "postgres",
    "postgresql+psycopg2",
    "mysql",
    "mongodb+srv",
    "redis",
    "amqps",
    "https",
    "sftp",
    "jdbc:mysql",
]
URL_USERS = ["admin", "app_user", "svc-api", "john.doe", "user%40example.com", ""]
URL_HOSTS = ["db.internal:5432", "localhost", "10.0.0.12:6379", "cluster0.ab12c.mongodb.net", "[::1]:5432"]
URL_LINES = [
    lambda u: u,
    lambda u: f"DATABASE_URL={u}",
    lambda u: f"psql {u}",
    lambda u: f"  sqlalchemy.url: {u}",
    lambda u: f"Connecting to {u} ...",
    lambda u: f"engine = create_engine('{u}')",
    lambda u: json.dumps({"dsn": u}),
    lambda u: f'<property name="url" value="{u}"/>',
]
# Addresses with a ':' and an '@' and no password: a port and a path holding an '@'
# (a user's page, an e-mail in a REST path, a package scope), a user with no password.
URL_BENIGN = [
    "GET http://localhost:3000/api/users/@alice 200",
    "open https://example.com:8080/docs/@latest/index.html",
    "curl http://localhost:8000/api/users/alice@example.com",
    "npm view https://registry.example.com:4873/@acme/ui",
    "https://medium.com/@someone/a-post-1f2e3d",
    "git clone ssh://git@github.com:22/acme/app.git",
    "see https://user@example.com/path and git@github.com:acme/app.git",
    "http://[::1]:8080/@home",
]


# A token as a URL's whole user part (gate v8): git's https://<token>@host/..., in the token
# shapes hosts hand out; and user names in the same place, which stay.
URL_TOKENS = {
    "hex40": lambda r: _rand(r, 40, _HEX),
    "alnum36": lambda r: _rand(r, 30, _AN) + _rand(r, 6, string.digits),
    "dashed": lambda r: _rand(r, 8, _AN) + "-" + _rand(r, 12, _AN) + "_" + _rand(r, 4, string.digits),
}
URL_TOKEN_LINES = [
    lambda t: f"git clone https://{t}@github.com/org/repo.git",
    lambda t: f"remote: https://{t}@gitlab.example.com:8443/group/app.git (fetch)",
    lambda t: f'url = "https://{t}@raw.githubusercontent.com/org/repo/main/setup.sh"',
    lambda t: f"pip install git+https://{t}@github.com/org/private-lib@v1.2",
]
URL_TOKEN_BENIGN = [
    "git clone https://deploy@github.com/org/repo.git",
    "git clone https://john.doe@bitbucket.org/team/repo.git",
    "ssh://git@github.com/org/repo.git",
    "https://svc-build-2024@example.com/",
]


def url_token_cases(seed: int = 37, per: int = 2) -> list[dict]:
    """Every token shape in every line: ``{id, text, secret}``."""
    r = random.Random(seed)
    return [
        {"id": f"{shape}/{n}/{i}", "text": line(secret), "secret": secret}
        for shape, make in URL_TOKENS.items()
        for n, line in enumerate(URL_TOKEN_LINES)
        for i in range(per)
        for secret in (make(r),)
    ]


def url_cases(seed: int = 29, per: int = 3) -> list[dict]:
    """Every URL_PASSWORDS form ``per`` times in each URL_LINES line, the address's
    scheme, user and host drawn from the lists: ``{id, text, secret}``."""
    r = random.Random(seed)
    out = []
    for form, make in URL_PASSWORDS.items():
        for n, line in enumerate(URL_LINES):
            for i in range(per):
                secret = make(r)
                url = f"{r.choice(URL_SCHEMES)}://{r.choice(URL_USERS)}:{secret}@{r.choice(URL_HOSTS)}/app"
                out.append({"id": f"url/{form}/{n}/{i}", "text": f"$ tool --show\n{line(url)}\ndone", "secret": secret})
    return out


def leaked(redacted: str, secret: str) -> bool:
    """Whether any 12 characters of ``secret`` in a row survived (its base64 too)."""
    forms = [secret, base64.b64encode(secret.encode()).decode()]
    return any(f[i : i + 12] in redacted for f in forms for i in range(0, max(1, len(f) - 11)))
