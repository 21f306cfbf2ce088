"""The wire protocol: the only module that knows what goes on the wire.

Every frame is one JSON map, the envelope::

    {"v": 1, "id": "...", "kind": "call|cast|reply|event", "type": "AddNode",
     "src": "mcp", "body": {...}}

``decode()`` turns bytes into an ``Envelope`` whose ``body`` is already the
typed record for ``type``; handlers never see raw dicts. Replies carry
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": {"code", "message"}}``
and never a traceback.

Standard library only at import (orjson on first use), and no dataclasses or
enum: the capture hook imports this under ``python -I -S``.

Sockets (names for ``paths.endpoint``):
- ``write``   writer ROUTER  <- DEALER (front, walkers): calls
- ``ingest``  writer ROUTER  <- DEALER (hook, ZMTP): Ingest calls, ack after commit
- ``events``  writer PUB     -> SUB (walkers, front): NodesChanged events
- ``embed``   embed walker ROUTER <- DEALER (front, CLI): EmbedQuery calls
- ``sup-<pid>.hb``  supervisor PULL <- PUSH (every actor): Heartbeat casts
- ``sup-<pid>.ctl`` supervisor ROUTER <- DEALER (memtree ctl): Ctl* calls
"""

import os
import time


def _codec() -> None:
    """Bind ``_dumps``/``_loads`` on first use, not at import: orjson when it
    can be imported (every actor), else json. The capture hook imports this
    module under ``-I -S`` and encodes and reads its frames by hand; installed
    in site-packages it can import orjson, whose own imports (uuid, platform,
    re, dataclasses) cost ~60 ms there, and json imports re (~20 ms)."""
    global _dumps, _loads
    try:
        import orjson

        _dumps, _loads = orjson.dumps, orjson.loads
    except ImportError:  # pragma: no cover - the hook's slow path in a checkout
        import json

        def _dumps(obj) -> bytes:
            return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")

        _loads = json.loads


def _dumps(obj) -> bytes:
    _codec()
    return _dumps(obj)


def _loads(data):
    _codec()
    return _loads(data)


PROTOCOL_VERSION = 1
KINDS = ("call", "cast", "reply", "event")

# The largest message the writer's sockets accept (ZMQ_MAXMSGSIZE): a peer
# sending more is disconnected before the bytes are buffered. The hook's ZMTP
# client refuses replies above the same size (memtree.capture.zmtp.MAX_FRAME).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

SOCK_WRITE = "write"
SOCK_INGEST = "ingest"
SOCK_EVENTS = "events"
SOCK_EMBED = "embed"


def sup_heartbeat_sock(pid: int) -> str:
    return f"sup-{pid}.hb"


def sup_control_sock(pid: int) -> str:
    return f"sup-{pid}.ctl"


class ErrorCode:
    """Error codes carried in error replies (strings, so logs read well)."""

    BAD_REQUEST = "bad_request"  # malformed frame or wrong field types
    UNKNOWN_TYPE = "unknown_type"
    VERSION = "version_mismatch"
    NOT_FOUND = "not_found"
    REFUSED = "refused"  # policy said no: denylisted, tombstoned
    UNAVAILABLE = "unavailable"  # writer down / read-only mode
    TIMEOUT = "timeout"
    BUSY = "busy"
    INTERNAL = "internal"


class ProtocolError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# -- records -------------------------------------------------------------------

_ANY = object()
_NOTHING = object()
_set = object.__setattr__  # records are immutable: their own __setattr__ refuses


class Record:
    """A small typed message. Subclasses list ``FIELDS`` as (name, types, default).

    ``types`` is a type or tuple of types checked with isinstance at decode;
    ``_NOTHING`` as default means required.
    """

    __slots__ = ()
    TYPE = ""
    FIELDS: tuple = ()

    def __init__(self, **kw):
        for name, types, default in self.FIELDS:
            value = kw.pop(name, _NOTHING)
            if value is _NOTHING:
                if default is _NOTHING:
                    raise ProtocolError(ErrorCode.BAD_REQUEST, f"{self.TYPE}: missing field {name!r}")
                value = default() if callable(default) else default  # a default needs no check
            elif types is not _ANY and value is not None and not isinstance(value, types):
                raise ProtocolError(
                    ErrorCode.BAD_REQUEST,
                    f"{self.TYPE}: field {name!r} has type {type(value).__name__}",
                )
            _set(self, name, value)
        if kw:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"{self.TYPE}: unknown field(s) {sorted(kw)}")

    def __setattr__(self, name, value):
        raise AttributeError(f"{self.TYPE} is immutable")

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name, _, _ in self.FIELDS}

    def __eq__(self, other):
        return type(other) is type(self) and other.to_dict() == self.to_dict()

    def __repr__(self) -> str:
        return f"{self.TYPE}({self.to_dict()!r})"


MESSAGES: dict[str, type] = {}


def _rec(type_name: str, *fields: tuple) -> type:
    """Define and register a record class with (name, types, default) fields."""
    cls = type(type_name, (Record,), {"__slots__": tuple(f[0] for f in fields), "TYPE": type_name, "FIELDS": fields})
    MESSAGES[type_name] = cls
    return cls


S, I, L, D, B, F = str, int, list, dict, bool, (int, float)
REQ = _NOTHING

# writer calls (front, walkers, hook)
Ping = _rec("Ping")
AddNode = _rec(
    "AddNode",
    ("kind", S, REQ),
    ("content", S, REQ),
    ("parent_id", S, None),
    ("source_uri", S, None),
    ("metadata", D, dict),
    ("session_id", S, None),
    ("status", S, "pending"),
    ("mtime", I, 0),
    ("refs", L, list),  # [{"dst": id, "kind": edge kind}] edges from the new node
)
Ingest = _rec(
    "Ingest",  # one Claude Code hook payload, as Claude Code sent it
    # rewrite: the hook can show Claude Code a replacement; the reply may carry
    # result.hook_output (memtree.capture.rewrite), its last key.
    ("payload", D, REQ),
    ("received_at", I, 0),
    ("rewrite", B, False),
)
SetStatus = _rec(
    "SetStatus",
    ("ids", L, REQ),
    ("status", S, REQ),
    ("reason", S, ""),
    ("expect", L, None),
)
AddEdges = _rec("AddEdges", ("edges", L, REQ))  # [{"src", "dst", "kind"}]
Forget = _rec("Forget", ("node_id", S, REQ), ("reason", S, REQ))
Purge = _rec("Purge", ("ids", L, REQ), ("reason", S, REQ))  # delete pruned rows past retention; audit stays
# Re-apply the current redaction gate to the rows ``ids`` (redact --rescan, the filter walker);
# ``current``: [id, content_hash] of rows the caller found its gate (``version``) keeps as
# they are, whose redaction mark alone is brought up to date.
Redact = _rec("Redact", ("ids", L, REQ), ("current", L, list), ("version", I, 0))
Reclaim = _rec("Reclaim", ("pages", I, 0))  # incremental vacuum: free pages back to the OS (0 = all)
RebuildIndexes = _rec("RebuildIndexes", ("reason", S, REQ))  # FTS and vectors rebuilt from nodes (doctor --fix)
# pruner, every sweep: bookkeeping's bounded retention (store/write/bookkeeping.py);
# spool_since = capture time (ms) of the oldest spool entry not yet applied, 0 if none
Tidy = _rec("Tidy", ("spool_since", I, 0))
# pruner, after Tidy when FTS5 flushed segments since the index settled: one bounded
# FTS5 'merge' step of at most ``pages`` pages (store/write/fts.py)
MergeFts = _rec("MergeFts", ("pages", I, 200))
PutFile = _rec(
    "PutFile",  # chunks of one file read by the wrapped read tool
    ("path", S, REQ),
    ("mtime", I, REQ),
    ("size", I, 0),
    ("chunks", L, REQ),
    ("session_id", S, None),
)
PutToolOutput = _rec(
    "PutToolOutput",  # a wrapped grep/bash result and its per-hit children
    ("tool", S, REQ),
    ("content", S, REQ),
    ("metadata", D, dict),
    ("children", L, list),
    ("session_id", S, None),
    ("source_uri", S, None),
)
PutVectors = _rec(
    "PutVectors",  # [{"node_id", "content_hash", "vector": [float]}], all of one model and dimension
    ("model", S, REQ),
    ("dim", I, REQ),
    ("items", L, REQ),
)
Supersede = _rec(
    "Supersede",  # dedupe: keep_id (newer) supersedes old_id; score audited
    ("keep_id", S, REQ),
    ("old_id", S, REQ),
    ("score", F, REQ),
    ("reason", S, ""),
)

# embed walker (its own ROUTER): the front never loads the model
EmbedQuery = _rec("EmbedQuery", ("text", S, REQ))  # -> {"model", "dim", "vector"}

# supervisor
Heartbeat = _rec(
    "Heartbeat",
    ("name", S, REQ),
    ("pid", I, REQ),
    ("state", S, "running"),
    ("backlog", I, 0),
    ("info", D, dict),
)
CtlStatus = _rec("CtlStatus")
CtlRestart = _rec("CtlRestart", ("name", S, REQ))
CtlStop = _rec("CtlStop", ("name", S, REQ))
CtlStart = _rec("CtlStart", ("name", S, REQ))
CtlShutdown = _rec("CtlShutdown")

# events (writer PUB); topic is the type name
NodesChanged = _rec("NodesChanged", ("ids", L, REQ), ("status", S, REQ), ("kinds", L, list))
Stop = _rec("Stop")


# -- envelope ------------------------------------------------------------------


class Envelope:
    __slots__ = ("v", "id", "kind", "type", "src", "body")

    def __init__(self, kind: str, type: str, body, id: str = "", src: str = "", v: int = PROTOCOL_VERSION):
        self.v, self.id, self.kind, self.type, self.src, self.body = v, id, kind, type, src, body

    def __repr__(self) -> str:
        return f"Envelope({self.kind} {self.type} id={self.id} src={self.src})"


_counter = 0


def new_id() -> str:
    global _counter
    _counter += 1
    return f"{os.getpid():x}-{time.monotonic_ns():x}-{_counter:x}"


def _envelope(kind: str, rec: Record, src: str, id: str | None) -> bytes:
    return _dumps(
        {"v": PROTOCOL_VERSION, "id": id or "", "kind": kind, "type": rec.TYPE, "src": src, "body": rec.to_dict()}
    )


def encode_call(rec: Record, src: str = "", id: str | None = None) -> tuple[str, bytes]:
    rid = id or new_id()
    return rid, _envelope("call", rec, src, rid)


def encode_cast(rec: Record, src: str = "") -> bytes:
    return _envelope("cast", rec, src, "")


def encode_event(rec: Record, src: str = "") -> bytes:
    return _envelope("event", rec, src, "")


def _reply(req_id: str, src: str, body: dict) -> bytes:
    return _dumps({"v": PROTOCOL_VERSION, "id": req_id, "kind": "reply", "type": "Reply", "src": src, "body": body})


def encode_ok(req_id: str, result=None, src: str = "") -> bytes:
    return _reply(req_id, src, {"ok": True, "result": result})


def encode_error(req_id: str, code: str, message: str, src: str = "") -> bytes:
    return _reply(req_id, src, {"ok": False, "error": {"code": code, "message": message}})


def encode_ingest_raw(
    payload_json: bytes, src: str = "hook", received_at: int = 0, rewrite: bool = False
) -> tuple[str, bytes]:
    """An ``Ingest`` call whose payload is JSON text already (UTF-8, one object).

    The hook forwards Claude Code's stdin without parsing it (importing json
    costs more than the rest of the hook). Decodes exactly like
    ``encode_call(Ingest(payload=<parsed>, received_at=...))``; text that is
    not one JSON object makes the frame malformed, which the writer answers
    with ``bad_request`` and counts.
    """
    rid = new_id()
    head = f'{{"v":{PROTOCOL_VERSION},"id":"{rid}","kind":"call","type":"Ingest","src":"{src}","body":{{"payload":'
    tail = f',"received_at":{int(received_at)}' + (',"rewrite":true' if rewrite else "") + "}}"
    return rid, head.encode() + payload_json + tail.encode()


# -- the ingest reply -------------------------------------------------------------
# The hook reads it without a JSON parser (importing json costs more than the
# rest of a hook run), so its layout is fixed here and only here: ``skipped``
# first, ``stored`` next, the other fields, ``hook_output`` last.


class IngestReply:
    """What the writer answers an ``Ingest``, and what the hook makes of it.

    ``stored``: ids of the nodes stored (None when only the fast path read
    the frame and did not need them); ``skipped``: why nothing was stored, a
    Skip kind (memtree.capture.plans.SKIP_KINDS) or "forgotten" (every node
    refused by a tombstone); ``hook_output``: the raw JSON (bytes) the hook
    prints, a replacement of a large native output; ``error``: an ErrorCode
    (or "unreachable" when no reply came), with ``detail`` for the log."""

    __slots__ = ("stored", "skipped", "hook_output", "error", "detail")

    def __init__(self, stored=None, skipped=None, hook_output=None, error=None, detail=None):
        self.stored, self.skipped, self.hook_output, self.error, self.detail = (
            stored,
            skipped,
            hook_output,
            error,
            detail,
        )

    @property
    def ok(self) -> bool:
        return self.error is None

    def __repr__(self) -> str:
        return (
            f"IngestReply(stored={self.stored!r}, skipped={self.skipped!r}, error={self.error!r}, "
            f"hook_output={'yes' if self.hook_output else 'no'})"
        )


_INGEST_RESULT_HEAD = b',"body":{"ok":true,"result":{"skipped":'
HOOK_OUTPUT_KEY = b',"hook_output":'


def encode_ingest_reply(req_id: str, result: dict, hook_output: dict | None = None, src: str = "") -> bytes:
    """An ok reply to an ``Ingest`` in the layout ``parse_ingest_reply`` reads:
    ``result`` (memtree.store.write.captures.apply_plan's fields) with
    ``skipped`` and ``stored`` first and ``hook_output`` last."""
    ordered = {"skipped": result.get("skipped"), "stored": list(result.get("stored") or [])}
    ordered.update((k, v) for k, v in result.items() if k not in ordered and k != "hook_output")
    if hook_output is not None:
        ordered["hook_output"] = hook_output
    return encode_ok(req_id, ordered, src)


def parse_ingest_reply(frame: bytes, req_id: str) -> IngestReply:
    """An ingest reply frame as an IngestReply. An ok reply in the layout of
    ``encode_ingest_reply`` is read by hand (``stored`` left None); anything
    else is decoded properly."""
    fast = _parse_ok_ingest(frame, req_id)
    if fast is not None:
        return fast
    try:
        env = decode(frame)
    except ProtocolError as e:
        return IngestReply(error=e.code, detail=f"undecodable reply ({e.code})")
    if env.kind != "reply" or env.id != req_id:
        return IngestReply(error=ErrorCode.BAD_REQUEST, detail="reply to another request")
    if not env.body.get("ok"):
        err = env.body.get("error") if isinstance(env.body.get("error"), dict) else {}
        return IngestReply(error=str(err.get("code", ErrorCode.INTERNAL)), detail=str(err.get("message", "")))
    result = env.body.get("result") if isinstance(env.body.get("result"), dict) else {}
    out = result.get("hook_output")
    return IngestReply(
        stored=result.get("stored"),
        skipped=result.get("skipped") or None,
        hook_output=_dumps(out) if isinstance(out, dict) else None,
    )


def _parse_ok_ingest(frame: bytes, req_id: str) -> IngestReply | None:
    if not reply_is_ok(frame, req_id):
        return None
    at = frame.find(_INGEST_RESULT_HEAD)
    if at < 0:
        return None
    at += len(_INGEST_RESULT_HEAD)
    if frame.startswith(b"null", at):
        skipped = None
    elif frame.startswith(b'"', at):
        end = frame.find(b'"', at + 1)
        word = frame[at + 1 : end] if end > 0 else b"\\"
        if not word.isalpha():  # a kind is one plain word; anything else: decode properly
            return None
        skipped = word.decode()
    else:
        return None
    return IngestReply(skipped=skipped, hook_output=_hook_output(frame))


def _hook_output(frame: bytes) -> bytes | None:
    """The raw JSON of ``result.hook_output``: the last key, so the frame ends
    with it and the closing braces of result, body and envelope."""
    if not frame.endswith(b"}}}}"):
        return None
    at = frame.find(HOOK_OUTPUT_KEY)  # structural: inside JSON strings every quote is escaped
    if at < 0:
        return None
    out = frame[at + len(HOOK_OUTPUT_KEY) : -3]
    return out if out.startswith(b"{") else None


def reply_is_ok(frame: bytes, req_id: str) -> bool | None:
    """Cheap check of a reply frame without a JSON parser: True for an ok reply
    to ``req_id`` as ``encode_ok`` writes it; None when it cannot tell (decode it)."""
    head = f'{{"v":{PROTOCOL_VERSION},"id":"{req_id}","kind":"reply","type":"Reply","src":"'.encode()
    if not frame.startswith(head):
        return None
    at = frame.find(b'","body":{"ok":', len(head))
    if at < 0 or b'"' in frame[len(head) : at]:
        return None
    return frame.startswith(b"true", at + len(b'","body":{"ok":')) or None


def decode(frame: bytes) -> Envelope:
    """Bytes -> Envelope with a typed body (replies keep their {ok, ...} map).

    Raises ProtocolError (with the request id in ``.req_id`` when known) for a
    malformed frame, an unknown type, a bad field or a version mismatch.
    """
    try:
        obj = _loads(frame)
    except (ValueError, TypeError) as e:
        raise ProtocolError(ErrorCode.BAD_REQUEST, f"frame is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise ProtocolError(ErrorCode.BAD_REQUEST, "frame is not a JSON object")
    req_id = obj.get("id") if isinstance(obj.get("id"), str) else ""
    try:
        v, kind, typ, body = obj.get("v"), obj.get("kind"), obj.get("type"), obj.get("body")
        if v != PROTOCOL_VERSION:
            raise ProtocolError(ErrorCode.VERSION, f"protocol version {v!r}, expected {PROTOCOL_VERSION}")
        if kind not in KINDS:
            raise ProtocolError(ErrorCode.BAD_REQUEST, f"unknown envelope kind {kind!r}")
        if not isinstance(body, dict):
            raise ProtocolError(ErrorCode.BAD_REQUEST, "body is not a JSON object")
        src = obj.get("src") if isinstance(obj.get("src"), str) else ""
        if kind == "reply":
            if not isinstance(body.get("ok"), bool):
                raise ProtocolError(ErrorCode.BAD_REQUEST, "reply without ok")
            return Envelope(kind, "Reply", body, req_id, src)
        cls = MESSAGES.get(typ) if isinstance(typ, str) else None
        if cls is None:
            raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown message type {typ!r}")
        return Envelope(kind, typ, cls(**body), req_id, src)
    except ProtocolError as e:
        e.req_id = req_id
        raise


def reply_result(env: Envelope):
    """The result of a reply envelope, or raise ProtocolError with its error."""
    body = env.body
    if body["ok"]:
        return body.get("result")
    err = body.get("error") or {}
    raise ProtocolError(str(err.get("code", ErrorCode.INTERNAL)), str(err.get("message", "unknown error")))
