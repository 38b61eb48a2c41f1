"""Fuzzing the daemon's socket: malformed payloads on one connection never hurt another.

One daemon serves the whole module, started with a 64 KiB message limit so oversize payloads
are cheap. Hypothesis draws a :class:`Case` per example: the bytes to send on a "bad"
connection (a WebSocket message, or raw pre-framed bytes for framing violations) and what the
daemon must do with them: answer ``bad_request`` with the right id, or close with a specific
WebSocket code (1002 protocol error, 1007 invalid UTF-8, 1009 too big). After every example a
second, well-behaved connection must get exactly its ``pong``.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import pytest
from dhtest.daemon import DaemonProc, running_daemon
from dhtest.wsclient import Closed, SyncClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

JSON = "deskhand.v1.json"
MSGPACK = "deskhand.v1.msgpack"
SUBPROTOCOLS = (JSON, MSGPACK)
MAX_MESSAGE = 65536  # DESKHAND_MAX_MESSAGE_BYTES for this module's daemon
MAX_ID = 2**53 - 1
EXAMPLES = 2400
MIN_PAYLOADS = 2000

CLOSE_PROTOCOL_ERROR = 1002
CLOSE_INVALID_DATA = 1007
CLOSE_TOO_BIG = 1009

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
KNOWN_OPS = ("hello", "status", "ping", "shutdown")
OP_FIELDS = {
    "hello": {"protocol", "client", "can_answer_questions"},
    "status": set(),
    "ping": {"data"},
    "shutdown": set(),
}
CLIENT_KINDS = ("cli", "agent", "pi", "test", "other")

SHAPE_FAULTS = (
    "unknown_op",
    "op_type",
    "bad_id",
    "no_id",
    "no_op",
    "extra",
    "field_type",
    "rehello",
)
JSON_SYNTAX_FAULTS = (
    *("id_token", "truncated", "trailing", "comma", "quotes", "comment", "bare_keys", "bom"),
    *("escape", "control", "surrogate", "leading"),
)
MSGPACK_FAULTS = (
    *("truncated", "trailing", "reserved", "huge_header", "bin_op", "int_key", "ext"),
    *("timestamp", "float_id", "ext_top", "nil"),
)
DEEP_PLACES = ("top_array", "top_object", "unclosed", "before_op", "in_data", "in_extra")
FRAMING_FAULTS = (
    *("rsv", "opcode", "unmasked", "control_long", "control_fragmented", "close_code"),
    *("close_1_byte", "close_reason_utf8", "continuation_first", "interleaved", "text_utf8"),
    *("text_utf8_fragmented", "nonminimal_length", "length_msb"),
)


@pytest.fixture(scope="module")
def fuzz_daemon() -> Iterator[DaemonProc]:
    """One daemon for the module, with a small message limit."""
    with running_daemon(extra_env={"DESKHAND_MAX_MESSAGE_BYTES": str(MAX_MESSAGE)}) as d:
        yield d


# ----- the payloads ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One malformed payload and the daemon's required reaction to it."""

    label: str
    subprotocol: str
    message: str | bytes | None = None  # sent as one WebSocket message by the client
    raw: bytes | None = None  # written to the socket as is (already framed, masked or not)
    close: int | None = None  # the close code required; None: a bad_request reply is required
    ids: frozenset[int | None] = frozenset({None})  # the ids the error reply may carry
    decodes: bool = False  # decodes as a request (and fails in its handler, e.g. a second hello)

    def head(self) -> str:
        data = self.raw if self.raw is not None else self.message
        assert data is not None
        shown = data[:80]
        more = f" ... ({len(data)} {'bytes' if isinstance(data, bytes) else 'chars'})"
        return repr(shown) + (more if len(data) > 80 else "")

    def __repr__(self) -> str:
        ids = sorted(self.ids, key=str)
        want = f"close {self.close}" if self.close else f"bad_request with id in {ids}"
        how = "raw" if self.raw is not None else "message"
        return f"Case({self.label}, {self.subprotocol}, {how} {self.head()}, want {want})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis' printer
        p.text(repr(self))


def frame(
    opcode: int,
    payload: bytes = b"",
    *,
    fin: bool = True,
    rsv: int = 0,
    mask: bool = True,
    length_bytes: int | None = None,
) -> bytes:
    """One client frame, with the framing knobs a well-behaved client never turns."""
    n = len(payload)
    if length_bytes is None:
        length_bytes = 0 if n < 126 else 2 if n < 65536 else 8
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    mbit = 0x80 if mask else 0
    if length_bytes == 0:
        header = bytes([first, mbit | n])
    elif length_bytes == 2:
        header = bytes([first, mbit | 126]) + struct.pack("!H", n)
    else:
        header = bytes([first, mbit | 127]) + struct.pack("!Q", n)
    if not mask:
        return header + payload
    key = b"\x5a\xc3\x17\x8e"
    stream = (key * (n // 4 + 1))[:n]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(stream, "big")).to_bytes(n, "big")
    return header + key + masked


def encode(obj: Any, subprotocol: str, as_bytes: bool = False) -> str | bytes:
    if subprotocol == MSGPACK:
        return msgspec.msgpack.encode(obj)
    text = json.dumps(obj)
    return text.encode() if as_bytes else text


def salvage_id(payload: str | bytes, subprotocol: str) -> int | None:
    """The request id a reader could recover from ``payload``, per the protocol's promise."""
    if subprotocol == MSGPACK and isinstance(payload, str):
        return None  # refused unread: a msgpack connection takes binary frames only
    raw = payload.encode() if isinstance(payload, str) else payload
    decode = msgspec.msgpack.decode if subprotocol == MSGPACK else msgspec.json.decode
    try:
        value = decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    if isinstance(value, dict):
        rid = value.get("id")
        if isinstance(rid, int) and not isinstance(rid, bool) and 0 <= rid <= MAX_ID:
            return rid
    return None


def bad_request(
    label: str,
    subprotocol: str,
    message: str | bytes,
    *,
    strict: bool = False,
    also: int | None = None,
    decodes: bool = False,
) -> Case:
    """A message that must get ``bad_request``.

    ``strict``: the payload is a well-formed map with a usable id, so the reply must carry that
    id (the protocol promises to salvage it). Otherwise the id may be null, the salvageable id,
    or ``also`` (the id the payload meant to carry, when it is too broken to read).
    """
    rid = salvage_id(message, subprotocol)
    if strict:
        assert rid is not None, (label, message)
        ids: frozenset[int | None] = frozenset({rid})
    else:
        ids = frozenset({None, rid, also})
    return Case(label, subprotocol, message=message, ids=ids, decodes=decodes)


usable_ids = st.integers(0, MAX_ID)
subprotocols = st.sampled_from(SUBPROTOCOLS)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=3)
    ),
    max_leaves=12,
)
bad_ids = (
    st.integers(max_value=-1, min_value=-(2**63))
    | st.integers(MAX_ID + 1, 2**64 - 1)
    | st.sampled_from([2**53, 2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.booleans()
    | st.none()
    | st.text(max_size=12)
    | st.lists(usable_ids, max_size=2)
    | st.dictionaries(st.text(max_size=4), usable_ids, max_size=2)
)
unknown_ops = st.sampled_from(
    ["", "Ping", "PING", " ping", "ping ", "ping\x00", "stat", "statuses", "hello2", "shut_down"]
) | st.text(max_size=20).filter(lambda s: s not in KNOWN_OPS)
non_str = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.lists(scalars, max_size=2)


def valid_fields(op: str) -> st.SearchStrategy[dict[str, Any]]:
    if op == "hello":
        return st.fixed_dictionaries(
            {"protocol": st.integers(-5, 5), "client": valid_client()},
            optional={"can_answer_questions": st.booleans()},
        )
    if op == "ping":
        return st.fixed_dictionaries({}, optional={"data": st.text(max_size=40)})
    return st.just({})


def valid_client() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {"name": st.text(max_size=20)},
        optional={"version": st.text(max_size=10), "kind": st.sampled_from(CLIENT_KINDS)},
    )


@st.composite
def shaped_objects(draw: st.DrawFn) -> Case:
    """Objects that look like requests but are wrong in exactly one chosen way."""
    sub = draw(subprotocols)
    op = draw(st.sampled_from(KNOWN_OPS))
    rid = draw(usable_ids)
    fields = draw(valid_fields(op))
    how = draw(st.sampled_from(SHAPE_FAULTS))
    obj: dict[Any, Any]
    if how == "unknown_op":
        obj = {"op": draw(unknown_ops), "id": rid, **fields}
    elif how == "op_type":
        obj = {"op": draw(non_str), "id": rid, **fields}
    elif how == "bad_id":
        obj = {"op": op, "id": draw(bad_ids), **fields}
    elif how == "no_id":
        obj = {"op": op, **fields}
    elif how == "no_op":
        obj = {"id": rid, **draw(st.dictionaries(st.text(max_size=8), scalars, max_size=3))}
        obj.pop("op", None)
        obj["id"] = rid
    elif how == "extra":
        taken = {"op", "id", *OP_FIELDS[op]}
        name = draw(st.text(max_size=12).filter(lambda k: k not in taken))
        obj = {"op": op, "id": rid, **fields, name: draw(values)}
    elif how == "field_type":
        obj = {"op": op, "id": rid, **fields, **draw(wrong_fields(op))}
    else:  # a valid hello on a connection that already said hello
        hello = {"op": "hello", "id": rid, **draw(valid_fields("hello"))}
        return bad_request("rehello", sub, encode(hello, sub), strict=True, decodes=True)
    if draw(st.booleans()):  # key order must not matter
        obj = dict(reversed(obj.items()))
    try:
        message = encode(obj, sub, as_bytes=draw(st.booleans()))
    except OverflowError:  # an int msgpack cannot hold; JSON can
        sub, message = JSON, encode(obj, JSON)
    usable = isinstance(obj.get("id"), int) and not isinstance(obj.get("id"), bool)
    strict = usable and 0 <= obj["id"] <= MAX_ID
    return bad_request(f"shape:{how}", sub, message, strict=strict)


@st.composite
def wrong_fields(draw: st.DrawFn, op: str) -> dict[str, Any]:
    """One field of ``op`` with a value of the wrong type or out of bounds."""
    if op == "ping":  # not a string, or longer than the 1 KiB limit
        too_long = st.integers(1025, 4096).map(lambda n: "x" * n)
        return {"data": draw(non_str | too_long | values.filter(lambda v: not isinstance(v, str)))}
    if op == "hello":
        which = draw(st.sampled_from(["protocol", "client", "name", "kind", "extra", "caq"]))
        client = draw(valid_client())
        if which == "protocol":
            number = st.floats(allow_nan=False, allow_infinity=False)  # NaN is not JSON
            return {"protocol": draw(st.text(max_size=3) | number | st.booleans() | st.none())}
        if which == "client":
            return {"client": draw(scalars | st.lists(scalars, max_size=2))}
        if which == "name":
            return {"client": {**client, "name": draw(non_str | st.just("n" * 201))}}
        if which == "kind":
            kind = draw(st.text(max_size=10).filter(lambda k: k not in CLIENT_KINDS))
            return {"client": {**client, "kind": kind}}
        if which == "extra":
            return {"client": {**client, "nickname": draw(scalars)}}
        return {"can_answer_questions": draw(st.integers() | st.text(max_size=3) | st.none())}
    # status and shutdown have only an id: any other field is wrong for them
    return {draw(st.sampled_from(["data", "protocol", "client", "reason"])): draw(values)}


def _no_known_op(value: Any) -> bool:
    return not (isinstance(value, dict) and value.get("op") in KNOWN_OPS)


@st.composite
def random_values(draw: st.DrawFn) -> Case:
    """Any JSON/msgpack value that is not a request: scalars, arrays, odd objects."""
    sub = draw(subprotocols)
    value = draw(values.filter(_no_known_op))
    message = encode(value, sub, as_bytes=draw(st.booleans()))
    return bad_request("value", sub, message)


@st.composite
def random_bytes(draw: st.DrawFn) -> Case:
    """Random bytes in a binary message (JSON connections decode binary frames too)."""
    sub = draw(subprotocols)
    data = draw(st.binary(max_size=600))
    return bad_request("bytes", sub, data)


@st.composite
def random_text(draw: st.DrawFn) -> Case:
    """Random text in a text message, on either connection."""
    sub = draw(subprotocols)
    text = draw(st.text(max_size=600))
    if sub == JSON and not _no_known_op(_loose_json(text)):
        text = "!" + text  # vanishingly unlikely, but a valid request is not a bad payload
    return bad_request("text", sub, text)


def _loose_json(text: str) -> Any:
    try:
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None


RAW_ID_TOKENS = [
    "1e2", "1E0", "1.0", "1.", ".5", "01", "+1", "-", "NaN", "Infinity", "-Infinity", "0x1F",
    '"1"', "true", "null", "[]", "{}", "1 2", "", "-1", "9" * 400, "-" + "9" * 30,
]  # fmt: skip


@st.composite
def json_syntax(draw: st.DrawFn) -> Case:
    """JSON text that is broken as JSON, or carries a number JSON-wise but not an id."""
    rid = draw(usable_ids)
    good = f'{{"op":"ping","id":{rid},"data":"abc"}}'
    how = draw(st.sampled_from(JSON_SYNTAX_FAULTS))
    if how == "id_token":
        text = f'{{"op":"ping","id":{draw(st.sampled_from(RAW_ID_TOKENS))}}}'
    elif how == "truncated":
        text = good[: draw(st.integers(0, len(good) - 1))]
    elif how == "trailing":
        text = good + draw(st.sampled_from(["x", "{}", ",", "]", "\x00", " 1", "\n{}"]))
    elif how == "comma":
        text = f'{{"op":"ping","id":{rid},}}'
    elif how == "quotes":
        text = f"{{'op':'ping','id':{rid}}}"
    elif how == "comment":
        text = f'{{"op":"ping",/* hi */"id":{rid}}}'
    elif how == "bare_keys":
        text = f'{{op:"ping",id:{rid}}}'
    elif how == "bom":
        text = "\ufeff" + good
    elif how == "escape":
        text = f'{{"op":"pi\\qng","id":{rid}}}'
    elif how == "control":
        text = f'{{"op":"ping","id":{rid},"data":"a{chr(draw(st.integers(0, 31)))}b"}}'
    elif how == "surrogate":
        esc = draw(st.sampled_from(["\\ud800", "\\udfff", "\\ud800x", "\\udc00\\ud800"]))
        text = f'{{"op":"ping","id":{rid},"data":"{esc}"}}'
    else:
        text = draw(st.sampled_from(["x", "[", "}", "\x00"])) + good
    message: str | bytes = text.encode() if draw(st.booleans()) else text
    return bad_request(f"syntax:{how}", JSON, message, also=rid)


INVALID_UTF8 = [
    b"\xff", b"\xfe", b"\x80", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xed\xa0\x80",
    b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\xc3",
]  # fmt: skip


def _is_invalid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


invalid_utf8 = st.sampled_from(INVALID_UTF8) | st.binary(min_size=1, max_size=6).filter(
    _is_invalid_utf8
)


def _mp_str(data: bytes) -> bytes:
    """A msgpack str header + ``data``, whatever ``data`` is (so it can be invalid UTF-8)."""
    n = len(data)
    return (bytes([0xA0 | n]) if n < 32 else b"\xd9" + bytes([n])) + data


_MP_OP_PING = _mp_str(b"op") + _mp_str(b"ping")


def _mp_ping(rid: int) -> bytes:
    """The two map entries ``op: ping, id: rid`` (without the map header)."""
    return _MP_OP_PING + _mp_str(b"id") + msgspec.msgpack.encode(rid)


@st.composite
def bad_utf8(draw: st.DrawFn) -> Case:
    """Well-formed JSON or msgpack structure around strings that are not UTF-8."""
    rid = draw(usable_ids)
    bad = draw(invalid_utf8)
    where = draw(st.sampled_from(["data", "op", "key"]))
    if draw(st.booleans()):
        parts = {
            "data": b'{"op":"ping","id":%d,"data":"a%sb"}' % (rid, bad),
            "op": b'{"op":"pi%sng","id":%d}' % (bad, rid),
            "key": b'{"op":"ping","id":%d,"%s":1}' % (rid, bad),
        }
        return bad_request(f"utf8:json:{where}", JSON, parts[where], also=rid)
    mp_id = _mp_str(b"id") + msgspec.msgpack.encode(rid)
    parts = {
        "data": b"\x83" + _mp_ping(rid) + _mp_str(b"data") + _mp_str(b"a" + bad),
        "op": b"\x82" + _mp_str(b"op") + _mp_str(bad) + mp_id,
        "key": b"\x83" + _mp_ping(rid) + _mp_str(bad) + b"\x01",
    }
    return bad_request(f"utf8:msgpack:{where}", MSGPACK, parts[where], also=rid)


@st.composite
def msgpack_garbage(draw: st.DrawFn) -> Case:
    """msgpack that is malformed, truncated, or of types no request uses."""
    rid = draw(usable_ids)
    good = msgspec.msgpack.encode({"op": "ping", "id": rid, "data": "abc"})
    how = draw(st.sampled_from(MSGPACK_FAULTS))
    strict = False
    if how == "truncated":
        data = good[: draw(st.integers(0, len(good) - 1))]
    elif how == "trailing":
        data = good + draw(st.binary(min_size=1, max_size=8))
    elif how == "reserved":
        at = draw(st.integers(0, len(good)))
        data = good[:at] + b"\xc1" + good[at:]
    elif how == "huge_header":
        data = draw(st.sampled_from([b"\xdd", b"\xdf", b"\xdb", b"\xc6", b"\xc9"])) + b"\xff" * 4
    elif how == "bin_op":
        data, strict = msgspec.msgpack.encode({"op": b"ping", "id": rid}), True
    elif how == "int_key":
        key = draw(st.integers(-100, 100) | st.booleans() | st.none())
        data, strict = msgspec.msgpack.encode({key: 1, "op": "ping", "id": rid}), True
    elif how == "ext":
        ext = msgspec.msgpack.Ext(draw(st.integers(-128, 127)), draw(st.binary(max_size=8)))
        data, strict = msgspec.msgpack.encode({"op": "ping", "id": rid, "data": ext}), True
    elif how == "timestamp":
        data = b"\x82" + _MP_OP_PING + _mp_str(b"id") + b"\xd6\xff\0\0\0\0"
    elif how == "float_id":
        data = b"\x82" + _MP_OP_PING + _mp_str(b"id") + b"\xca\x3f\x80\0\0"
    elif how == "ext_top":
        data = msgspec.msgpack.encode(msgspec.msgpack.Ext(1, draw(st.binary(max_size=16))))
    else:
        data = b"\xc0"
    return bad_request(f"msgpack:{how}", MSGPACK, data, strict=strict, also=rid)


@st.composite
def deep_nesting(draw: st.DrawFn) -> Case:
    """Thousands of nesting levels, alone or next to otherwise valid request fields."""
    depth = draw(st.integers(900, 8000))
    rid = draw(usable_ids)
    where = draw(st.sampled_from(DEEP_PLACES))
    if draw(st.booleans()):
        arr = "[" * depth + "]" * depth
        texts = {
            "top_array": arr,
            "top_object": '{"a":' * depth + "1" + "}" * depth,
            "unclosed": "[" * depth,
            "before_op": f'{{"x":{arr},"op":"ping","id":{rid}}}',
            "in_data": f'{{"op":"ping","id":{rid},"data":{arr}}}',
            "in_extra": f'{{"op":"ping","id":{rid},"x":{arr}}}',
        }
        return bad_request(f"deep:json:{where}", JSON, texts[where], also=rid)
    arr_mp = b"\x91" * depth + b"\xc0"
    ping = _mp_ping(rid)
    blobs = {
        "top_array": arr_mp,
        "top_object": (b"\x81" + _mp_str(b"a")) * depth + b"\xc0",
        "unclosed": b"\x91" * depth,
        "before_op": b"\x83" + _mp_str(b"x") + arr_mp + ping,
        "in_data": b"\x83" + ping + _mp_str(b"data") + arr_mp,
        "in_extra": b"\x83" + ping + _mp_str(b"x") + arr_mp,
    }
    return bad_request(f"deep:msgpack:{where}", MSGPACK, blobs[where], also=rid)


@st.composite
def sizes(draw: st.DrawFn) -> Case:
    """Messages over the limit (close 1009), and garbage right at the limit (bad_request)."""
    sub = draw(subprotocols)
    how = draw(st.sampled_from(["over", "over_fragmented", "at_limit"]))
    if how == "at_limit":
        n = draw(st.integers(MAX_MESSAGE - 64, MAX_MESSAGE))
        body = "[" + "1," * ((n - 2) // 2)
        text = body + "x" * (n - len(body))
        message: str | bytes = text.encode() if sub == MSGPACK else text
        return bad_request("size:at_limit", sub, message)
    n = draw(st.integers(MAX_MESSAGE + 1, 2 * MAX_MESSAGE))
    opcode = OP_BINARY if sub == MSGPACK else draw(st.sampled_from([OP_TEXT, OP_BINARY]))
    payload = b'{"op":"ping","id":1,"data":"' + b"z" * (n - 30) + b'"}'
    if how == "over":
        return Case("size:over", sub, raw=frame(opcode, payload), close=CLOSE_TOO_BIG)
    cuts = sorted(draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=4, unique=True)))
    pieces = [payload[a:b] for a, b in itertools.pairwise([0, *cuts, n])]
    frames = [
        frame(opcode if i == 0 else OP_CONT, piece, fin=i == len(pieces) - 1)
        for i, piece in enumerate(pieces)
    ]
    if draw(st.booleans()):  # control frames may sit between fragments
        frames.insert(1, frame(OP_PING, b"mid"))
    return Case("size:over_fragmented", sub, raw=b"".join(frames), close=CLOSE_TOO_BIG)


BAD_CLOSE_CODES = (
    st.integers(0, 999)
    | st.sampled_from([1004, 1005, 1006, 1015])
    | st.integers(1016, 2999)
    | st.integers(5000, 65535)
)


@st.composite
def framing(draw: st.DrawFn) -> Case:
    """Frames that break RFC 6455: the daemon must fail the connection with the right code."""
    sub = draw(subprotocols)
    small = draw(st.binary(max_size=40))
    how = draw(st.sampled_from(FRAMING_FAULTS))
    code = CLOSE_PROTOCOL_ERROR
    if how == "rsv":
        opcode = draw(st.sampled_from([OP_TEXT, OP_BINARY, OP_PING]))
        raw = frame(opcode, small, rsv=draw(st.integers(1, 7)))
    elif how == "opcode":
        raw = frame(draw(st.sampled_from([3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF])), small)
    elif how == "unmasked":
        opcode = draw(st.sampled_from([OP_TEXT, OP_BINARY, OP_PING, OP_CLOSE]))
        raw = frame(opcode, b"\x03\xe8" if opcode == OP_CLOSE else small, mask=False)
    elif how == "control_long":
        opcode = draw(st.sampled_from([OP_PING, OP_PONG, OP_CLOSE]))
        raw = frame(opcode, b"\x03\xe8" + b"r" * draw(st.integers(124, 1000)))  # > 125 bytes
    elif how == "control_fragmented":
        opcode = draw(st.sampled_from([OP_PING, OP_PONG, OP_CLOSE]))
        raw = frame(opcode, b"\x03\xe8" if opcode == OP_CLOSE else small[:10], fin=False)
    elif how == "close_code":
        raw = frame(OP_CLOSE, struct.pack("!H", draw(BAD_CLOSE_CODES)) + b"bye")
    elif how == "close_1_byte":
        raw = frame(OP_CLOSE, draw(st.binary(min_size=1, max_size=1)))
    elif how == "close_reason_utf8":
        raw = frame(OP_CLOSE, struct.pack("!H", 1000) + draw(invalid_utf8))
        code = CLOSE_INVALID_DATA
    elif how == "continuation_first":
        raw = frame(OP_CONT, small, fin=draw(st.booleans()))
    elif how == "interleaved":
        first = frame(draw(st.sampled_from([OP_TEXT, OP_BINARY])), b'{"op"', fin=False)
        raw = first + frame(draw(st.sampled_from([OP_TEXT, OP_BINARY])), small)
    elif how == "text_utf8":
        bad = draw(invalid_utf8)
        raw, code = frame(OP_TEXT, b'{"op":"ping","data":"' + bad + b'"}'), CLOSE_INVALID_DATA
    elif how == "text_utf8_fragmented":
        # a sequence cut across fragments is fine; one left unfinished or broken is not
        first = frame(OP_TEXT, b'{"data":"\xe2\x82', fin=False)
        rest = draw(st.sampled_from([b'x"}', b"\xac\x82", b"\xac\xe2\x82", b"\xff"]))
        raw, code = first + frame(OP_CONT, rest), CLOSE_INVALID_DATA
    elif how == "nonminimal_length":
        if draw(st.booleans()):
            raw = frame(OP_TEXT, small[:100], length_bytes=draw(st.sampled_from([2, 8])))
        else:
            raw = frame(OP_BINARY, b"b" * draw(st.integers(126, 2000)), length_bytes=8)
    else:
        raw = bytes([0x82, 0xFF]) + struct.pack("!Q", (1 << 63) | len(small)) + b"mask" + small
    return Case(f"frame:{how}", sub, raw=raw, close=code)


cases = st.one_of(
    shaped_objects(),
    random_values(),
    random_bytes(),
    random_text(),
    json_syntax(),
    bad_utf8(),
    msgpack_garbage(),
    deep_nesting(),
    sizes(),
    framing(),
)


# ----- the harness -----------------------------------------------------------------------------


class Harness:
    """A "bad" connection per subprotocol (reopened after each close) and two good ones."""

    def __init__(self, path: Any) -> None:
        self.path = path
        self.bad: dict[str, SyncClient] = {}
        self.good = [
            SyncClient(path, JSON, name="fuzz-good-json"),
            SyncClient(path, MSGPACK, name="fuzz-good-msgpack"),
        ]
        self.sent = 0
        self.connects = 0
        self.invalid = 0  # payloads that must fail decoding
        self.rehellos = 0  # payloads that decode but are refused by the hello handler
        self.pings = 0
        self.outcomes: Counter[str] = Counter()
        self._tokens = itertools.count()

    def close(self) -> None:
        for conn in [*self.bad.values(), *self.good]:
            conn.close()
        self.bad.clear()

    def _bad_conn(self, subprotocol: str) -> SyncClient:
        conn = self.bad.get(subprotocol)
        if conn is None:
            conn = SyncClient(self.path, subprotocol, timeout=5, name="fuzz-bad")
            self.connects += 1
            self.bad[subprotocol] = conn
        return conn

    def _drop(self, subprotocol: str) -> None:
        conn = self.bad.pop(subprotocol, None)
        if conn is not None:
            conn.sock.close()

    def run(self, case: Case) -> None:
        conn = self._bad_conn(case.subprotocol)
        try:
            try:
                if case.raw is not None:
                    conn.send_raw(case.raw)
                else:
                    assert case.message is not None
                    conn.send_message(case.message)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the daemon may close before it has read everything; its close is queued
            self.sent += 1
            if case.close is None:
                self._expect_bad_request(conn, case)
            else:
                self._expect_close(conn, case)
        except BaseException:
            self._drop(case.subprotocol)
            raise
        self.check_good()

    def _expect_bad_request(self, conn: SyncClient, case: Case) -> None:
        try:
            reply = conn.recv_obj()
        except Closed as exc:
            pytest.fail(
                f"{case!r}: expected a bad_request reply, but the daemon closed the connection "
                f"(code {exc.code}, reason {exc.reason!r})"
            )
        except TimeoutError:
            pytest.fail(f"{case!r}: expected a bad_request reply, got nothing within 5 s")
        assert isinstance(reply, dict) and reply.get("type") == "error", (case, reply)
        error = reply["error"]
        assert error["code"] == "bad_request", (case, reply)
        assert isinstance(error["message"], str) and error["message"], (case, reply)
        assert isinstance(error["data"], dict), (case, reply)
        assert reply["id"] in case.ids, (case, reply)
        if case.decodes:
            self.rehellos += 1
        else:
            self.invalid += 1
        self.outcomes["bad_request"] += 1

    def _expect_close(self, conn: SyncClient, case: Case) -> None:
        try:
            reply = conn.recv_obj()
        except Closed as exc:
            code = exc.code
        except (TimeoutError, ConnectionResetError) as exc:
            pytest.fail(f"{case!r}: expected close {case.close}, got {exc!r}")
        else:
            pytest.fail(f"{case!r}: expected close {case.close}, got a reply {reply!r}")
        self._drop(case.subprotocol)
        assert code == case.close, (
            f"{case!r}: expected close code {case.close}, got {code} "
            "(None: the daemon dropped the socket without sending a close frame)"
        )
        self.outcomes[f"close {code}"] += 1

    def check_good(self) -> None:
        token = next(self._tokens)
        conn = self.good[token % 2]
        data = f"good-{token}-{time.monotonic_ns()}"
        reply = conn.call("ping", data=data)  # call() also asserts the reply's id
        assert reply["type"] == "result", reply
        assert reply["result"] == {"kind": "pong", "data": data}, reply
        self.pings += 1


def status_of(path: Any) -> dict[str, Any]:
    with SyncClient(path, JSON, name="fuzz-status") as c:
        reply = c.call("status")
    assert reply["type"] == "result", reply
    result: dict[str, Any] = reply["result"]
    return result


def op_deltas(before: dict[str, Any], after: dict[str, Any], names: list[str]) -> dict[str, int]:
    """Growth of per-op counters between two status results; "ping errors" reads errors."""
    out = {}
    for name in names:
        op, _, key = name.partition(" ")
        now, then = after["ops"].get(op, {}), before["ops"].get(op, {})
        out[name] = now.get(key or "count", 0) - then.get(key or "count", 0)
    return out


# ----- the tests -------------------------------------------------------------------------------


def test_fuzz_bad_connection_never_disturbs_a_good_one(fuzz_daemon: DaemonProc) -> None:
    """≥2,000 malformed payloads: each gets bad_request or the right close; pings never miss."""
    before = status_of(fuzz_daemon.socket)
    harness = Harness(fuzz_daemon.socket)
    started = time.monotonic()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(case=cases)
    def fuzz(case: Case) -> None:
        harness.run(case)

    try:
        fuzz()
    finally:
        harness.close()
    elapsed = time.monotonic() - started
    print(f"fuzz: {harness.sent} payloads in {elapsed:.1f}s, {dict(harness.outcomes)}")

    assert harness.sent >= MIN_PAYLOADS, harness.sent
    assert harness.pings >= harness.sent
    assert set(harness.outcomes) >= {"bad_request", "close 1002", "close 1007", "close 1009"}
    assert fuzz_daemon.proc.poll() is None, "the daemon died under fuzzing"

    # Every payload is accounted for: decode failures under "<invalid>", a second hello as a
    # failed "hello". Counters are recorded just after each reply is sent, so allow a moment.
    expected = {
        "<invalid>": harness.invalid,
        "hello errors": harness.rehellos,
        "hello": harness.rehellos + harness.connects + 2,  # + the two good connections
        "ping": harness.pings,
        "ping errors": 0,
    }
    deadline = time.monotonic() + 2
    status_calls = 0
    while True:
        after = status_of(fuzz_daemon.socket)
        status_calls += 1  # each status_of() says hello on a new connection
        counts = op_deltas(before, after, list(expected))
        counts["hello"] -= status_calls
        if counts == expected or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert counts == expected
    assert after["pid"] == fuzz_daemon.proc.pid


# Minimal reproductions of each rule, so a failure names the rule without a hypothesis search.


DEPTH = 5000
DEEP: dict[str, str | bytes] = {
    "json_value_before_op": '{"x":' + "[" * DEPTH + "]" * DEPTH + ',"op":"ping","id":7}',
    "json_nested_objects": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "msgpack_value_before_op": b"\x83" + _mp_str(b"x") + b"\x91" * DEPTH + b"\xc0" + _mp_ping(7),
    "msgpack_nested_maps": (b"\x81" + _mp_str(b"a")) * DEPTH + b"\xc0",
}


@pytest.mark.parametrize("name", list(DEEP))
def test_deep_nesting_is_a_bad_request(fuzz_daemon: DaemonProc, name: str) -> None:
    """Thousands of nested levels in a map get bad_request; the connection stays open."""
    subprotocol = JSON if name.startswith("json") else MSGPACK
    with SyncClient(fuzz_daemon.socket, subprotocol, timeout=5) as c:
        c.send_message(DEEP[name])
        try:
            reply = c.recv_obj()
        except Closed as exc:
            pytest.fail(
                f"{name}: a {DEPTH}-level nested payload cost the client its connection "
                f"(close {exc.code}); the daemon must answer bad_request and keep it open"
            )
        assert reply["type"] == "error" and reply["error"]["code"] == "bad_request", reply
        assert reply["id"] in (None, 7), reply
        assert c.call("ping", data="still here")["result"] == {"kind": "pong", "data": "still here"}


VIOLATIONS = {
    "rsv1_set": (frame(OP_TEXT, b"{}", rsv=4), CLOSE_PROTOCOL_ERROR),
    "reserved_opcode": (frame(0x3, b"x"), CLOSE_PROTOCOL_ERROR),
    "unmasked": (frame(OP_TEXT, b'{"op":"ping","id":1}', mask=False), CLOSE_PROTOCOL_ERROR),
    "ping_over_125": (frame(OP_PING, b"p" * 126), CLOSE_PROTOCOL_ERROR),
    "fragmented_ping": (frame(OP_PING, b"p", fin=False), CLOSE_PROTOCOL_ERROR),
    "close_code_999": (frame(OP_CLOSE, struct.pack("!H", 999)), CLOSE_PROTOCOL_ERROR),
    "close_code_1005": (frame(OP_CLOSE, struct.pack("!H", 1005)), CLOSE_PROTOCOL_ERROR),
    "continuation_first": (frame(OP_CONT, b"abc"), CLOSE_PROTOCOL_ERROR),
    "invalid_utf8_text": (frame(OP_TEXT, b'"\xff"'), CLOSE_INVALID_DATA),
    "invalid_utf8_close_reason": (
        frame(OP_CLOSE, struct.pack("!H", 1000) + b"\xff"),
        CLOSE_INVALID_DATA,
    ),
    "oversize": (frame(OP_TEXT, b"x" * (MAX_MESSAGE + 1)), CLOSE_TOO_BIG),
}


@pytest.mark.parametrize("name", list(VIOLATIONS))
def test_protocol_violation_gets_its_close_code(fuzz_daemon: DaemonProc, name: str) -> None:
    """RFC 6455 §7.1.7/§7.4.1: a violation is answered with a close frame naming it."""
    raw, want = VIOLATIONS[name]
    with SyncClient(fuzz_daemon.socket, JSON, timeout=5) as c:
        c.send_raw(raw)
        with pytest.raises(Closed) as info:
            c.recv_obj()
    assert info.value.code == want, (
        f"{name}: expected close code {want}, got {info.value.code} "
        f"{'(the socket was dropped without a close frame)' if info.value.code is None else ''}"
    )


def test_daemon_survives_the_module(fuzz_daemon: DaemonProc) -> None:
    """After everything above the daemon is alive and still answers status."""
    assert fuzz_daemon.proc.poll() is None
    status = status_of(fuzz_daemon.socket)
    assert status["pid"] == fuzz_daemon.proc.pid
    # the raw socket is still accepting: nothing above wedged the accept loop
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(str(fuzz_daemon.socket))
