"""Every kind of secret in every syntax a secret-named key shows up in
(tests/support/leak_variants.py): none survives redaction, and look-alikes
in the same syntaxes come back unchanged."""

from __future__ import annotations

import json

import pytest

from memtree.gate import redact_text
from tests.support import leak_variants as lv
from tests.support.gate_corpus import soup
from tests.support.leaky_cases import case_strings, load_cases, strings


def test_no_generated_variant_leaks():
    cases = lv.cases()
    assert len(cases) == lv.KINDS * len(lv.SYNTAXES) * 3  # every kind in every syntax
    leaking = {c["id"] for c in cases if lv.leaked(redact_text(c["text"])[0], c["secret"])}
    assert leaking == set()


def test_a_weak_name_with_a_credential_shaped_value_leaks_in_no_syntax():
    cases = lv.weak_cases()
    assert len(cases) == (len(lv.SYNTAXES) - len(lv.WEAK_SKIPPED)) * 3
    leaking = {c["id"] for c in cases if lv.leaked(redact_text(c["text"])[0], c["secret"])}
    assert leaking == set()
    # Positive control: the value's shape decides. A short word under the same name stays
    # in the syntaxes where the name is what makes a value secret (not in a SQL password,
    # a registry login's -p, ...).
    kept = {
        syntax
        for syntax, line in lv.SYNTAXES.items()
        if redact_text(line(lv.WEAK_NAME, "gateway"))[0] == line(lv.WEAK_NAME, "gateway")
    }
    assert len(kept) >= 25 and {"env", "json", "subscript_double", "xml_element", "typed_const"} <= kept


def test_a_url_password_leaks_in_no_form_a_driver_takes():
    """base64's '/', an unescaped '@' or ':', percent-escapes: the password runs to
    the address's last '@' (a '/' or an '@' inside it kept the rest of it before gate v7)."""
    cases = lv.url_cases()
    assert len(cases) == len(lv.URL_PASSWORDS) * len(lv.URL_LINES) * 3
    leaking = {c["id"] for c in cases if lv.leaked(redact_text(c["text"])[0], c["secret"])}
    assert leaking == set()
    # Only the password goes: the scheme, the user and the host stay.
    out = redact_text("psql postgres://admin:ab/cdEF+gh12/xyZ@db.internal:5432/app")[0]
    assert out == "psql postgres://admin:[REDACTED:conn_password]@db.internal:5432/app"
    out = redact_text("redis://:p@ss#w0rd!x@localhost/0")[0]
    assert out == "redis://:[REDACTED:conn_password]@localhost/0"


def test_a_token_as_a_urls_whole_user_part_leaks_in_no_line():
    cases = lv.url_token_cases()
    assert len(cases) == len(lv.URL_TOKENS) * len(lv.URL_TOKEN_LINES) * 2
    leaking = {c["id"] for c in cases if lv.leaked(redact_text(c["text"])[0], c["secret"])}
    assert leaking == set()
    # a user name there stays (positive control: the same line with a token is redacted)
    assert {t for t in lv.URL_TOKEN_BENIGN if redact_text(t)[0] != t} == set()
    assert redact_text("git clone https://9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee1234@github.com/o/r")[0] == (
        "git clone https://[REDACTED:secret_value]@github.com/o/r"
    )


def test_an_address_with_a_port_and_an_at_sign_in_its_path_is_kept():
    changed = {text for text in lv.URL_BENIGN if redact_text(text)[0] != text}
    assert changed == set()
    # positive control: a password beside the same addresses is redacted
    assert redact_text("http://dev:Xk29fjs8Lq0@localhost:3000/api/users/@alice")[0] == (
        "http://dev:[REDACTED:conn_password]@localhost:3000/api/users/@alice"
    )


def test_an_ini_files_bare_word_is_its_value_and_code_keeps_its_names():
    """``password = hunter`` is code (a name) in a program and the password in an
    INI file (gate v7): a section header line tells them apart."""
    ini = "[client]\nuser = backup\npassword = hunterhunter\nuse_password = true\nhost = db.internal\n"
    assert redact_text(ini)[0] == ini.replace("hunterhunter", "[REDACTED:secret_value]")
    code = [
        "password = hunterhunter\n",  # no section: a name
        "[client]\ndef connect(cfg):\n    password = fromvault\n",  # indented: code
        "[1]\npassword = fromvault\n",  # a list, no section
    ]
    assert {text for text in code if redact_text(text)[0] != text} == set()


def test_redis_requirepass_and_masterauth_are_secrets():
    conf = "bind 127.0.0.1\nrequirepass foobared\nmasterauth 'primary pass'\n"
    assert redact_text(conf)[0] == (
        "bind 127.0.0.1\nrequirepass [REDACTED:secret_value]\nmasterauth '[REDACTED:secret_value]'\n"
    )
    assert redact_text("redis-server --port 7000 --requirepass foobared")[0].endswith("[REDACTED:secret_value]")
    kept = ["requirepass $REDIS_PASSWORD", "redis-cli config get requirepass"]
    assert {text for text in kept if redact_text(text)[0] != text} == set()


def test_each_variant_keeps_the_name_and_the_lines_around_its_secret():
    """Only the value goes: the key still says what was there, and every line
    (and the line count) stays, so a chunk's line numbers still hold."""
    for c in lv.cases(per=1):
        out, tags = redact_text(c["text"])
        assert out.startswith("$ tool --show\n") and out.endswith("\ndone"), c["id"]
        assert out.count("\n") == c["text"].count("\n"), c["id"]
        assert "[REDACTED:" in out and tags, c["id"]


def test_look_alikes_in_the_same_syntaxes_are_kept():
    changed = {text for text in lv.BENIGN if redact_text(text)[0] != text}
    assert changed == set()
    # positive control: each look-alike's syntax with a literal secret under a secret name is redacted
    assert redact_text('os.environ["DB_PASSWORD"] = "Xk29!fjs8#Lq0"')[0] == (
        'os.environ["DB_PASSWORD"] = "[REDACTED:secret_value]"'
    )
    assert redact_text("<password>Xk29fjs8Lq0</password>")[0] == "<password>[REDACTED:secret_value]</password>"
    assert redact_text("| GITHUB_TOKEN | 9f8e7d6c5b4a39281706f5e4 |")[0] == (
        "| GITHUB_TOKEN | [REDACTED:secret_value] |"
    )


def test_the_leak_check_sees_a_secret_left_whole_or_in_part():
    """The check itself (positive control): a secret left in the text, or 12 characters of
    it, or its base64, is a leak; the text with it replaced is not."""
    secret = "Zq81bX0pLmN4vR7t"
    assert lv.leaked(f"token {secret} end", secret)
    assert lv.leaked(f"token {secret[2:15]} end", secret)
    assert lv.leaked("blob " + __import__("base64").b64encode(secret.encode()).decode(), secret)
    assert not lv.leaked("token [REDACTED:secret_value] end", secret)


def test_redaction_holds_when_applied_again():
    """A row an older gate cleaned is redacted again on reads and by the filter
    walker's upgrade walk: the gate must leave its own output as it is, or a
    label turns into a label inside a label ("-a [REDACTED:cli_secret]" read as
    user:password) and a walk rewrites rows for nothing. Over every string of
    the leak fixture, the variants, the look-alikes and random soups of the
    rules' pieces (mysql's second -p and a quoted label in a make assignment
    moved before gate v5)."""
    texts = case_strings("/project")
    texts += [c["text"] for c in lv.cases() + lv.url_cases()] + lv.BENIGN + lv.URL_BENIGN + soup(6000, 11)
    assert len(texts) > 14000
    once = {t: redact_text(t)[0] for t in texts}
    moved = {t for t, r in once.items() if redact_text(r)[0] != r}
    assert moved == set()
    assert sum(r != t for t, r in once.items()) > 500  # positive control: many were redacted once


# The same texts as a tool shows them wrapped (gate v8): Windows line ends, a JSON value
# (kubectl get -o json, an API's answer, JSON in a JSON string), a Python repr, a numbered
# listing (cat -n, Claude Code's Read). Each wrapping kept every secret from the rules before.
WRAPPINGS = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "json_value": lambda t: json.dumps({"data": {"app.conf": t}}),
    "json_in_json": lambda t: json.dumps({"SecretString": json.dumps({"file": t})}),
    "repr": repr,
    "cat_n": lambda t: "\n".join(f"{i + 1:6d}\t{line}" for i, line in enumerate(t.split("\n"))),
    "read_arrows": lambda t: "\n".join(f"{i + 1:>6}→{line}" for i, line in enumerate(t.split("\n"))),
}


def _fixture_texts() -> list[tuple[str, str, str]]:
    """(id, text, secret): every generated variant, and every string of the leaky fixture's
    stored cases that holds one of its secrets and loses it to the gate unwrapped (a line of
    a secret file in a grep hit goes by the file's path, not by a rule)."""
    out = [(c["id"], c["text"], c["secret"]) for c in lv.cases(per=1)]
    for case in load_cases("/project"):
        if case["expect"] != "stored":
            continue
        for s in strings(case["payload"]):
            out += [
                (case["name"], s, sec)
                for sec in case["secrets"]
                if len(sec) >= 10 and sec in s and not lv.leaked(redact_text(s)[0], sec)
            ]
    return out


# A build file's `NAME ?= x` alone on a line inside a JSON string (no escape in the string, so it
# is not decoded, and the rule anchors at the line's start): the known limit of a JSON wrapping.
WRAPPED_LIMIT = {"json_value": {"make_native_grep"}, "json_in_json": {"make_native_grep"}}


@pytest.mark.parametrize("wrap", WRAPPINGS, ids=list(WRAPPINGS))
def test_no_secret_leaks_from_a_wrapped_text(wrap):
    texts = _fixture_texts()
    assert len(texts) > 600
    leaking = set()
    for name, text, secret in texts:
        wrapped = WRAPPINGS[wrap](text)
        out = redact_text(wrapped)[0]
        if lv.leaked(out, secret):
            leaking.add(name)
        if wrap in ("crlf", "cat_n", "read_arrows"):  # the wrapping itself stays
            assert out.count("\n") == wrapped.count("\n") and out.count("\r\n") == wrapped.count("\r\n"), name
    assert leaking == WRAPPED_LIMIT.get(wrap, set())


def test_a_wrapped_text_without_a_secret_comes_back_as_it_was():
    """Positive control beside the test above: the look-alikes, wrapped, are kept byte for byte
    (a JSON string is decoded and encoded again only when something in it was redacted)."""
    changed = {
        (wrap, text) for wrap, f in WRAPPINGS.items() for text in lv.BENIGN if redact_text(f(text))[0] != f(text)
    }
    assert changed == set()
    listing = "     1\tDEBUG = True\n     2\tAPI_TOKEN ?= 9f8e7d6c5b4a39281706\n     3\t"
    assert redact_text(listing)[0] == "     1\tDEBUG = True\n     2\tAPI_TOKEN ?= [REDACTED:secret_value]\n     3\t"


def test_a_wrapping_nested_without_end_is_unwrapped_a_bounded_number_of_times():
    """Input shaped to make each unwrapping reveal another: 3,000 numbered columns (each
    line's number off, the rest is numbered again), JSON strings nested 10 deep (each level
    doubles the backslashes before it: 10 is 11 KB, 50 would not fit in memory), both with
    Windows line ends. Each is undone a bounded number of times (a listing once, a JSON
    string 3 levels deep): no recursion runs away, and the secret at the bottom of what is
    undone still goes."""
    columns = "\t".join(["1"] * 3000) + "\tpassword: hunter22x"
    out, tags = redact_text(columns)
    assert tags == ["secret_value"] and out.endswith("password: [REDACTED:secret_value]")
    nested = "API_TOKEN=Xk9mP2vQ7rT4wZ8nB3cF6hJ1"
    for _ in range(10):
        nested = json.dumps({"v": nested + "\n"})
    assert len(nested) < 100_000
    out, _ = redact_text(nested.replace("\\n", "\\r\\n") + "\r\n" + columns)
    assert "hunter22x" not in out
    shallow = json.dumps(json.dumps({"v": "API_TOKEN=Xk9mP2vQ7rT4wZ8nB3cF6hJ1\n"}))  # 2 levels: undone
    assert "Xk9mP2vQ7rT4wZ8nB3cF6hJ1" not in redact_text(shallow)[0]


def test_a_decoded_string_is_encoded_again_as_text_the_store_takes():
    """A JSON string escaping a lone surrogate ("\\ud800", which UTF-8 cannot hold) and a
    secret: the secret goes, the surrogate stays an escape (SQLite is given UTF-8)."""
    text = '{"log": "x\\ud800 \\nAPI_TOKEN=Xk9mP2vQ7rT4wZ8nB3cF6hJ1\\n"}'
    out, tags = redact_text(text)
    assert tags == ["secret_value"] and "Xk9mP2vQ7rT4wZ8nB3cF6hJ1" not in out
    assert out.encode("utf-8") and "\\ud800" in out
