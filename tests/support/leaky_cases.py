"""The known-leaky fixture: the original cases (tests/fixtures/leaky/cases.jsonl)
plus cases built here, one group per leak class of issue 8 (and of issue 19, in
tests/support/leaky_more_cases.py).

Each case: a payload in Claude Code's real shape, ``expect`` (``stored`` or
``skipped``: a denied command or path stores nothing), ``secrets`` that must
never reach the store, spool or logs, ``keep``: benign strings (often secret
look-alikes) that must be stored verbatim, ``cls``: the leak class, and what
the wrapped tools need to see the same thing: ``files`` (relative path ->
text, written into the project) and ``wrapped`` (``{"tool": "read"|"grep"|
"bash", args...}``; a bash command's programs are shims printing ``shim_out``).

Fake secrets are generated from a seeded RNG, so they are stable and unique.
"""

from __future__ import annotations

import base64
import json
import os
import random

CASES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "leaky", "cases.jsonl")
# Programs the wrapped-bash pass replaces with a shim printing the case's output.
SHIMMED = (
    "kubectl",
    "vault",
    "terraform",
    "heroku",
    "curl",
    "psql",
    "mysql",
    "gh",
    "aws",
    "gcloud",
    "az",
    "op",
    "security",
    "docker",
    "git",
    "redis-cli",
    "sshpass",
    "npm",
    "node",
    "deploy",
    "http",
    "helm",
    "pg_dump",
    "mysqldump",
    "mariadb",
    "ps",
    "redis-server",
)

_R = random.Random(8)
_AN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_B64 = _AN + "+/"


def _s(n: int, alphabet: str = _AN) -> str:
    while True:  # a digit and (where the alphabet has them) both cases, like real credentials
        out = "".join(_R.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in out) and all(
            any(f(c) for c in out) for f in (str.isupper, str.islower) if any(f(a) for a in alphabet)
        ):
            return out


def ghp() -> str:
    return "ghp_" + _s(36)


def akia() -> str:
    return "AKIA" + "".join(_R.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))


def pw(n: int = 14) -> str:
    return _s(n)


def pem(kind: str = "RSA ", lines: int = 12, width: int = 64) -> tuple[str, list[str]]:
    body = [_s(width, _B64) for _ in range(lines)] + [_s(width // 2, _B64) + "=="]
    text = f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(body) + f"\n-----END {kind}PRIVATE KEY-----"
    return text, body


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


# -- payload builders ------------------------------------------------------------------


def _base(name: str, tool: str) -> dict:
    return {
        "session_id": f"leak-{name}",
        "transcript_path": "/dev/null",
        "cwd": "${PROJECT}",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_use_id": f"toolu_{name}",
    }


def _case(name, cls, expect, secrets, keep, payload: dict, files: dict, wrapped: dict) -> dict:
    return {
        "name": name,
        "cls": cls,
        "expect": expect,
        "secrets": list(secrets),
        "keep": list(keep),
        "payload": payload,
        "files": files,
        "wrapped": wrapped,
    }


def bash(name, cls, command, stdout, secrets, keep=(), expect="stored", stderr="", shim_out=None, files=None):
    p = _base(name, "Bash")
    p["tool_input"] = {"command": command, "description": f"fixture {name}"}
    p["tool_response"] = {
        "stdout": stdout,
        "stderr": stderr,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }
    wrapped = {
        "tool": "bash",
        "command": command,
        "shim_out": stdout if shim_out is None else shim_out,
        "shim_err": stderr,
    }
    return _case(name, cls, expect, secrets, keep, p, files or {}, wrapped)


def read(name, cls, rel, text, secrets, keep=(), expect="stored", start=1, count=None):
    lines = text.split("\n")
    count = len(lines) - start + 1 if count is None else count
    part = "\n".join(lines[start - 1 : start - 1 + count])
    full = "${PROJECT}/" + rel
    p = _base(name, "Read")
    p["tool_input"] = {"file_path": full, **({"offset": start, "limit": count} if start > 1 else {})}
    p["tool_response"] = {
        "type": "text",
        "file": {"filePath": full, "content": part, "numLines": count, "startLine": start, "totalLines": len(lines)},
    }
    return _case(name, cls, expect, secrets, keep, p, {rel: text}, {"tool": "read", "path": rel})


def _context_lines(files: dict, needle: str, numbers: bool, before: int, after: int) -> list[str]:
    """Grep -A/-B/-C output as ripgrep prints it: hits ``path:N:text``, context
    ``path-N-text`` (``path:text`` / ``path-text`` without -n), ``--`` between groups."""
    out: list[str] = []
    for rel, text in files.items():
        lines = text.split("\n")
        hits = [i for i, line in enumerate(lines) if needle in line]
        last = None
        for i in hits:
            lo, hi = max(0, i - before), min(len(lines) - 1, i + after)
            if last is not None and lo <= last:
                lo = last + 1
            elif out:
                out.append("--")
            for k in range(lo, hi + 1):
                sep = ":" if k in hits else "-"
                out.append(f"{rel}{sep}{k + 1}{sep}{lines[k]}" if numbers else f"{rel}{sep}{lines[k]}")
            last = max(hi, last if last is not None else -1)
    return out


def grep(
    name,
    cls,
    files: dict,
    pattern,
    secrets,
    keep=(),
    numbers=True,
    expect="stored",
    regex=None,
    multiline_block=None,
    before=0,
    after=0,
    path=None,
):
    """Content-mode Grep over ``files`` (hits found here with ``regex``, default the pattern as text),
    with ``before``/``after`` context lines (-B/-A) as ripgrep prints them."""
    out = []
    if before or after:
        out = _context_lines(files, regex or pattern, numbers, before, after)
    for rel, text in files.items() if not out else ():
        for i, line in enumerate(text.split("\n"), 1):
            if (regex or pattern) in line or (
                multiline_block and rel == multiline_block[0] and multiline_block[1] <= i <= multiline_block[2]
            ):
                out.append(f"{rel}:{i}:{line}" if numbers else f"{rel}:{line}")
    p = _base(name, "Grep")
    p["tool_input"] = {
        "pattern": pattern,
        "output_mode": "content",
        "-n": numbers,
        **({"multiline": True} if multiline_block else {}),
        **({"-B": before} if before else {}),
        **({"-A": after} if after else {}),
        **({"path": path} if path else {}),
    }
    p["tool_response"] = {
        "mode": "content",
        "numFiles": 0,
        "filenames": [],
        "content": "\n".join(out),
        "numLines": len(out),
    }
    wrapped = {
        "tool": "grep",
        "pattern": pattern,
        **({"context": max(before, after)} if before or after else {}),
        **({"path": path} if path else {}),
    }
    return _case(name, cls, expect, secrets, keep, p, dict(files), wrapped)


# -- the cases, by class ---------------------------------------------------------------


def _class1() -> list[dict]:
    """Metadata of wrapped tools: the command, the pattern, the path."""
    t, p1, a, s2 = ghp(), pw(), akia(), "sk_live_" + _s(24)
    hook = "https://hooks.slack.com/services/T" + _s(8) + "/B" + _s(8) + "/" + _s(24)
    return [
        bash(
            "meta_curl_bearer_pgpassword",
            1,
            f"curl -s -H 'Authorization: Bearer {t}' https://api.github.com/user && PGPASSWORD={p1} psql -h db -c 'select 1'",
            '{"login": "octocat", "id": 1}\n ?column? \n----------\n        1\n',
            [t, p1],
            keep=['"login": "octocat"'],
        ),
        grep(
            "meta_grep_aws_key_id",
            1,
            {"cases/meta1/deploy.sh": f"#!/bin/sh\naws configure set aws_access_key_id {a}\necho deployed ok\n"},
            a,
            [a],
            keep=["aws configure set aws_access_key_id"],
        ),
        grep(
            "meta_grep_stripe_key",
            1,
            {"cases/meta2/billing.rb": f"Stripe.api_key = ENV.fetch('STRIPE', '{s2}')\nputs 'billing ready'\n"},
            s2,
            [s2],
            keep=["Stripe.api_key = ENV.fetch("],
        ),
        bash(
            "meta_description_and_url",
            1,
            f'curl -s -X POST {hook} -d \'{{"text":"deploy done"}}\'',
            "ok\n",
            [hook[-24:]],
            keep=[],
        ),
        bash(
            "meta_git_push_url_password",
            1,
            f"git push https://deploy:{p1}x@git.example.com/acme/app.git main",
            "Everything up-to-date\n",
            [p1 + "x"],
            keep=["Everything up-to-date"],
        ),
    ]


def _class2() -> list[dict]:
    """Chunk edges: keys across a 200-line window, reads from inside a key, per-line hits of key bodies."""
    out = []
    key, body = pem()
    lines = [f"line {i}: nothing secret here, just filler for the window" for i in range(1, 195)]
    text = "\n".join(lines) + "\n" + key + "\n" + "\n".join(f"tail {i} of the notes file" for i in range(60)) + "\n"
    out.append(
        read(
            "edge_key_across_window",
            2,
            "cases/edge1/notes.txt",
            text,
            body,
            keep=["line 3: nothing secret here, just filler for the window", "tail 7 of the notes file"],
        )
    )
    key2, body2 = pem()
    t2 = "config:\n  name: edge\n  tls: |\n" + "\n".join("    " + l for l in key2.split("\n")) + "\n  port: 8443\n"
    out.append(
        read("edge_read_offset_inside_key", 2, "cases/edge2/app.yaml", t2, body2[3:], start=8, keep=["port: 8443"])
    )
    key3, body3 = pem("EC ", lines=6)
    t3 = "cert bundle follows\n" + key3 + "\nend of bundle\n"
    out.append(read("edge_read_body_only", 2, "cases/edge3/bundle.txt", t3, body3[1:5], start=4, count=4))
    key4, body4 = pem("OPENSSH ", lines=8, width=70)
    t4 = "# deploy key for CI (do not commit)\nDEPLOY_KEY_TEXT = '''\n" + key4 + "\n'''\nprint('loaded')\n"
    out.append(
        grep(
            "edge_grep_key_body_lines",
            2,
            {"cases/edge4/ci_keys.py": t4},
            "[A-Za-z0-9+/]{60}",
            body4[:8],
            regex="",
            multiline_block=("cases/edge4/ci_keys.py", 4, 11),
            keep=[],
        )
    )
    key5, body5 = pem()
    t5 = "# service settings\n" + key5 + "\nTIMEOUT = 30\n"
    out.append(
        grep(
            "edge_grep_multiline_pem",
            2,
            {"cases/edge5/settings.py": t5},
            "BEGIN RSA PRIVATE KEY",
            body5,
            regex="-----BEGIN",
            multiline_block=("cases/edge5/settings.py", 2, 15),
        )
    )
    key6, body6 = pem("", lines=30)
    big = (
        "\n".join(f"filler row {i} of the generated fixture" for i in range(180))
        + "\n"
        + key6
        + "\n"
        + "\n".join(f"after row {i}" for i in range(200))
        + "\n"
    )
    out.append(
        read(
            "edge_key_straddles_window_pkcs8",
            2,
            "cases/edge6/dump.txt",
            big,
            body6,
            keep=["filler row 12 of the generated fixture"],
        )
    )
    return out


def _cred(name: str, command: str, stdout: str, secrets: list, **kw) -> dict:
    """A command whose output is a credential: denied, so none of it is stored."""
    return bash(name, 3, command, stdout, secrets, expect="skipped", **kw)


def _printed(name: str, command: str, secret: str, prefix: str = "", end: str = "\n", **kw) -> dict:
    """A command that prints one credential (after ``prefix``) and nothing else."""
    return _cred(name, command, prefix + secret + end, [secret], **kw)


def bash1(name: str, cls: int, secret: str, command: str, stdout: str, **kw) -> dict:
    """A Bash case around one secret: ``{p}`` in its command, output and stderr stands for the secret."""
    if "stderr" in kw:
        kw["stderr"] = kw["stderr"].replace("{p}", secret)
    return bash(name, cls, command.replace("{p}", secret), stdout.replace("{p}", secret), [secret], **kw)


def _class3() -> list[dict]:
    """Commands whose output is a credential."""
    out = []
    p1, p2, u1 = pw(16), pw(18), "svc" + _s(6)
    dsn = "postgres://app:" + p2 + "@db:5432/app"
    yaml = (
        f"apiVersion: v1\ndata:\n  password: {b64(p1)}\n  username: {b64(u1)}\n  DATABASE_URL: "
        f"{b64(dsn)}\nkind: Secret\nmetadata:\n  name: db-creds\n  namespace: prod\ntype: Opaque\n"
    )
    out.append(
        _cred(
            "cred_kubectl_secret_yaml",
            "kubectl get secret db-creds -n prod -o yaml",
            yaml,
            [b64(p1), b64(u1), b64(dsn), p1, p2],
        )
    )
    p3 = pw(20)
    jsonpath = "kubectl get secret db-creds -o jsonpath='{.data.password}' | base64 -d"
    out.append(_printed("cred_kubectl_jsonpath_base64", jsonpath, p3, shim_out=b64(p3)))
    p4 = pw(15)
    js = (
        json.dumps(
            {"apiVersion": "v1", "data": {"api-token": b64(p4)}, "kind": "Secret", "metadata": {"name": "api"}},
            indent=4,
        )
        + "\n"
    )
    out.append(_cred("cred_kubectl_secret_json", "kubectl get secrets api -o json", js, [b64(p4)]))
    p5, p6 = pw(), pw(22)
    vault = (
        "====== Secret Path ======\nsecret/data/app\n\n======= Metadata =======\nKey              Value\n---"
        f"              -----\nversion          3\n\n====== Data ======\nKey         Value\n---         -----\n"
        f"db_pass     {p5}\napi_key     {p6}\n"
    )
    out.append(_cred("cred_vault_kv_get", "vault kv get secret/app", vault, [p5, p6]))
    p7, u7 = pw(20), "v-token-app-" + _s(10)
    vr = (
        f"Key                Value\n---                -----\nlease_id           database/creds/app/{_s(24)}\n"
        f"lease_duration     1h\nlease_renewable    true\npassword           {p7}\nusername           {u7}\n"
    )
    out.append(_cred("cred_vault_read", "vault read database/creds/app", vr, [p7]))
    p8, t8 = pw(17), pw(30)
    tf = (
        json.dumps(
            {
                "db_password": {"sensitive": True, "type": "string", "value": p8},
                "api_token": {"sensitive": True, "type": "string", "value": t8},
                "endpoint": {"sensitive": False, "type": "string", "value": "db.example.com"},
            },
            indent=2,
        )
        + "\n"
    )
    out.append(_cred("cred_terraform_output_json", "terraform output -json", tf, [p8, t8]))
    out.append(_printed("cred_terraform_output_raw", "terraform output -raw db_password", pw(19), end=""))
    p10, k10 = pw(16), _s(64, "0123456789abcdef")
    hc = (
        f"=== acme-prod Config Vars\nDATABASE_URL:    postgres://u{_s(5)}:{p10}@ec2-1-2-3-4.compute.amazonaws.com:5432/d1\n"
        f"SECRET_KEY_BASE: {k10}\nWEB_CONCURRENCY: 2\n"
    )
    out.append(_cred("cred_heroku_config", "heroku config -a acme-prod", hc, [p10, k10]))
    p11, k11 = pw(16), pw(40)
    hca = (
        f"\x1b[1m=== acme-prod Config Vars\x1b[22m\n\x1b[32mDATABASE_URL:\x1b[39m    postgres://u:{p11}@h:5432/d\n"
        f"\x1b[32mRAILS_MASTER_KEY:\x1b[39m {k11}\n"
    )
    out.append(_cred("cred_heroku_config_ansi", "heroku config --app acme-prod | cat", hca, [p11, k11]))
    out.append(_printed("cred_heroku_auth_token", "heroku auth:token", "HRKU-" + _s(36)))
    envdump = f"HOME=/home/dev\nDEPLOY_SECRET={pw(12)}\nSHELL=/bin/bash\n"
    sec = envdump.split("DEPLOY_SECRET=")[1].split("\n")[0]
    for name, command in (
        ("cred_which_env_head", "$(which env) | head -n 20"),
        ("cred_alias_env", "alias showenv=printenv; showenv | sort"),
        ("cred_backtick_env", "`command -v env` | grep -v PATH"),
        ("cred_usr_bin_env_pipe", "/usr/bin/env | sort | head"),
    ):
        out.append(_cred(name, command, envdump, [sec]))
    out.append(_printed("cred_gh_auth_token", "gh auth token", "gho_" + _s(36)))
    out.append(_printed("cred_aws_configure_get", "aws configure get aws_secret_access_key", pw(40)))
    ecr = "aws ecr get-login-password --region eu-west-1"
    out.append(_printed("cred_aws_ecr_login_password", ecr, "eyJ" + _s(40) + "." + _s(60)))
    out.append(_printed("cred_op_read", "op read op://Private/db/password", pw(24)))
    out.append(_printed("cred_security_find_password", "security find-generic-password -s deploy -w", pw(13)))
    s18, t18 = pw(40), _s(200, _B64)
    sts = (
        json.dumps(
            {
                "Credentials": {
                    "AccessKeyId": "ASIA" + _s(16).upper(),
                    "SecretAccessKey": s18,
                    "SessionToken": t18,
                    "Expiration": "2026-12-01T12:00:00Z",
                }
            },
            indent=4,
        )
        + "\n"
    )
    sts_keep = ['"Expiration": "2026-12-01T12:00:00Z"']
    out.append(
        bash(
            "cred_aws_sts_session",
            3,
            "aws sts get-session-token --duration-seconds 900",
            sts,
            [s18, t18],
            keep=sts_keep,
        )
    )
    p19, p19b = pw(9), pw(11)
    compose = (
        f"services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {p19}\n      POSTGRES_USER: app\n"
        f"      REDIS_PASS: {p19b}\n    image: postgres:16\n"
    )
    compose_keep = ["POSTGRES_USER: app", "image: postgres:16"]
    out.append(
        bash("cred_docker_compose_config_short", 3, "docker compose config", compose, [p19, p19b], keep=compose_keep)
    )
    p20 = pw(12)
    values = f"image:\n  tag: v1.2.3\nconfig: {b64('DB_PASSWORD=' + p20 + chr(10) + 'MODE=prod')}\n"
    helm_secrets = [b64("DB_PASSWORD=" + p20 + "\nMODE=prod"), p20]
    out.append(
        bash(
            "cred_yaml_base64_under_plain_key",
            3,
            "helm get values api -o yaml",
            values,
            helm_secrets,
            keep=["tag: v1.2.3"],
        )
    )
    p21 = pw(10)
    hcl = (
        f'resource "aws_db_instance" "main" {{\n  engine   = "postgres"\n  password = "{p21}"\n  username = "app"\n}}\n'
    )
    tf_files = {"cases/cred21/main.tf": hcl}
    out.append(
        bash(
            "cred_hcl_password",
            3,
            "cat cases/cred21/main.tf",
            hcl,
            [p21],
            keep=['engine   = "postgres"'],
            files=tf_files,
        )
    )
    out.append(_printed("cred_gcloud_token", "gcloud auth print-access-token", pw(40), prefix="ya29."))
    out.append(_printed("cred_env_pipe_grep", "env | grep -i pass", pw(12), prefix="DB_PASS="))
    k24, ck24 = pw(40), b64(pw(60))
    kc = (
        "apiVersion: v1\nclusters:\n- cluster:\n    server: https://k8s.example.com\n  name: prod\nusers:\n- name: admin\n"
        f"  user:\n    client-key-data: {ck24}\n    token: {k24}\n"
    )
    out.append(_cred("cred_kubectl_config_view_raw", "kubectl config view --raw", kc, [k24, ck24]))
    return out


def _class4() -> list[dict]:
    """Secrets on the command line, and in output that echoes the command."""
    return [
        bash1(
            "cli_mysql_p",
            4,
            pw(12),
            "mysql -h db -u root -p{p} -e 'show databases'",
            "Database\ninformation_schema\nshop\n",
            keep=["information_schema"],
        ),
        bash1(
            "cli_export_token_and",
            4,
            pw(11),
            "export DEPLOY_TOKEN={p} && deploy --env prod",
            "deploying 3 services\ndone\n",
            keep=["deploying 3 services"],
        ),
        bash1(
            "cli_curl_u",
            4,
            pw(9),
            "curl -su admin:{p} https://jenkins.example.com/api/json",
            '{"jobs": []}\n',
            keep=['{"jobs": []}'],
        ),
        bash1(
            "cli_pgpassword",
            4,
            pw(10),
            "PGPASSWORD='{p}' psql -h db -U app -c '\\dt'",
            "         List of relations\n Schema | Name  | Type  \n--------+-------+-------\n public | users | table\n",
            keep=["public | users | table"],
        ),
        bash1(
            "cli_url_password_echoed",
            4,
            pw(13),
            "git clone https://builder:{p}@git.example.com/acme/tools.git",
            "",
            stderr="Cloning into 'tools'...\nfatal: could not read from https://builder:{p}@git.example.com/acme/tools.git\n",
        ),
        bash1(
            "cli_set_x_trace",
            4,
            pw(10),
            "bash -x ./release.sh",
            "released\n",
            stderr="+ export RELEASE_PASSWORD={p}\n+ curl -s https://release.example.com\n",
            files={"release.sh": "#!/bin/sh\necho released\n"},
        ),
        bash1(
            "cli_docker_run_e",
            4,
            pw(8),
            "docker run -d -e POSTGRES_PASSWORD={p} -e POSTGRES_DB=app postgres:16",
            _s(64, "0123456789abcdef") + "\n",
            keep=["POSTGRES_DB=app"],
        ),
        bash1("cli_sshpass", 4, pw(10), "sshpass -p '{p}' ssh deploy@host uptime", " 10:00:00 up 3 days\n"),
        bash1("cli_redis_cli_a", 4, pw(12), "redis-cli -h cache -a {p} ping", "PONG\n", keep=["PONG"]),
        bash1("cli_npm_authtoken", 4, "npm_" + _s(36), "npm config set //registry.npmjs.org/:_authToken={p}", ""),
        bash1("cli_mysql_password_eq", 4, pw(14), "mysql --user=app --password={p} shop < dump.sql", ""),
        bash1(
            "cli_env_prefix_secret",
            4,
            pw(12),
            "API_SECRET={p} node server.js --port 3000",
            "listening on 3000\n",
            keep=["listening on 3000"],
        ),
        bash1(
            "cli_http_basic_in_url_arg",
            4,
            pw(12),
            "http -a ops:{p} GET https://status.example.com",
            "HTTP/1.1 200 OK\n",
        ),
        bash1(
            "cli_pg_dump_dsn",
            4,
            pw(15),
            "pg_dump 'host=db user=app password={p} dbname=shop' -s",
            "CREATE TABLE users (id int);\n",
            keep=["CREATE TABLE users (id int);"],
        ),
    ]


def _class5() -> list[dict]:
    """Secret-bearing files read whole."""
    out = []
    ck, tok = b64(pw(90)), pw(40)
    kube = (
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    certificate-authority-data: LS0tLS1CRUdJTg==\n"
        "    server: https://10.0.0.1:6443\n  name: prod\ncontexts:\n- context:\n    cluster: prod\n    user: admin\n"
        f"  name: prod\nusers:\n- name: admin\n  user:\n    client-key-data: {ck}\n    token: {tok}\n"
    )
    out.append(
        read("file_kubeconfig", 5, "deploy/kubeconfig.yaml", kube, [ck, tok], keep=["server: https://10.0.0.1:6443"])
    )
    p2 = pw(16)
    state = json.dumps(
        {
            "version": 4,
            "terraform_version": "1.6.0",
            "resources": [
                {
                    "type": "aws_db_instance",
                    "instances": [{"attributes": {"password": p2, "address": "db.example.com"}}],
                }
            ],
        },
        indent=2,
    )
    out.append(read("file_tfstate", 5, "infra/terraform.tfstate", state, [p2], expect="skipped"))
    out.append(read("file_tfstate_backup", 5, "infra/terraform.tfstate.backup", state, [p2], expect="skipped"))
    p3 = pw(12)
    salts = [_s(64, _AN + "!@#$%^&*()-_[]{}<>~`+=,.;:/?|") for _ in range(3)]
    wp = (
        "<?php\n/** The name of the database for WordPress */\ndefine( 'DB_NAME', 'wordpress' );\n"
        f"define( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p3}' );\ndefine( 'DB_HOST', 'localhost' );\n"
        f"define( 'AUTH_KEY',         '{salts[0]}' );\ndefine( 'SECURE_AUTH_SALT', '{salts[1]}' );\n"
        f"define( 'NONCE_SALT',       '{salts[2]}' );\n$table_prefix = 'wp_';\n"
    )
    out.append(
        read(
            "file_wp_config",
            5,
            "site/wp-config.php",
            wp,
            [p3] + salts,
            keep=["define( 'DB_NAME', 'wordpress' );", "$table_prefix = 'wp_';"],
        )
    )
    p4 = pw(12)
    js = (
        "const db = {\n  host: process.env.DB_HOST || 'localhost',\n"
        f"  password: process.env.DB_PASSWORD || '{p4}',\n}};\nmodule.exports = db;\n"
    )
    out.append(
        read(
            "file_js_default_literal",
            5,
            "src/db.js",
            js,
            [p4],
            keep=["host: process.env.DB_HOST || 'localhost',", "module.exports = db;"],
        )
    )
    p5 = pw(14)
    py = f'import os\n\n\ndef connect():\n    password = os.environ.get("DB_PASSWORD", "{p5}")\n    return password\n'
    out.append(read("file_py_getenv_default", 5, "app/dbconn.py", py, [p5], keep=["def connect():"]))
    p6 = pw(10)
    sh = f'#!/bin/sh\n: "${{ADMIN_PASSWORD:={p6}}}"\necho "starting"\n'
    out.append(read("file_shell_default", 5, "bin/start.sh", sh, [p6], keep=['echo "starting"']))
    p7 = pw(7)
    dc = f"services:\n  db:\n    image: mysql:8\n    environment:\n      MYSQL_ROOT_PASSWORD: {p7}\n      MYSQL_DATABASE: shop\n"
    out.append(read("file_compose_short_password", 5, "docker-compose.yml", dc, [p7], keep=["MYSQL_DATABASE: shop"]))
    auth = b64("robot:" + pw(20))
    dj = json.dumps({"auths": {"registry.example.com": {"auth": auth}}}, indent=2)
    out.append(read("file_docker_config_json", 5, "ci/.docker/config.json", dj, [auth], expect="skipped"))
    p9 = pw(12)
    sec = (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\nstringData:\n  SMTP_PASSWORD: {p9}\n"
        "  SMTP_HOST: mail.example.com\n"
    )
    out.append(read("file_k8s_stringdata", 5, "k8s/app-secret.yaml", sec, [p9], keep=["SMTP_HOST: mail.example.com"]))
    p10 = pw(11)
    props = f"spring.datasource.url=jdbc:postgresql://db/app\nspring.datasource.password={p10}\nserver.port=8080\n"
    out.append(
        read(
            "file_spring_properties",
            5,
            "src/main/resources/application.properties",
            props,
            [p10],
            keep=["server.port=8080"],
        )
    )
    p11 = pw(10)
    tfvars = f'region      = "eu-west-1"\ndb_password = "{p11}"\n'
    out.append(read("file_tfvars", 5, "infra/prod.tfvars", tfvars, [p11], keep=['region      = "eu-west-1"']))
    out.append(
        read("file_htpasswd", 5, "web/.htpasswd", "admin:$apr1$" + _s(8) + "$" + _s(22) + "\n", [], expect="skipped")
    )
    p13 = pw(16)
    ini = f"[client]\nuser = backup\npassword = {p13}\nhost = db.internal\n"
    out.append(read("file_my_cnf", 5, "ops/backup.my.cnf", ini, [p13], keep=["host = db.internal"]))
    return out


def grep1(name: str, cls: int, secret: str, files: dict, pattern: str, **kw) -> dict:
    """A Grep case around one secret: ``{p}`` in its files' text stands for the secret."""
    files = {rel: text.replace("{p}", secret) for rel, text in files.items()}
    return grep(name, cls, files, pattern, [secret], **kw)


def _class6() -> list[dict]:
    """Grep content: manifests, assignment greps, path:text lines of secret files."""
    out = []
    p1, p2 = b64(pw(12)), b64(pw(14))
    m = {
        "cases/g1/db.yaml": f"kind: Secret\ndata:\n  password: {p1}\n",
        "cases/g1/api.yaml": f"kind: Secret\ndata:\n  password: {p2}\n",
    }
    out.append(grep("grep_k8s_password_fields", 6, m, "password:", [p1, p2]))
    s3, s4 = pw(18), pw(20)
    out.append(
        bash(
            "grep_assignment_bash",
            6,
            "grep -rn SECRET= cases/g2",
            f"cases/g2/prod.sh:3:export APP_SECRET={s3}\ncases/g2/ci.sh:1:JWT_SECRET={s4}\n",
            [s3, s4],
            files={
                "cases/g2/prod.sh": f"#!/bin/sh\nset -e\nexport APP_SECRET={s3}\n",
                "cases/g2/ci.sh": f"JWT_SECRET={s4}\n",
            },
        )
    )
    # a secret file's hit beside a benign file's, whose line is kept
    for name, secret, files, pattern, numbers, kept in (
        (
            "grep_dotenv_no_line_numbers",
            pw(16),
            {".env": "API_KEY={p}\nDEBUG=1\n", "src/conf.py": "API_KEY = load('API_KEY')\n"},
            "API_KEY",
            False,
            "src/conf.py:API_KEY = load('API_KEY')",
        ),
        (
            "grep_nested_env_no_numbers",
            pw(13),
            {
                "services/api/.env.production": "STRIPE_WEBHOOK={p}\n",
                "services/api/app.rb": "STRIPE_WEBHOOK_NAME = 'hooks'\n",
            },
            "STRIPE_WEBHOOK",
            False,
            "STRIPE_WEBHOOK_NAME = 'hooks'",
        ),
        (
            "grep_tfstate_hits",
            pw(12),
            {"infra/old.tfstate": '"password": "{p}",\n', "infra/main.tf": "password = var.db_password\n"},
            "password",
            True,
            "password = var.db_password",
        ),
        (
            "grep_netrc_no_numbers",
            pw(12),
            {
                "home/.netrc": "machine api.example.com login bot password {p}\n",
                "docs/setup.md": "Put your password in ~/.netrc (machine, login, password).\n",
            },
            "password",
            False,
            "Put your password in ~/.netrc",
        ),
    ):
        out.append(grep1(name, 6, secret, files, pattern, numbers=numbers, keep=[kept]))
    return out


def _benign_shell(name: str, command: str, stdout: str, keep: list, **kw) -> dict:
    """A look-alike command: nothing in it is a secret, and ``keep`` must be stored verbatim."""
    return bash(name, 7, command, stdout, [], keep=keep, **kw)


def _benign_grep(name: str, command: str, rel: str, hit: str, before: str = "") -> dict:
    """``grep -rn`` in Bash over one file (``before`` then the ``hit`` line): the hit is stored verbatim."""
    n = before.count("\n") + 1
    return _benign_shell(name, command, f"{rel}:{n}:{hit}\n", [hit], files={rel: before + hit + "\n"})


def _benign_file(name: str, rel: str, text: str, keep: list) -> dict:
    """A look-alike file read whole: nothing in it is a secret, and ``keep`` must be stored verbatim."""
    return read(name, 7, rel, text, [], keep=keep)


def _class7() -> list[dict]:
    """Benign look-alikes: must be stored, and their text kept verbatim."""
    out = []
    node = "const { API_KEY, DB_HOST } = process.env;\nconsole.log(Boolean(API_KEY), DB_HOST);"
    node_keep = ["const { API_KEY, DB_HOST } = process.env;", "true db.internal"]
    out.append(_benign_shell("benign_node_env_destructure", f"node -e '{node}'", "true db.internal\n", node_keep))
    py = (
        'import os\n\nAPI_KEY = os.environ["OPENAI_API_KEY"]\ntoken = os.getenv("GITHUB_TOKEN")\n'
        'password = getpass.getpass("Password: ")\nif token is None:\n    raise SystemExit("set GITHUB_TOKEN")\n'
    )
    py_keep = [
        'API_KEY = os.environ["OPENAI_API_KEY"]',
        'token = os.getenv("GITHUB_TOKEN")',
        'password = getpass.getpass("Password: ")',
    ]
    out.append(_benign_file("benign_py_env_lookup", "app/keys.py", py, py_keep))
    yml = (
        "spec:\n  containers:\n  - env:\n    - name: DB_PASSWORD\n      valueFrom:\n        secretKeyRef:\n"
        "          name: db-creds\n          key: password\n  volumes:\n  - secret:\n      secretName: tls-cert\n"
        "    passwordFile: /run/secrets/db_password\n    password: ${DB_PASSWORD}\n"
    )
    yml_keep = [
        "key: password",
        "secretName: tls-cert",
        "passwordFile: /run/secrets/db_password",
        "password: ${DB_PASSWORD}",
        "name: DB_PASSWORD",
    ]
    out.append(_benign_file("benign_k8s_refs", "k8s/deploy.yaml", yml, yml_keep))
    port = "const port = process.env.PORT || 3000;"
    out.append(_benign_grep("benign_grep_process_env", 'grep -rn "process.env" cases/b4', "cases/b4/cfg.js", port))
    login = "docker login -u ci --password-stdin registry.example.com"
    out.append(
        _benign_shell("benign_docker_login_stdin", login, "Login Succeeded\n", ["--password-stdin", "Login Succeeded"])
    )
    sha = _s(64, "0123456789abcdef")
    env = f"SORT_KEY=created_at\nPRIMARY_KEY=id\nIMAGE_DIGEST=sha256:{sha}\nTOKEN_LIMIT=4096\n"
    out.append(
        _benign_shell(
            "benign_digests_and_sorting_keys",
            "cat cases/b6/build.env",
            env,
            env.split("\n")[:4],
            files={"cases/b6/build.env": env},
        )
    )
    prose = (
        "Password policy\n\nEnter your password: the field must be at least 12 characters.\n"
        "token_count = len(tokens)\nSet GITHUB_TOKEN in your shell before running the release script.\n"
    )
    prose_keep = [
        "Enter your password: the field must be at least 12 characters.",
        "token_count = len(tokens)",
        "Set GITHUB_TOKEN in your shell before running the release script.",
    ]
    out.append(_benign_file("benign_prose_and_counters", "docs/auth.md", prose, prose_keep))
    code = (
        "def check(password: str, hashed: bytes) -> bool:\n    return bcrypt.checkpw(password.encode(), hashed)\n\n\n"
        "def rotate(secret_name):\n    client.rotate_secret(SecretId=secret_name)\n"
    )
    code_keep = ["return bcrypt.checkpw(password.encode(), hashed)", "client.rotate_secret(SecretId=secret_name)"]
    out.append(_benign_file("benign_auth_functions", "app/auth/check.py", code, code_keep))
    never = "Never run printenv in CI logs."
    out.append(
        _benign_grep(
            "benign_printenv_in_grep_pattern", "grep -rn printenv cases/b9", "cases/b9/README.md", never, "# ops\n\n"
        )
    )
    echo = 'echo "API_KEY is ${API_KEY:+set}"'
    out.append(_benign_shell("benign_env_var_echo_name", echo, "API_KEY is set\n", ["API_KEY is set"]))
    return out


def generated() -> list[dict]:
    from tests.support import leaky_more_cases  # the classes of issue 19; it builds on the helpers above

    cases = _class1() + _class2() + _class3() + _class4() + _class5() + _class6() + _class7() + leaky_more_cases.cases()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    return cases


_GENERATED = generated()


def _legacy(line: str, project: str) -> dict:
    c = json.loads(line.replace("${PROJECT}", project))
    c.setdefault("cls", 0)
    c.setdefault("files", {})
    c.setdefault("wrapped", None)
    return c


def load_cases(project: str) -> list[dict]:
    """Every case, with ``${PROJECT}`` replaced by ``project``."""
    with open(CASES, encoding="utf-8") as f:
        out = [_legacy(line, project) for line in f if line.strip()]
    for c in _GENERATED:
        out.append(json.loads(json.dumps(c).replace("${PROJECT}", project)))
    return out


def strings(value) -> list[str]:
    """Every string inside a JSON-like value (dict keys included), in order."""
    out: list[str] = []

    def walk(v):
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return out


def case_strings(project: str) -> list[str]:
    """Every string of every case (keys included), in order: texts the gate sees."""
    return [s for case in load_cases(project) for s in strings(case)]


def write_files(project: str, cases: list[dict]) -> None:
    """Create every case's files in ``project`` (what the hook's Read/Grep saw)."""
    for c in cases:
        for rel, text in (c.get("files") or {}).items():
            full = os.path.join(project, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
