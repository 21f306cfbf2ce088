"""Golden queries for the recall eval (eval/recall_eval.py), written by hand.

Written by reading the code of five pinned sdists that memtree does not
depend on (CORPUS); never derived from memtree's output. Each gold entry is
``"<sdist dir>/<path>:<symbol>"`` (``Class.method`` for a method); the eval
turns it into a file and a line range with ``ast`` on the pinned file, so the
gold is at file and line-range level and a version drift fails loudly.

Kinds: ``symbol`` (a bare name), ``paraphrase`` (behaviour described without
the code's words), ``architecture`` ("where is X handled"), ``none`` (nothing
in the corpus answers it: the search should abstain).
"""

from __future__ import annotations

CORPUS = {  # sdist name -> pinned version (fetched with pip download --no-binary :all:)
    "boltons": "25.0.0",
    "itsdangerous": "2.2.0",
    "cachetools": "5.5.2",
    "schedule": "1.2.2",
    "toolz": "1.0.0",
}

B = "boltons-25.0.0/boltons/"
I = "itsdangerous-2.2.0/src/itsdangerous/"
C = "cachetools-5.5.2/src/cachetools/"
S = "schedule-1.2.2/schedule/__init__.py"
T = "toolz-1.0.0/toolz/"

# (kind, query, [gold, ...]); gold "path:symbol" (path relative to the corpus dir).
QUERIES: list[tuple[str, str, list[str]]] = [
    # -- bare symbols ---------------------------------------------------------------------
    ("symbol", "OrderedMultiDict", [B + "dictutils.py:OrderedMultiDict", B + "urlutils.py:OrderedMultiDict"]),
    ("symbol", "BufferedSocket", [B + "socketutils.py:BufferedSocket"]),
    ("symbol", "TimestampSigner", [I + "timed.py:TimestampSigner"]),
    ("symbol", "TTLCache", [C + "__init__.py:TTLCache"]),
    ("symbol", "Scheduler", [S + ":Scheduler"]),
    ("symbol", "curry", [T + "functoolz.py:curry"]),
    ("symbol", "remap", [B + "iterutils.py:remap"]),
    ("symbol", "IndexedSet", [B + "setutils.py:IndexedSet"]),
    ("symbol", "AtomicSaver", [B + "fileutils.py:AtomicSaver"]),
    ("symbol", "FunctionBuilder", [B + "funcutils.py:FunctionBuilder"]),
    ("symbol", "LRUCache", [C + "__init__.py:LRUCache"]),
    ("symbol", "Signer", [I + "signer.py:Signer"]),
    ("symbol", "URLSafeTimedSerializer", [I + "url_safe.py:URLSafeTimedSerializer"]),
    ("symbol", "BadSignature", [I + "exc.py:BadSignature"]),
    ("symbol", "Job", [S + ":Job"]),
    ("symbol", "merge_with", [T + "dicttoolz.py:merge_with"]),
    ("symbol", "sliding_window", [T + "itertoolz.py:sliding_window"]),
    ("symbol", "get_in", [T + "dicttoolz.py:get_in"]),
    ("symbol", "SpooledBytesIO", [B + "ioutils.py:SpooledBytesIO"]),
    ("symbol", "ThresholdCounter", [B + "cacheutils.py:ThresholdCounter"]),
    ("symbol", "HMACAlgorithm", [I + "signer.py:HMACAlgorithm"]),
    ("symbol", "hashkey", [C + "keys.py:hashkey"]),
    ("symbol", "cachedproperty", [B + "cacheutils.py:cachedproperty", B + "urlutils.py:cachedproperty"]),
    ("symbol", "bucketize", [B + "iterutils.py:bucketize"]),
    ("symbol", "TracebackInfo", [B + "tbutils.py:TracebackInfo"]),
    ("symbol", "parse_timedelta", [B + "timeutils.py:parse_timedelta"]),
    ("symbol", "JSONLIterator", [B + "jsonutils.py:JSONLIterator"]),
    ("symbol", "Bits", [B + "mathutils.py:Bits"]),
    ("symbol", "reduceby", [T + "itertoolz.py:reduceby"]),
    ("symbol", "FrozenDict", [B + "dictutils.py:FrozenDict"]),
    ("symbol", "ExceptionInfo", [B + "tbutils.py:ExceptionInfo"]),
    ("symbol", "TLRUCache", [C + "__init__.py:TLRUCache"]),
    ("symbol", "BarrelList", [B + "listutils.py:BarrelList"]),
    ("symbol", "Stats", [B + "statsutils.py:Stats"]),
    # -- paraphrased behaviour -----------------------------------------------------------
    (
        "paraphrase",
        "add the same amount of leading whitespace to every line of a block of text",
        [B + "strutils.py:indent"],
    ),
    (
        "paraphrase",
        "turn a count of bytes into a short human readable size like 1.2K or 3M",
        [B + "strutils.py:bytes2human"],
    ),
    ("paraphrase", "convert CamelCase names to snake case with underscores", [B + "strutils.py:camel2under"]),
    (
        "paraphrase",
        "make a string safe for use in a web address by replacing scary characters with dashes",
        [B + "strutils.py:slugify"],
    ),
    (
        "paraphrase",
        "write a file so readers never see a half written version, renaming a temporary file into place",
        [B + "fileutils.py:AtomicSaver", B + "fileutils.py:atomic_save"],
    ),
    (
        "paraphrase",
        "create a directory together with any missing parents and do not fail if it exists",
        [B + "fileutils.py:mkdir_p"],
    ),
    (
        "paraphrase",
        "read the lines of a file starting from the end going backwards",
        [B + "jsonutils.py:reverse_iter_lines"],
    ),
    (
        "paraphrase",
        "break a list into pieces of a fixed size",
        [B + "iterutils.py:chunked", B + "iterutils.py:chunked_iter", T + "itertoolz.py:partition_all"],
    ),
    (
        "paraphrase",
        "geometrically growing delays for retrying with optional jitter",
        [B + "iterutils.py:backoff_iter", B + "iterutils.py:backoff"],
    ),
    (
        "paraphrase",
        "an ordering-preserving set that also supports indexing by position",
        [B + "setutils.py:IndexedSet"],
    ),
    ("paraphrase", "remove terminal color escape sequences from a string", [B + "strutils.py:strip_ansi"]),
    ("paraphrase", "turn 1 into 1st and 2 into 2nd", [B + "strutils.py:ordinalize"]),
    ("paraphrase", "turn a plural English word into its singular form", [B + "strutils.py:singularize"]),
    ("paraphrase", "limit a number so it stays between a lower and an upper bound", [B + "mathutils.py:clamp"]),
    ("paraphrase", "a cache that evicts whichever entry was used least often", [C + "__init__.py:LFUCache"]),
    ("paraphrase", "a cache that throws away a random entry when it is full", [C + "__init__.py:RRCache"]),
    (
        "paraphrase",
        "entries in the cache expire after a fixed number of seconds",
        [C + "__init__.py:TTLCache", C + "func.py:ttl_cache"],
    ),
    (
        "paraphrase",
        "apply a sequence of functions to a value one after another, left to right",
        [T + "functoolz.py:pipe", T + "functoolz.py:thread_first", T + "functoolz.py:compose_left"],
    ),
    ("paraphrase", "count how many times each distinct value appears in a sequence", [T + "itertoolz.py:frequencies"]),
    ("paraphrase", "return a copy of a mapping without some of its keys", [T + "dicttoolz.py:dissoc"]),
    (
        "paraphrase",
        "look up a value deep inside nested dictionaries following a list of keys",
        [T + "dicttoolz.py:get_in", B + "iterutils.py:get_path"],
    ),
    (
        "paraphrase",
        "merge several already ordered sequences into one ordered sequence",
        [T + "itertoolz.py:merge_sorted"],
    ),
    ("paraphrase", "keep a random subset of items each with a given probability", [T + "itertoolz.py:random_sample"]),
    ("paraphrase", "run a job at a random interval between two bounds", [S + ":Job.to"]),
    ("paraphrase", "stop running a periodic job after a given deadline", [S + ":Job.until"]),
    ("paraphrase", "how many seconds until the next job is due", [S + ":Scheduler.idle_seconds", S + ":idle_seconds"]),
    (
        "paraphrase",
        "encode bytes as base64 that is safe in URLs and drop the padding",
        [I + "encoding.py:base64_encode"],
    ),
    (
        "paraphrase",
        "compress the payload with zlib before signing when that makes it shorter",
        [I + "url_safe.py:URLSafeSerializerMixin.dump_payload"],
    ),
    (
        "paraphrase",
        "decide whether a serializer produces text or binary output",
        [I + "serializer.py:is_text_serializer"],
    ),
    (
        "paraphrase",
        "parse a string of number ranges like 1-3,5 into a sorted list of integers",
        [B + "strutils.py:parse_int_list"],
    ),
    ("paraphrase", "pick out web addresses mentioned in free text", [B + "urlutils.py:find_all_links"]),
    ("paraphrase", "replace home directory prefix of a path with a tilde", [B + "pathutils.py:shrinkuser"]),
    (
        "paraphrase",
        "quote arguments so a Windows command line parses them back unchanged",
        [B + "strutils.py:args2cmd", B + "ecoutils.py:_args2cmd"],
    ),
    (
        "paraphrase",
        "compute the median, mean and variance of a list of numbers",
        [B + "statsutils.py:Stats", B + "statsutils.py:describe"],
    ),
    # -- architecture: where is X handled -------------------------------------------------
    ("architecture", "where is an expired timestamped signature rejected", [I + "timed.py:TimestampSigner.unsign"]),
    (
        "architecture",
        "where are several secret keys tried in turn for key rotation when loading",
        [I + "serializer.py:Serializer.iter_unsigners", I + "serializer.py:Serializer.loads"],
    ),
    (
        "architecture",
        "where is the signing key derived from the secret and the salt",
        [I + "signer.py:Signer.derive_key"],
    ),
    (
        "architecture",
        "where is a signature compared in constant time",
        [I + "signer.py:SigningAlgorithm.verify_signature", I + "signer.py:Signer.verify_signature"],
    ),
    (
        "architecture",
        "where does the scheduler compute the next time a job should run",
        [S + ":Job._schedule_next_run"],
    ),
    (
        "architecture",
        "where does a job unschedule itself after running",
        [S + ":Job.run", S + ":CancelJob", S + ":Scheduler._run_job"],
    ),
    (
        "architecture",
        "where are daylight saving time offsets corrected for scheduled jobs",
        [S + ":Job._correct_utc_offset"],
    ),
    ("architecture", "where is the time string passed to at() validated", [S + ":Job.at"]),
    (
        "architecture",
        "where does the memoizing decorator take the lock around cache access",
        [C + "_decorators.py:_cached_locked", C + "_decorators.py:_cached_locked_info"],
    ),
    (
        "architecture",
        "where are expired items removed from the time aware cache",
        [C + "__init__.py:TTLCache.expire", C + "__init__.py:TLRUCache.expire"],
    ),
    (
        "architecture",
        "where is the cache size checked when a new value is inserted",
        [C + "__init__.py:Cache.__setitem__"],
    ),
    (
        "architecture",
        "where are cache hits and misses counted for cache_info",
        [C + "_decorators.py:_cached_locked_info", C + "_decorators.py:_cached_unlocked_info"],
    ),
    (
        "architecture",
        "where does the socket wrapper keep reading until it sees a delimiter",
        [B + "socketutils.py:BufferedSocket.recv_until"],
    ),
    (
        "architecture",
        "where is a netstring message read from the socket",
        [B + "socketutils.py:NetstringSocket.read_ns"],
    ),
    (
        "architecture",
        "where is a url's host and port parsed",
        [B + "urlutils.py:parse_host", B + "urlutils.py:parse_url"],
    ),
    (
        "architecture",
        "where are dot and dot-dot segments removed from a URL path",
        [B + "urlutils.py:resolve_path_parts"],
    ),
    (
        "architecture",
        "where does the spooled buffer switch from memory to a temporary file on disk",
        [B + "ioutils.py:SpooledBytesIO.rollover", B + "ioutils.py:SpooledStringIO.rollover"],
    ),
    (
        "architecture",
        "where is a new function compiled from source text with a given signature",
        [B + "funcutils.py:FunctionBuilder.get_func"],
    ),
    (
        "architecture",
        "where does wraps copy the signature of the wrapped function",
        [B + "funcutils.py:update_wrapper"],
    ),
    ("architecture", "where is a traceback parsed back from its printed text form", [B + "tbutils.py:ParsedException"]),
    (
        "architecture",
        "where are partial arguments merged when a curried function is called",
        [T + "functoolz.py:curry"],
    ),
    ("architecture", "where is the result of a memoized function stored and looked up", [T + "functoolz.py:memoize"]),
    (
        "architecture",
        "where does the priority queue break ties between tasks of equal priority",
        [B + "queueutils.py:BasePriorityQueue.add", B + "queueutils.py:BasePriorityQueue"],
    ),
    ("architecture", "where are file permissions converted to and from rwx strings", [B + "fileutils.py:FilePerms"]),
    (
        "architecture",
        "where does the LRU cache move an entry to the most recent position on access",
        [B + "cacheutils.py:LRU", C + "__init__.py:LRUCache"],
    ),
    ("architecture", "where are environment variables expanded in a path", [B + "pathutils.py:expandpath"]),
    # -- no answer in the corpus -----------------------------------------------------------
    ("none", "send an email with an attachment over SMTP", []),
    ("none", "resize a JPEG image and keep its aspect ratio", []),
    ("none", "train a neural network with gradient descent", []),
    ("none", "render a Markdown document to HTML", []),
    ("none", "open a connection pool to a PostgreSQL database", []),
    ("none", "compute the determinant of a square matrix", []),
    ("none", "play an audio file through the speakers", []),
    ("none", "OAuth2 authorization code flow with refresh tokens", []),
    ("none", "Dockerfile multi-stage build for a Go binary", []),
    ("none", "kubernetes deployment rollout status", []),
    ("none", "translate text between English and French", []),
    ("none", "GPU kernel launch configuration", []),
    ("none", "draw a bar chart with matplotlib", []),
    ("none", "parse command line flags with argparse subcommands", []),
    ("none", "WebSocket handshake upgrade headers", []),
    ("none", "bluetooth device pairing", []),
    ("none", "React component state hooks", []),
    ("none", "CSV export of a spreadsheet with formulas", []),
    ("none", "geographic distance between two latitude longitude points", []),
    ("none", "compile a regular expression to a DFA", []),
    ("none", "LaTeX equation typesetting", []),
    ("none", "elliptic curve key exchange", []),
    ("none", "easter date calculation", []),  # boltons' easterutils is a joke module, not a date routine
]

# The CI subset (tests/unit/recall/test_recall_eval.py): every third query of the list, all
# four kinds; the queries cost milliseconds, the corpus ingest is the time.
SMALL = {q[1] for q in QUERIES[::3]}
