"""The gate's golden corpus: inputs and the gate's answers, recorded once.

Inputs are every string, payload, command and path of the leaky fixture
(tests/support/leaky_cases.py) plus seeded random ones built from the pieces the
rules look for; outputs are what ``redact_text``, ``redact_value``,
``command_denied``, ``path_denied`` and ``refused_outside`` answered. The
file keeps inputs beside outputs, so the fixture may grow without the check
moving: tests/unit/gate/test_gate_golden.py replays it and wants byte-identical answers.

Regenerate only when a rule changes output on purpose (say so in the commit):
    .venv/bin/python -m tests.support.gate_corpus --write
"""

from __future__ import annotations

import gzip
import json
import os
import random
import sys

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "gate_golden.jsonl.gz")

_AN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Pieces of text the rules look for (their hints, prefixes, separators), and neutral ones;
# the fast-path checks build their random text from RULE_PIECES too.
RULE_PIECES = [
    " ",
    "\n",
    "\t",
    "\u2003",
    "-u",
    "-U",
    "--user",
    "-a",
    "--auth",
    "--password",
    "--PASSWORD",
    "--token",
    "--api-key",
    "x",
    "user:pw123",
    ":",
    "'",
    '"',
    "=",
    "-",
    "--",
    "abc",
    "s3cr3tVal",
    "[REDACTED:x]",
    "-au",
    "ab:cd",
    "İ",
    "KK",
    "password=",
    "token: ",
    "AKIA",
    "ASIA",
    "akia",
    "ghp_",
    "GHP_",
    "github_pat_",
    "QUJDREVGR0hJSktMTU5PUA==",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7",
    "ABCDEFGHIJKLMNOP",
    "mysql -p",
    "'DB_PASSWORD'",
    "'x'",
    ", ",
    "','",
    '"api_key"',
    "||",
    "??",
    " or ",
    "${ADMIN_PASSWORD:=",
    "}",
    "env.DB_SECRET",
    "'val123'",
    "salt",
    "_key'",
    "session_key",
    "Passphrase",
    "Secret",
    "api_key",
    "API-KEY",
    "apikey",
    "client_secret",
    "refresh_token",
    "_authToken",
    "SharedAccessKey",
    "AccountKey",
    "signature",
    "sig",
    "cookie",
    "nonce_key",
    "logged_in_key",
    "master-key",
    "key_data",
    "credentials",
    "pwd",
    "signing_key",
    "encryption-key",
    "private key",
    "access_token",
    " is ",
    ": ",
    " = ",
    "- name: DB_PASSWORD",
    '"name": "API_TOKEN",',
    "name=x_secret",
    "value: ",
    '"value": ',
    "-p'",
    '-p"',
    " ?= ",
    " := ",
    " += ",
    "export ",
    "settings.AWS_KEY,",
    "os.environ[",
    "f(",
    ")",
    ",",
    # the syntaxes of REDACTION_VERSION 4: escaped JSON, subscripts, XML, other separators, YAML blocks
    '\\"db_password\\": \\"',
    '\\"',
    '["API_KEY"] = "',
    "<db_password>",
    "</db_password>",
    '<add key="APP_SECRET" value="',
    "set -gx GH_TOKEN ",
    " -> ",
    "| ",
    "db_password: |\n    ",
    "token: >-\n  ",
]
TEXT_TOKENS = RULE_PIECES + [
    "gho_",
    "mysql -u root -p",
    "-----BEGIN ",
    "RSA ",
    "PRIVATE KEY-----",
    "-----END ",
    "PuTTY-User-Key-File-2: ssh-rsa",
    "Private-MAC: 0a1b2c",
    "https://",
    "postgres://",
    "app:",
    "@db:5432/x",
    "AIza",
    "GOCSPX-",
    "ya29.",
    "8Q~",
    "?sig=",
    "&secret=",
    "glpat-",
    "gldt-",
    "xoxb-",
    "xapp-1-",
    "https://hooks.slack.com/services/",
    "sk_live_",
    "rk_test_",
    "whsec_",
    "npm_",
    "dckr_pat_",
    "sk-ant-",
    "sk-proj-",
    "sk-",
    "eyJhbGciOiJIUzI1",
    ".eyJzdWIiOiIxMjM0",
    ".",
    "Authorization: ",
    "Bearer ",
    "Basic ",
    "token ",
    "sshpass -p ",
    "redis-cli -a ",
    "login bob password ",
    "--password=",
    "DB_PASSWORD=",
    "API_KEY=",
    "X_SECRET=",
    "PGPASSWORD=",
    "process.env.",
    "${X_TOKEN:-",
    "password: ",
    '"password": "',
    "\x1b[32m",
    "\x1b[39m",
    "pypi-AgEI",
    "hf_",
    "dop_v1_",
    "SG.",
    "shpat_",
    "glpat-",
    "REDIS_PASSWORD",
    "redis-password:",
    "  value: ",
    "settings.AWS_SECRET_ACCESS_KEY",
    "aws_secret_access_key=",
    "os.getenv(",
    "path/a.py:3:",
    "path/a.py-4-",
    "--\n",
]
CMD_TOKENS = [
    "env",
    "printenv",
    "bash",
    "-c",
    "'env'",
    "sudo",
    "|",
    "&&",
    ";",
    "sort",
    "kubectl",
    "get",
    "secret",
    "-o",
    "yaml",
    "vault",
    "kv",
    "read",
    "terraform",
    "output",
    "cat",
    ".env",
    "~/.ssh/id_rsa",
    "x.pem",
    "README.md",
    "echo",
    "$(which env)",
    "`",
    "alias",
    "e=env",
    "export",
    "-p",
    "set",
    "declare",
    "-x",
    "FOO=1",
    "make",
    "timeout",
    "5",
    "python3 -c 'import os; print(os.environ)'",
    '"',
    "'",
    "(",
    ")",
    "eval",
    "gh",
    "auth",
    "token",
    "heroku",
    "config",
    "aws",
    "configure",
    "compgen",
    "-e",
    "grep",
    "os.environ",
    "/proc/self/environ",
    "--output=json",
    "-u",
    "X",
    "ls",
    "src/app.py",
    "sh",
    "command",
    "-v",
    "then",
    "{",
    "}",
    "nohup",
    "xargs",
    "docker",
    "inspect",
    "op",
    "mysql",
    "-pS3cr3tPass",
    "--password=hunter2",
    "sops",
    "-d",
    "secrets/db.yaml",
    "print",
    "process.env",
]
PATH_PARTS = [
    ".env",
    ".env.local",
    ".ssh",
    "id_rsa",
    "src",
    "..",
    ".",
    "config",
    ".aws",
    "credentials",
    ".docker",
    "config.json",
    "a.pem",
    "notes.txt",
    "secrets",
    "x.key",
    ".kube",
    "gh",
    "hosts.yml",
    "README.md",
    "service-account-1.json",
    "terraform.tfstate",
    "docs",
    "private",
    "id_ed25519.pub",
    ".npmrc",
    "env.py",
]


def soup(n: int, seed: int) -> list[str]:
    """``n`` seeded random texts of 1-15 rule pieces: what the rules look for, in every order."""
    rng = random.Random(seed)
    return ["".join(rng.choice(RULE_PIECES) for _ in range(rng.randrange(1, 16))) for _ in range(n)]


def _pool(rng: random.Random) -> list[str]:
    """Credential-shaped strings of assorted lengths and alphabets."""
    out = []
    for n in (6, 8, 12, 16, 20, 24, 32, 36, 40, 48, 64, 76):
        for alphabet in (_AN, _AN + "+/", "0123456789abcdef", _AN + "_-"):
            out.append("".join(rng.choice(alphabet) for _ in range(n)))
    return out


def inputs() -> list[tuple[str, list]]:
    """(function name, argument list) for every call the corpus makes."""
    import base64

    from tests.support.leaky_cases import load_cases, strings

    rng = random.Random(15)
    cases = load_cases("/srv/project")
    calls: list[tuple[str, list]] = []
    texts: list[str] = []
    for c in cases:
        texts += strings(c)
        calls.append(("redact_value", [c["payload"]]))
        cmd = (c["payload"].get("tool_input") or {}).get("command")
        if cmd:
            calls.append(("command_denied", [cmd, [], [], "/srv/project"]))
        for rel in c.get("files") or {}:
            calls.append(("path_denied", [rel, [], "/srv/project"]))
            calls.append(("refused_outside", [rel, "/srv/project", [], None]))
    pool = _pool(rng)
    tokens = TEXT_TOKENS + pool
    fuzz = ["".join(rng.choice(tokens) for _ in range(rng.randrange(1, 24))) for _ in range(6000)]
    fuzz += ["\n".join(rng.sample(fuzz, 12)) for _ in range(300)]  # several rules per text, across lines
    fuzz += [base64.b64encode(t.encode()).decode() for t in rng.sample(fuzz, 300)]  # secrets inside base64
    texts += fuzz
    calls += [("redact_text", [t]) for t in dict.fromkeys(texts)]
    for _ in range(300):
        calls.append(("redact_value", [{rng.choice(tokens): [rng.choice(fuzz), {"k": rng.choice(fuzz)}, 3, None]}]))
    extras = [[], [r"^terraform\s+plan"], ["(bad"]]
    globs = [[], ["secrets/"], ["*.secret", "docs/private/*"]]
    for _ in range(3000):
        cmd = " ".join(rng.choice(CMD_TOKENS) for _ in range(rng.randrange(1, 9)))
        calls.append(("command_denied", [cmd, rng.choice(extras), rng.choice(globs), "/srv/project"]))
    for _ in range(2000):
        p = "/".join(rng.choice(PATH_PARTS) for _ in range(rng.randrange(1, 5)))
        p = rng.choice(["", "/srv/project/", "/srv/other/"]) + p
        calls.append(("path_denied", [p, rng.choice(globs), "/srv/project"]))
        calls.append(
            (
                "refused_outside",
                [
                    p,
                    "/srv/project",
                    rng.choice([[], ["/srv/other"], ["/srv/other/*.md"]]),
                    rng.choice([None, "/srv/project/src"]),
                ],
            )
        )
    return calls


def api() -> dict:
    from memtree.gate import command_denied, path_denied, redact_text, redact_value, refused_outside

    return {
        "redact_text": redact_text,
        "redact_value": redact_value,
        "command_denied": command_denied,
        "path_denied": path_denied,
        "refused_outside": refused_outside,
    }


def answer(fns: dict, name: str, args: list):
    out = fns[name](*args)
    return list(out) if isinstance(out, tuple) else out


def write() -> int:
    fns = api()
    rows = [{"f": name, "in": args, "out": answer(fns, name, args)} for name, args in inputs()]
    data = "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows).encode()
    with open(GOLDEN, "wb") as f:
        f.write(gzip.compress(data, compresslevel=9, mtime=0))  # mtime 0: the same answers, the same bytes
    return len(rows)


def load() -> list[dict]:
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.support.gate_corpus --write")
    print(f"wrote {write()} calls to {GOLDEN}")
