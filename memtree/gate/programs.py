"""Programs whose command line holds a secret where the program says so: an
option's value (``zip -P x``, ``ldapsearch -w x``, ``keytool -storepass x``)
or an argument (``rabbitmqctl add_user bob x``, ``sqlplus scott/x@db``).

One text rule (rules.py, gate v8) finds a program's name, takes its command
up to the next ``|``, ``;``, ``&`` or newline, and replaces every value its
entry below matches there: ``ssh-keygen -P old -N new`` loses both. The value
is a secret whatever it looks like; a flag (``mongosh -p --quiet`` asks for
the password), a shell reference (``$PW``) or a label is no value.

Each entry: the program's names as they begin its command (a literal the
engine finds by ``str.find``: a subcommand spelled with one space, ``az
login``), and the pattern of what follows it, whose group ``v1`` (quoted)
or ``v`` is the value.
"""

from __future__ import annotations

import re

# An option's value: quoted (any characters but its quote), or one word that is no flag,
# shell reference or label (and holds no backslash: a quote escaped inside a JSON string).
VALUE = r"(?:(?P<q>['\"])(?P<v1>(?!\[REDACTED|\$)[^'\"\n]{1,200})(?P=q)|(?P<v>(?!\[REDACTED|\$|-)[^\s'\";&|\\]{2,}))"
_GLUED = VALUE.replace("{2,}", "{1,}")  # 7z -px: one character is a password there (a bare -p asks)
ANY_WORD = VALUE.replace("|\\$|-)", "|\\$)")  # a positional argument: whatever its first character
# Oracle's user/password: quoted (it may hold '@' then), or up to the '@' of the database.
ORACLE_PASSWORD = r"(?:\"(?P<v1>(?!\[REDACTED)[^\"\n]+)\"|(?P<v>(?!\[REDACTED)[^\s@'\"]+))"
_SP = r"[ \t]"
_ARG = r"(?:[ \t]+|=)"  # an option and its value: -p x, --password=x

PROGRAMS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("zip ", "unzip", "zipcloak", "sqlcmd", "bcp ", "osql", "isql"), (_SP + r"-P[ \t]*" + VALUE,)),
    (("7z ", "7za", "7zr", "7zz", "rar ", "unrar"), (_SP + r"-p" + _GLUED,)),
    (
        (
            "mongo",
            "mongosh",
            "mongodump",
            "mongorestore",
            "mongoexport",
            "mongoimport",
            "mongostat",
            "mongotop",
            "mongofiles",
            "cqlsh",
            "twine",
            "influx",
        ),
        (_SP + r"-(?:p|password)" + _ARG + VALUE,),
    ),  # fmt: skip
    (
        (
            "ldapsearch",
            "ldapadd",
            "ldapmodify",
            "ldapdelete",
            "ldapwhoami",
            "ldapcompare",
            "ldapmodrdn",
            "ldapexop",
            "ldapurl",
        ),
        (_SP + r"-w[ \t]*" + VALUE,),
    ),  # fmt: skip
    (("ldappasswd",), (_SP + r"-[was][ \t]*" + VALUE,)),  # the bind, old and new passwords
    # not -storepass:env NAME / :file PATH, which say where the password is
    (("keytool", "jarsigner"), (_SP + r"-(?:(?:src|dest)?(?:store|key)pass|new)[ \t]+" + VALUE,)),
    (
        ("openssl",),
        (
            _SP + r"(?:-k[ \t]+|-(?:pass|passin|passout|password)[ \t]+pass:)" + VALUE,
            _SP + r"passwd(?:[ \t]+-salt[ \t]+\S+|[ \t]+-\S+)*[ \t]+" + VALUE,
        ),
    ),
    (("ssh-keygen",), (_SP + r"-[NP][ \t]*" + VALUE,)),
    (("doctl",), (_SP + r"(?:-t|--access-token)" + _ARG + VALUE,)),
    (("lftp",), (_SP + r"-u[ \t]+['\"]?[^\s,'\"]+,(?P<v>(?!\[REDACTED|\$)[^\s'\"]+)",)),
    (("mkpasswd",), (r"(?:[ \t]+-[msRS][ \t]+\S+|[ \t]+-\S+)*[ \t]+" + VALUE,)),
    (("rabbitmqctl",), (_SP + r"(?:add_user|change_password)[ \t]+\S+[ \t]+" + ANY_WORD,)),
    (("mysqladmin",), (_SP + r"password[ \t]+" + ANY_WORD,)),
    (("neo4j-admin", "neo4j"), (r"set-initial-password[ \t]+" + ANY_WORD,)),
    (("net user", "net use"), (r"[ \t]+\S+[ \t]+(?![/*])" + VALUE,)),  # net user bob x /add; a * asks
    (("cargo login",), (r"[ \t]+" + VALUE + r"[ \t]*$",)),  # the token is its last word (--registry r x)
    (("poetry config",), (r"[ \t]+(?:http-basic\.\S+[ \t]+\S+|pypi-token\.\S+)[ \t]+" + VALUE,)),
    (("vault login",), (r"(?:[ \t]+-\S+)*[ \t]+(?P<v>(?!\[REDACTED|\$|-)[^\s=\"']{8,})(?=[ \t]*$)",)),
    (("gh secret",), (_SP + r"(?:--body|-b)" + _ARG + VALUE,)),
    (("az keyvault",), (_SP + r"--value" + _ARG + VALUE,)),
    (("az login",), (_SP + r"(?:-p|--password)" + _ARG + VALUE,)),
    (("aws ",), (_SP + r"--secret-string" + _ARG + VALUE, r"put-parameter\b.*?[ \t]--value" + _ARG + VALUE)),
    (("set-secret",), (_SP + r"-Secret[ \t]+" + VALUE,)),
    (
        ("sqlplus", "sqlldr", "impdp", "expdp", "rman", "dgmgrl", "sqlcl"),
        (r"(?:^|[ \t=])['\"]?[A-Za-z][\w$#.]*/" + ORACLE_PASSWORD + r"(?=@|['\"]|[ \t]|$)",),
    ),
)

# The names, each once, longest first ("mongodump" before "mongo"): lowercase, as the literals
# the engine finds them by in the lowercased text. A short name that is a common part of words
# ("7z", "aws", "zip") is written with the space that follows it (not "zip(" of Python).
NAMES = tuple(sorted({n for names, _ in PROGRAMS for n in names}, key=lambda n: (-len(n), n)))
_BY_NAME = {n.rstrip(): i for i, (names, _) in enumerate(PROGRAMS) for n in names}
_FOLLOWS = [tuple(re.compile(f) for f in follows) for _, follows in PROGRAMS]
# The rule's pattern: a program's name at a word's start (a path before it is its folder), then its
# command up to a |, ;, & or newline. Names are matched in any case (PowerShell's Set-Secret).
COMMAND = (
    r"(?i)(?<![\w\-.])(?P<prog>"
    + "|".join(re.escape(n.rstrip()) + (r"(?=[ \t])" if n.endswith(" ") else r"(?![\w\-])") for n in NAMES)
    + r")(?P<rest>[^\n|;&]*)"
)
STARTS = "|".join(re.escape(n) for n in NAMES)
# What the engine looks for with str.find: the names' first four characters, none a prefix of
# another ("ldap" for every ldap* program); a scan of the text each.
_HEADS = {n[:4] for n in NAMES}
LITS = tuple(sorted(p for p in _HEADS if not any(q != p and p.startswith(q) for q in _HEADS)))


def follows(prog: str) -> tuple[re.Pattern, ...]:
    """The patterns of the secrets on the command line of ``prog`` (its name as the rule matched it)."""
    return _FOLLOWS[_BY_NAME[prog.lower()]]
