"""memtree.gate rules: commands, paths, text, with benign look-alikes beside each."""

from __future__ import annotations

import os

import pytest

from memtree.gate import command_denied, path_denied, redact_text, redact_value

DENIED = [
    "env",
    "printenv",
    "printenv HOME",
    "bash -c 'env'",
    "bash -c 'env | sort'",
    'sh -c "printenv"',
    "(env)",
    "env | sort",
    "sudo env",
    "sudo -E env",
    "command env",
    "ls; env",
    "make && printenv FOO",
    "set",
    "export -p",
    "export",
    "declare -x",
    "declare -p",
    "typeset -x",
    "FOO=1 env",
    "timeout 5 env",
    "env -u X",
    "env A=1 printenv",
    "echo $(env)",
    "echo `env`",
    "{ env; }",
    "ls\nenv",
    'bash -lc "cd x && env"',
    "env -i bash -c env",
    "eval env",
    "cat /proc/self/environ",
    "python3 -c 'import os; print(os.environ)'",
    "node -e 'console.log(process.env)'",
    "compgen -e",
    "cat .env",
    "less ~/.ssh/id_rsa",
    "cp server.pem /tmp/x",
    "find . -name x | xargs python3 -c 'import os; print(os.environ)'",
    "sudo -E python3 -c 'print(os.environ)'",
    "sudo -u deploy env",
    "nice -n 5 printenv",
    "xargs -I {} env",
]
ALLOWED = [
    "env FOO=1 make",
    "env -i FOO=1 make -j2",
    "set -e",
    "set -euo pipefail",
    "export FOO=1",
    "declare -a arr",
    "echo env",
    "echo 'a;env'",
    'echo "env"',
    "grep env file",
    "git log",
    "ls",
    "python3 -c 'import os; print(os.environ[\"HOME\"])'",
    "node -e 'console.log(process.env.HOME)'",
    "python manage.py runserver",
    "cat README.md",
    "seq 1 40000",
    "echo hello; ls",
    "find app -name '*.py' | xargs grep -n os.environ",
    "timeout 5 rg -n process.env src",
    "sudo grep -rn os.environ /etc/app",
    "nice -n 5 git grep -n 'os.environ'",
]


@pytest.mark.parametrize("command", DENIED)
def test_environment_dumps_and_secret_files_are_denied(command):
    assert command_denied(command)


@pytest.mark.parametrize("command", ALLOWED)
def test_commands_that_only_look_alike_are_allowed(command):
    assert command_denied(command) is None


def test_bash_deny_regexes_extend_the_list_and_a_broken_regex_matches_literally():
    assert command_denied("terraform plan") is None
    assert "bash.deny" in command_denied("terraform plan", [r"^terraform\s+plan"])
    assert "bash.deny" in command_denied("vault read (x", ["vault read (x"])  # not a valid regex


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        ".env.local",
        ".envrc",
        "/h/.ssh/config",
        "/h/.ssh",
        "/h/.aws/credentials",
        "/h/.gnupg/pubring.kbx",
        ".npmrc",
        ".pypirc",
        "/h/.netrc",
        "id_rsa",
        "id_rsa.pub",
        "id_ed25519",
        "a/server.pem",
        "tls.key",
        "cert.p12",
        "cert.pfx",
        "credentials.json",
        "service-account-prod.json",
        "sub/../.env",
    ],
)
def test_secret_paths_are_denied(path):
    assert path_denied(path, (), "/p")


@pytest.mark.parametrize(
    "path",
    [
        "src/env.py",
        "password_reset.py",
        "/h/.aws/config",
        "keys.py",
        "README.md",
        "environment.md",
        "docs/ssh.md",
        "credentials_test.py",
    ],
)
def test_ordinary_paths_are_allowed(path):
    assert path_denied(path, (), "/p") is None


def test_symlinks_and_dotdot_resolve_before_the_check(tmp_path):
    (tmp_path / "secrets").mkdir()
    (tmp_path / ".env").write_text("X=1")
    os.symlink(tmp_path / ".env", tmp_path / "notes.txt")
    os.symlink(tmp_path / "secrets", tmp_path / "docs")
    assert path_denied(str(tmp_path / "notes.txt"))
    assert path_denied("docs/a.txt", ["secrets/"], str(tmp_path))
    assert path_denied("docs/a.txt", [], str(tmp_path)) is None  # positive control
    assert path_denied(str(tmp_path / "x" / ".." / ".env"))


def test_path_deny_globs_match_components_or_whole_paths():
    assert path_denied("/p/vault/x.txt", ["vault/"], "/p")
    assert path_denied("/p/conf/prod.ini", ["conf/prod.*"], "/p")
    assert path_denied("/p/conf/dev.ini", ["conf/prod.*"], "/p") is None


SECRETS = {
    "AWS_ACCESS_KEY_ID=AKIAQX7ZPLT4WJ2MRK9B": "AKIAQX7ZPLT4WJ2MRK9B",
    "aws_secret_access_key = r8Tq2vLx9NwPz4Ke7JmYb3HcF6sAd1GuVo5WiXn0": "r8Tq2vLx9NwPz4Ke7JmYb3HcF6sAd1GuVo5WiXn0",
    "PASSWORD=hunter2": "hunter2",
    '{"password": "correct horse battery"}': "correct horse battery",
    "password: hunt3r2hunt3r2": "hunt3r2hunt3r2",
    "DATABASE_URL=postgres://admin:s3cr3tpw@db:5432/app": "s3cr3tpw",
    "token = ghp_Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi": "ghp_Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi",
    "glpat-Xk4Vn8Rq2Zm6Wt9Ly3Ps": "glpat-Xk4Vn8Rq2Zm6Wt9Ly3Ps",
    "xoxb-2741958361-5928473610-Qm7Zx2Lv9Rt4Kp8W": "xoxb-2741958361-5928473610-Qm7Zx2Lv9Rt4Kp8W",
    "sk_live_51Qm7Zx2Lv9Rt4Kp8Wn3Yb6Hs": "sk_live_51Qm7Zx2Lv9Rt4Kp8Wn3Yb6Hs",
    "//registry.npmjs.org/:_authToken=npm_Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi": "npm_Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi",
    "key sk-proj-Qm7Zx2Lv9Rt4Kp8Wn3Yb6HsJd5Fc0GaUeMi": "sk-proj-Qm7Zx2Lv9Rt4Kp8Wn3Yb6HsJd5Fc0GaUeMi",
    "sk-ant-api03-Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5": "sk-ant-api03-Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.Qm7Zx2Lv9Rt4Kp8Wn3Yb6Hs": "Qm7Zx2Lv9Rt4Kp8Wn3Yb6Hs",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----": "b3BlbnNzaC1rZXktdjEAAAAA",
    "-----BEGIN PRIVATE KEY-----\ncut short b3BlbnNzaC1rZXktdjEAAAAA": "b3BlbnNzaC1rZXktdjEAAAAA",
    "Authorization: Bearer Qm7Zx2Lv9Rt4Kp8Wn3Yb6HsJd5": "Qm7Zx2Lv9Rt4Kp8Wn3Yb6HsJd5",
    "the api key is 9f8e7d6c5b4a39281706f5e4d3c2b1a0": "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "AccountKey=Vx9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi==;EndpointSuffix=x": "Vx9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi",
    "const k = 'AIzaSyQm7Zx2Lv9Rt4Kp8Wn3Yb6HsJd5Fc0GaUe'": "AIzaSyQm7Zx2Lv9Rt4Kp8Wn3Yb6HsJd5Fc0GaUe",
    "mysql -u root -pR00tPassw0rdX": "R00tPassw0rdX",
    "redis://:R3disPassw0rd@cache:6379": "R3disPassw0rd",
}


@pytest.mark.parametrize("text, secret", SECRETS.items(), ids=range(len(SECRETS)))
def test_secrets_are_replaced_in_place_with_a_tag(text, secret):
    clean, tags = redact_text(text)
    assert secret not in clean and "[REDACTED:" in clean and tags


BENIGN = [
    "commit 3f2a9c1e0b8d7f6a5e4c3b2a1f0e9d8c7b6a5f4e",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  file.tar.gz",
    "id = 123e4567-e89b-12d3-a456-426614174000",
    "password_reset.py",
    "MAX_TOKENS=4096",
    "token_count = 5",
    'password = request.form["password"]',
    "def check_password(password: str) -> bool:",
    "PASSWORD=${DB_PASS}",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
    "sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQMDq8Nnd1jSYoGFZ8UE/0K3hVfp4ksdqzSrdRKB+YBTr6eg==",
    "git@github.com:acme/app.git",
    "https://user@example.com/path",
    "arn:aws:iam::123456789012:role/x",
]


@pytest.mark.parametrize("text", BENIGN)
def test_benign_look_alikes_survive_unchanged(text):
    assert redact_text(text) == (text, [])


def test_every_password_flag_of_a_mysql_command_is_redacted_and_the_next_command_is_not():
    text = "mysql -u root -pFirstPassw0rd1 -h db -pSecondPassw0rd2 shop | tar -pxf dump.tar; echo -pxyz"
    clean, tags = redact_text(text)
    want = "mysql -u root -p{0} -h db -p{0} shop | tar -pxf dump.tar; echo -pxyz".format("[REDACTED:mysql_password]")
    assert (clean, tags) == (want, ["mysql_password"])
    assert redact_text(clean) == (clean, [])


def test_redact_value_cleans_every_string_in_nested_json():
    value = {
        "tool_input": {"command": "export GITHUB_TOKEN=ghp_Zq8Lm2Xv9Tn4Rb7Yw1Pk6Hs3Jd5Fc0GaUeMi"},
        "list": ["ok", "PASSWORD=hunter2"],
        "n": 3,
    }
    clean, tags = redact_value(value)
    assert "ghp_" not in str(clean) and "hunter2" not in str(clean) and clean["n"] == 3 and clean["list"][0] == "ok"
    assert tags
