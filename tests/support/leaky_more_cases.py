"""The leak classes of issue 19, written for the class (see tests/support/leaky_cases.py for the case shape).

8: a quoted password glued to a short flag (``-p'…'``, ``-p"…"``), in the command and where output echoes it;
9: build-file assignments (``NAME ?= v``, ``:=``, ``+=``, ``export NAME ?= …``) with secret-named names;
10: well-known token formats by their prefix, whatever they are called;
11: Grep context lines (``path-N-text``, ``--``), ``name:``/``value:`` pairs, hyphenated secret keys;
12: benign: lines that only reference a secret (attribute, call, subscript, env lookup), each case with a
    literal secret beside them as the positive control.
"""

from __future__ import annotations

import json

from tests.support.leaky_cases import _AN, _s, akia, b64, bash, grep, pw, read

_URL = _AN + "-_"
_HEX = "0123456789abcdef"


def _class8() -> list[dict]:
    """Quoted passwords glued to -p."""
    out = []
    p1 = pw(14)
    out.append(
        bash(
            "glued_mysql_single_quoted",
            8,
            f"mysql -h db -u root -p'{p1}' shop -e 'select count(*) from users'",
            "count(*)\n4211\n",
            [p1],
            keep=["count(*)"],
        )
    )
    p2 = pw(12) + "!#"
    out.append(
        bash(
            "glued_mysqldump_double_quoted",
            8,
            f'mysqldump -u backup -p"{p2}" --single-transaction shop',
            "-- MySQL dump 10.13\nCREATE TABLE `users` (`id` int);\n",
            [p2],
            stderr="mysqldump: [Warning] Using a password on the command line interface can be insecure.\n",
            keep=["-- MySQL dump 10.13"],
        )
    )
    p3 = pw(16)
    out.append(
        bash(
            "glued_mariadb_echoed_in_error",
            8,
            f"mariadb -uroot -p'{p3}' -h db.internal -e 'SHOW DATABASES'",
            "",
            [p3],
            stderr=f"ERROR 2005 (HY000): Unknown server host 'db.internal' for mariadb -uroot "
            f"-p'{p3}' -h db.internal\n",
        )
    )
    p4 = pw(13)
    out.append(
        bash(
            "glued_set_x_trace_quotes_the_word",
            8,
            "bash -x ./backup.sh",
            "backup done\n",
            [p4],
            stderr=f"+ mysqldump -u backup '-p{p4}' shop\n+ gzip -9 shop.sql\n",
            files={"backup.sh": "#!/bin/sh\necho backup done\n"},
            keep=["backup done"],
        )
    )
    p5 = pw(15)
    out.append(
        bash(
            "glued_ps_output_echoes_the_command",
            8,
            "ps aux | grep [m]ysql",
            f'root      4242  0.0  0.1  mysql -uroot -p"{p5}" -h db shop\n',
            [p5],
        )
    )
    p6 = pw(11)
    out.append(
        bash(
            "glued_docker_exec_mysqladmin",
            8,
            f"docker exec db mysqladmin -uroot -p'{p6}' status",
            "Uptime: 3600  Threads: 2  Questions: 17\n",
            [p6],
            keep=["Uptime: 3600"],
        )
    )
    out.append(
        bash(
            "benign_short_p_flags",
            8,
            "mkdir -p 'build/out dir' && docker run -p 8080:80 nginx",
            "started nginx on 8080\n",
            [],
            keep=["mkdir -p 'build/out dir'", "docker run -p 8080:80 nginx"],
        )
    )
    out.append(
        bash(
            "benign_p_flag_shell_reference",
            8,
            'mysql -uroot -p"$MYSQL_PWD" -e "select 1"',
            "1\n1\n",
            [],
            keep=['-p"$MYSQL_PWD"'],
        )
    )
    return out


def _class9() -> list[dict]:
    """Makefile-style assignments with secret-named names."""
    out = []
    p1 = pw(14)
    mk = f"REGISTRY ?= ghcr.io/acme\nDOCKER_PASSWORD ?= {p1}\nIMAGE := app\n\npush:\n\tdocker push $(REGISTRY)/$(IMAGE)\n"
    out.append(
        read("make_conditional_assign", 9, "Makefile", mk, [p1], keep=["REGISTRY ?= ghcr.io/acme", "IMAGE := app"])
    )
    p2 = pw(18)
    out.append(
        read(
            "make_export_conditional",
            9,
            "build/release.mk",
            f"export VERSION ?= 1.2.3\nexport NPM_AUTH_TOKEN ?= {p2}\n",
            [p2],
            keep=["export VERSION ?= 1.2.3"],
        )
    )
    p3 = pw(12)
    out.append(
        read(
            "make_simple_assign",
            9,
            "mk/db.mk",
            f"DB_HOST := localhost\nDB_PASSWORD := {p3}\n",
            [p3],
            keep=["DB_HOST := localhost"],
        )
    )
    p4, p4b = pw(16), pw(16)
    out.append(
        read(
            "make_append_and_override",
            9,
            "mk/admin.mk",
            f"ADMIN_PASSWORDS += {p4}\noverride DEPLOY_TOKEN ::= {p4b}\nCFLAGS += -O2\n",
            [p4, p4b],
            keep=["CFLAGS += -O2"],
        )
    )
    p5 = pw(13)
    out.append(
        bash(
            "make_grep_in_bash",
            9,
            "grep -n PASSWORD Makefile.ci",
            f"4:MYSQL_ROOT_PASSWORD ?= {p5}\n",
            [p5],
            files={"Makefile.ci": f"all:\n\ttrue\n\nMYSQL_ROOT_PASSWORD ?= {p5}\n"},
        )
    )
    p6 = pw(20)
    out.append(
        grep(
            "make_native_grep",
            9,
            {"mk/publish.mk": f"export GITHUB_TOKEN ?= {p6}\nexport BRANCH ?= main\n"},
            "TOKEN",
            [p6],
        )
    )
    bmk = (
        "TOKEN_LIMIT ?= 4096\nSECRETS_DIR ?= $(HOME)/.secrets\nPASSWORD_FILE := /run/secrets/db_password\n"
        "API_TOKEN ?= $(shell cat .token)\nDB_PASSWORD ?= $(VAULT_DB_PASSWORD)\n\ncount := 0\nx.token += 1\n"
    )
    out.append(
        read(
            "benign_make_references",
            9,
            "mk/refs.mk",
            bmk,
            [],
            keep=[
                "TOKEN_LIMIT ?= 4096",
                "SECRETS_DIR ?= $(HOME)/.secrets",
                "PASSWORD_FILE := /run/secrets/db_password",
                "API_TOKEN ?= $(shell cat .token)",
                "DB_PASSWORD ?= $(VAULT_DB_PASSWORD)",
                "x.token += 1",
            ],
        )
    )
    return out


def tokens() -> dict[str, str]:
    """One token per documented format (prefix, alphabet and length as the vendors publish them)."""
    return {
        "pypi": "pypi-AgEIcHlwaS5vcmc" + _s(150, _URL),
        "testpypi": "pypi-AgENdGVzdC5weXBpLm9yZw" + _s(120, _URL),
        "npm": "npm_" + _s(36),
        "ghp": "ghp_" + _s(36),
        "ghs": "ghs_" + _s(36),
        "ghr": "ghr_" + _s(36),
        "github_pat": "github_pat_" + _s(22) + "_" + _s(59),
        "glpat": "glpat-" + _s(20, _URL),
        "slack": "xoxb-" + _s(12, "0123456789") + "-" + _s(13, "0123456789") + "-" + _s(24),
        "stripe": "sk_live_" + _s(24),
        "stripe_rk": "rk_live_" + _s(40),
        "google": "AIza" + _s(35, _URL),
        "aws": akia(),
        "openai": "sk-proj-" + _s(48, _URL) + "T3BlbkFJ" + _s(20, _URL),
        "anthropic": "sk-ant-api03-" + _s(93, _URL) + "AA",
        "hf": "hf_" + _s(34),
        "digitalocean": "dop_v1_" + _s(64, _HEX),
        "sendgrid": "SG." + _s(22, _URL) + "." + _s(43, _URL),
        "twilio": "SK" + _s(32, _HEX),
        "shopify": "shpat_" + _s(32, _HEX),
        "docker": "dckr_pat_" + _s(27, _URL),
        "atlassian": "ATATT3xFfGF0" + _s(160, _URL) + "=" + _s(8, _HEX.upper()),
        "linear": "lin_api_" + _s(40),
        "vault": "hvs." + _s(90, _URL),
        "databricks": "dapi" + _s(32, _HEX),
        "sentry": "sntrys_" + _s(120),
        "grafana": "glsa_" + _s(32) + "_" + _s(8, _HEX),
        "tailscale": "tskey-auth-" + _s(12) + "-" + _s(30),
        "age": "AGE-SECRET-KEY-1" + _s(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
        "groq": "gsk_" + _s(52),
        "replicate": "r8_" + _s(37),
        "perplexity": "pplx-" + _s(48),
        "xai": "xai-" + _s(80),
        "postman": "PMAK-" + _s(24, _HEX) + "-" + _s(34, _HEX),
        "newrelic": "NRAK-" + _s(27, _AN[26:]),
        "heroku": "HRKU-AA" + _s(58, _URL),
        "rubygems": "rubygems_" + _s(48, _HEX),
        "pulumi": "pul-" + _s(40, _HEX),
        "supabase": "sbp_" + _s(40, _HEX),
        "planetscale": "pscale_tkn_" + _s(43, _AN + "_"),
        "figma": "figd_" + _s(40, _URL),
        "doppler": "dp.st.prd." + _s(40),
        "mailgun": "key-" + _s(32, _HEX),
        "notion": "secret_" + _s(43),
        "notion_ntn": "ntn_" + _s(11, "0123456789") + _s(35),
        "telegram": _s(10, "0123456789") + ":AA" + _s(33, _URL),
        "discord": "MT" + _s(2, "0123456789") + _s(20) + "." + _s(6, _URL) + "." + _s(38, _URL),
        "terraform": _s(14) + ".atlasv1." + _s(67),
        "jwt_plain_payload": "eyJhbGciOiJIUzI1NiJ9." + _s(40, _URL) + "." + _s(43, _URL),
    }


def _class10() -> list[dict]:
    """Token formats by prefix, under names that say nothing."""
    t = tokens()
    out = []
    up = (
        f"#!/bin/sh\nset -e\npython -m build\ntwine upload -u __token__ -p {t['pypi']} dist/*\n"
        f'PUBLISH_WITH="{t["testpypi"]}"\necho uploaded\n'
    )
    out.append(
        read(
            "token_pypi_upload_script",
            10,
            "release/upload.sh",
            up,
            [t["pypi"], t["testpypi"]],
            keep=["python -m build", "echo uploaded"],
        )
    )
    notes = (
        f"model pull uses {t['hf']} for now\ndroplet api: {t['digitalocean']}\nmail relay {t['sendgrid']}\n"
        f"sms {t['twilio']} (rotate monthly)\n"
    )
    out.append(
        bash(
            "token_prose_in_cat",
            10,
            "cat ops/notes.txt",
            notes,
            [t["hf"], t["digitalocean"], t["sendgrid"], t["twilio"]],
            keep=["(rotate monthly)"],
            files={"ops/notes.txt": notes},
        )
    )
    js = json.dumps(
        {
            "integrations": {
                "shop": {"store": "acme", "admin": t["shopify"]},
                "hub": t["docker"],
                "registry": t["npm"],
                "ci": t["ghs"],
                "runner": t["ghr"],
            }
        },
        indent=2,
    )
    out.append(
        read(
            "token_json_neutral_keys",
            10,
            "config/integrations.json",
            js,
            [t["shopify"], t["docker"], t["npm"], t["ghs"], t["ghr"]],
            keep=['"store": "acme"'],
        )
    )
    yml = (
        f"slack:\n  bot: {t['slack']}\nbilling:\n  primary: {t['stripe']}\n  restricted: {t['stripe_rk']}\n"
        f"maps:\n  browser: {t['google']}\nllm:\n  primary: {t['openai']}\n  fallback: {t['anthropic']}\n"
        f"cloud:\n  id: {t['aws']}\n  region: eu-west-1\n"
    )
    # path: a value line hit alone, its key on a line not shown, is not recognisable (the other cases'
    # manifests hold such lines), so the wrapped pass searches this case's folder only
    out.append(
        grep(
            "token_yaml_grep_hits",
            10,
            {"config/services.yaml": yml},
            ": ",
            path="config",
            secrets=[t[k] for k in ("slack", "stripe", "stripe_rk", "google", "openai", "anthropic", "aws")],
            keep=["region: eu-west-1"],
        )
    )
    out.append(
        bash(
            "token_in_command_line",
            10,
            f"helm upgrade api ./chart --set image.pull={t['ghp']},registry.auth={t['glpat']},"
            f"build.ref={t['github_pat']}",
            'Release "api" has been upgraded.\n',
            [t["ghp"], t["glpat"], t["github_pat"]],
            keep=['Release "api" has been upgraded.'],
        )
    )
    rest = (
        "atlassian",
        "linear",
        "vault",
        "databricks",
        "sentry",
        "grafana",
        "tailscale",
        "age",
        "groq",
        "replicate",
        "perplexity",
        "xai",
        "postman",
        "newrelic",
        "heroku",
        "rubygems",
        "pulumi",
        "supabase",
        "planetscale",
        "figma",
        "doppler",
        "mailgun",
        "notion",
        "notion_ntn",
        "telegram",
        "discord",
        "terraform",
        "jwt_plain_payload",
    )
    py = "VALUES = [\n" + "".join(f"    {t[k]!r},  # {k}\n" for k in rest) + "]\nprint(len(VALUES))\n"
    out.append(
        read(
            "token_many_vendors_in_a_list",
            10,
            "scripts/vendors.py",
            py,
            [t[k] for k in rest],
            keep=["print(len(VALUES))"],
        )
    )
    benign = (
        "from huggingface_hub import hf_hub_download\npip install scikit-learn  # sk-learn\n"
        "key-value store, see SG.md and pypi-simple\nghp_ prefix means a classic token\nsk_live_mode = False\n"
    )
    out.append(
        read(
            "benign_token_prefixes_in_prose",
            10,
            "docs/tokens.md",
            benign,
            [],
            keep=[
                "from huggingface_hub import hf_hub_download",
                "pip install scikit-learn  # sk-learn",
                "key-value store, see SG.md and pypi-simple",
                "ghp_ prefix means a classic token",
                "sk_live_mode = False",
            ],
        )
    )
    return out


def _ctx(name: str, rel: str, text: str, pattern: str, secret: str, after: int = 1, **kw) -> dict:
    """A Grep with context lines over one file holding one secret (by default the line after each hit)."""
    return grep(name, 11, {rel: text}, pattern, [secret], after=after, **kw)


def _class11() -> list[dict]:
    """Grep context lines, name/value pairs, hyphenated secret keys."""
    out = []
    p1 = pw(14)
    dep = (
        f'spec:\n  containers:\n  - name: api\n    env:\n    - name: DB_PASSWORD\n      value: "{p1}"\n'
        "    - name: LOG_LEVEL\n      value: debug\n"
    )
    out.append(
        _ctx("ctx_k8s_name_value_after", "k8s/api-deploy.yaml", dep, "PASSWORD", p1, keep=["- name: DB_PASSWORD"])
    )
    p2 = pw(18)
    ecs = json.dumps(
        {
            "containerDefinitions": [
                {
                    "name": "web",
                    "environment": [{"name": "API_TOKEN", "value": p2}, {"name": "REGION", "value": "eu-west-1"}],
                }
            ]
        },
        indent=2,
    )
    out.append(_ctx("ctx_ecs_json_name_value", "ecs/task.json", ecs, "API_TOKEN", p2, keep=['"name": "API_TOKEN",']))
    p3 = b64(pw(12))
    vals = f"redis:\n  enabled: true\n  auth:\n    redis-password: {p3}\n  port: 6379\n"
    out.append(
        _ctx(
            "ctx_hyphen_key_on_context_line",
            "charts/values.yaml",
            vals,
            "auth:",
            p3,
            before=1,
            after=2,
            keep=["enabled: true"],
        )
    )
    p4, p5 = pw(15), pw(16)
    files = {
        "k8s/a.yaml": f"env:\n- name: SMTP_PASSWORD\n  value: {p4}\n",
        "k8s/b.yaml": f"env:\n- name: WEBHOOK_SECRET\n  value: '{p5}'\n- name: MODE\n  value: prod\n",
    }
    bout = "\n".join(_ctx_bash(files, "- name:", 1)) + "\n"
    out.append(
        bash(
            "ctx_bash_grep_A1_groups",
            11,
            "grep -rn -A1 -- '- name:' k8s",
            bout,
            [p4, p5],
            files=files,
            keep=["value: prod"],
        )
    )
    p6 = pw(14)
    out.append(
        read(
            "ctx_read_env_pairs",
            11,
            "k8s/worker.yaml",
            f"env:\n- name: STRIPE_SECRET\n  value: {p6}\n- name: LOG_LEVEL\n  value: debug\n",
            [p6],
            keep=["- name: LOG_LEVEL", "value: debug"],
        )
    )
    p7 = pw(17)
    out.append(
        _ctx(
            "ctx_no_line_numbers",
            "deploy/env.yaml",
            f'- name: ADMIN_TOKEN\n  value: "{p7}"\n',
            "ADMIN_TOKEN",
            p7,
            numbers=False,
        )
    )
    p8, p9 = pw(13), pw(12)
    out.append(
        bash(
            "ctx_hyphen_cli_flags",
            11,
            f"redis-server --port 6380 --redis-password {p8} --db-password={p9}",
            "Ready to accept connections\n",
            [p8, p9],
            keep=["Ready to accept connections"],
        )
    )
    return out


def _ctx_bash(files: dict, needle: str, after: int) -> list[str]:
    from tests.support.leaky_cases import _context_lines

    return _context_lines(files, needle, True, 0, after)


def _class12() -> list[dict]:
    """Lines that only reference a secret are stored whole; a literal beside them is not."""
    out = []
    p1 = pw(14)
    py = (
        "import boto3\nfrom django.conf import settings\n\n\ndef client():\n    return boto3.client(\n"
        '        "s3",\n        aws_access_key_id=settings.AWS_ACCESS_KEY_ID,\n'
        "        aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY,\n    )\n\n\n"
        f'FALLBACK_PASSWORD = "{p1}"\n'
    )
    out.append(
        grep(
            "ref_grep_kwarg_attribute",
            12,
            {"app/storage.py": py},
            "aws_",
            [],
            keep=[
                "aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY,",
                "aws_access_key_id=settings.AWS_ACCESS_KEY_ID,",
            ],
        )
    )
    out.append(
        read(
            "ref_read_python_kwargs",
            12,
            "app/storage.py",
            py,
            [p1],
            keep=[
                "aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY,",
                "aws_access_key_id=settings.AWS_ACCESS_KEY_ID,",
            ],
        )
    )
    p2 = pw(16)
    code = (
        'conn = connect(\n    password=os.environ["DB_PASSWORD"],\n    api_key=config["api_key"],\n'
        '    token=get_token(),\n    secret=self.secret,\n    auth_token=os.getenv("AUTH_TOKEN"),\n)\n'
        f'conn.login(user="svc", password="{p2}")\n'
    )
    out.append(
        read(
            "ref_calls_subscripts_env",
            12,
            "app/conn.py",
            code,
            [p2],
            keep=[
                'password=os.environ["DB_PASSWORD"],',
                'api_key=config["api_key"],',
                "token=get_token(),",
                "secret=self.secret,",
                'auth_token=os.getenv("AUTH_TOKEN"),',
            ],
        )
    )
    p3 = pw(15)
    js = (
        "module.exports = {\n  apiKey: process.env.STRIPE_SECRET_KEY,\n  password: config.db.password,\n"
        '  token: req.headers["x-token"],\n  clientSecret: secrets.get("oauth"),\n'
        f'  legacySecret: "{p3}",\n}};\n'
    )
    out.append(
        read(
            "ref_js_object",
            12,
            "src/config.js",
            js,
            [p3],
            keep=[
                "apiKey: process.env.STRIPE_SECRET_KEY,",
                "password: config.db.password,",
                'token: req.headers["x-token"],',
                'clientSecret: secrets.get("oauth"),',
            ],
        )
    )
    p4 = pw(14)
    files = {
        "settings/base.py": 'SECRET_KEY = env("DJANGO_SECRET_KEY")\n',
        "settings/prod.py": 'AWS_SECRET_ACCESS_KEY = os.getenv("AWS_SECRET_ACCESS_KEY")\n',
        "settings/go.go": 'token := os.Getenv("GITHUB_TOKEN")\n',
        "settings/app.rb": 'password: ENV["DB_PASSWORD"],\n',
        "settings/ci.py": f'CI_SECRET_KEY = "{p4}"\n',
    }
    bout = "".join(f"{rel}:1:{text}" for rel, text in files.items())
    out.append(
        bash(
            "ref_grep_settings_bash",
            12,
            "grep -rn -i secret_key settings",
            bout,
            [p4],
            files=files,
            keep=[
                'SECRET_KEY = env("DJANGO_SECRET_KEY")',
                'AWS_SECRET_ACCESS_KEY = os.getenv("AWS_SECRET_ACCESS_KEY")',
                'token := os.Getenv("GITHUB_TOKEN")',
                'password: ENV["DB_PASSWORD"],',
            ],
        )
    )
    p5 = pw(13)
    tpl = (
        "data:\n  password: {{ .Values.db.password | b64enc }}\n  redis-password: {{ .Values.redis.password }}\n"
        f'  token: ${{API_TOKEN}}\n  api-token: "{{{{ .Values.api.token }}}}"\n  fallback-password: {p5}\n'
    )
    out.append(
        read(
            "ref_templates",
            12,
            "chart/templates/secret.yaml",
            tpl,
            [p5],
            keep=[
                "password: {{ .Values.db.password | b64enc }}",
                "redis-password: {{ .Values.redis.password }}",
                "token: ${API_TOKEN}",
                'api-token: "{{ .Values.api.token }}"',
            ],
        )
    )
    p6 = pw(16)
    env = f'AWS_SECRET_ACCESS_KEY=settings.AWS_SECRET_ACCESS_KEY,\nexport AWS_SESSION_TOKEN="{p6}"\n'
    out.append(
        grep(
            "ref_grep_uppercase_kwarg",
            12,
            {"scripts/env_kwargs.py": env},
            "AWS_",
            [p6],
            keep=["AWS_SECRET_ACCESS_KEY=settings.AWS_SECRET_ACCESS_KEY,"],
        )
    )
    refs = {
        "app/env_refs/db.py": 'DB_URL = os.environ["DATABASE_URL"]\n',
        "app/env_refs/keys.py": 'api_key=os.environ.get("API_KEY"),\n',
    }
    rout = "".join(f"{rel}:1:{text}" for rel, text in refs.items())
    out.append(
        bash(
            "ref_xargs_grep_os_environ",
            12,
            "find app/env_refs -name '*.py' | sort | xargs grep -n os.environ",
            rout,
            [],
            files=refs,
            keep=['DB_URL = os.environ["DATABASE_URL"]', 'api_key=os.environ.get("API_KEY"),'],
        )
    )
    return out


def cases() -> list[dict]:
    return _class8() + _class9() + _class10() + _class11() + _class12()
