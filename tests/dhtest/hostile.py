"""Hostile payloads for the request decode path: up to a few MiB, in both encodings.

Hypothesis draws a shape (a wide array or map, deep nesting, a long string of some character
kind, a big number, msgpack ext/bin values or headers that lie about their length, a request
with one such value in one of its fields or as a key, a run with many constraints, a valid
request with long text) and a size; the bytes are then built by repetition, so a 4 MiB payload
costs milliseconds to make. Truncation and trailing garbage are drawn on top. Valid requests
are built from the request Structs themselves (:func:`largest_request`), so they track the
schema.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any, get_args

import msgspec
from hypothesis import strategies as st

from deskhand_d.protocol import Request
from deskhand_d.protocol.limits import BULK_FIELDS, DEFAULT_LIMIT, OP_LIMITS

JSON = "deskhand.v1.json"
MSGPACK = "deskhand.v1.msgpack"
KiB = 1024
MiB = 1024 * KiB

ASTRAL = "\U0001f600"
# One character of each width CPython stores strings in, plus the JSON escapes for them.
CHAR_KINDS = {
    "ascii": "a",
    "latin1": "é",
    "bmp": "中",
    "astral": ASTRAL,
}


@dataclass(frozen=True)
class Payload:
    label: str
    subprotocol: str
    data: str | bytes

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return len(self.data.encode() if isinstance(self.data, str) else self.data)

    def __repr__(self) -> str:
        head = self.data[:60]
        return f"Payload({self.label}, {self.subprotocol}, {self.size} bytes, {head!r}...)"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # hypothesis' printer
        p.text(repr(self))


# ----- the Structs, read once --------------------------------------------------------------------


@cache
def op_types() -> dict[str, type[msgspec.Struct]]:
    out = {}
    for t in get_args(Request):
        tag = t.__struct_config__.tag
        assert isinstance(tag, str)
        out[tag] = t
    return out


def op_fields(op: str) -> list[msgspec.inspect.Field]:
    info = msgspec.inspect.type_info(op_types()[op])
    assert isinstance(info, msgspec.inspect.StructType)
    return list(info.fields)


def _largest(t: msgspec.inspect.Type) -> Any:
    """The value of type ``t`` whose encoding is longest (for JSON escaped to ASCII)."""
    i = msgspec.inspect
    if isinstance(t, i.StrType):
        assert t.max_length is not None, "every string in a request must have a bound"
        # A pattern-restricted name takes ASCII; else one character outside the BMP per
        # position: 4 bytes of UTF-8, 12 of JSON escapes (a \uXXXX surrogate pair).
        return ("a" if t.pattern else ASTRAL) * t.max_length
    if isinstance(t, i.IntType):
        if t.le is not None:
            return t.le if t.ge is None or len(str(t.le)) >= len(str(t.ge)) else t.ge
        return -(2**63)
    if isinstance(t, i.FloatType):
        return t.le if t.le is not None else -1.7976931348623157e308
    if isinstance(t, i.BoolType):
        return False
    if isinstance(t, i.NoneType):
        return None
    if isinstance(t, i.LiteralType):
        return max(t.values, key=lambda v: len(str(v)))
    if isinstance(t, i.UnionType):
        options = [_largest(m) for m in t.types]
        return max(options, key=lambda v: len(json.dumps(v)))
    if isinstance(t, i.ListType):
        assert t.max_length is not None, "every array in a request must have a bound"
        return [_largest(t.item_type) for _ in range(t.max_length)]
    if isinstance(t, i.StructType):
        return {f.encode_name: _largest(f.type) for f in t.fields}
    raise AssertionError(f"no largest value for {t!r}")


def largest_request(op: str, rid: int = 2**53 - 1) -> dict[str, Any]:
    """The request for ``op`` with every field at its longest valid value."""
    fields = {f.encode_name: _largest(f.type) for f in op_fields(op)}
    return {"op": op, **fields, "id": rid}


def encode(obj: Any, subprotocol: str) -> str | bytes:
    """JSON as a client library would write it by default (non-ASCII escaped), or msgpack."""
    if subprotocol == MSGPACK:
        return msgspec.msgpack.encode(obj)
    return json.dumps(obj, separators=(",", ":"))


def small_valid(op: str, rid: int) -> dict[str, Any]:
    """A request for ``op`` with short, valid values (what its fields look like normally)."""
    values: dict[str, Any] = {
        "protocol": 1,
        "client": {"name": "fuzz"},
        "mode": "native",
        "request_id": 1,
        "question_id": "q",
        "choice": "once",
        "app": "Calculator",
        "goal": "add",
        "state_id": "s",
        "element_index": 0,
        "from_x": 0.0,
        "from_y": 0.0,
        "to_x": 1.0,
        "to_y": 1.0,
        "action": "press",
        "key": "Return",
        "direction": "down",
        "text": "hi",
        "value": "v",
    }
    required = {f.encode_name for f in op_fields(op) if f.required} - {"id"}
    return {"op": op, "id": rid, **{k: values[k] for k in sorted(required)}}


# ----- fragments: one hostile value, as JSON text or msgpack bytes, of about `size` bytes --------


def _mp_str_header(n: int) -> bytes:
    if n < 32:
        return bytes([0xA0 | n])
    if n < 256:
        return b"\xd9" + bytes([n])
    if n < 65536:
        return b"\xda" + struct.pack("!H", n)
    return b"\xdb" + struct.pack("!I", n)


def _mp_array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 65536:
        return b"\xdc" + struct.pack("!H", n)
    return b"\xdd" + struct.pack("!I", n)


def _mp_map_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x80 | n])
    if n < 65536:
        return b"\xde" + struct.pack("!H", n)
    return b"\xdf" + struct.pack("!I", n)


def long_text(kind: str, chars: int, mixed: bool) -> str:
    """``chars`` characters of ``kind``; ``mixed``: ASCII with a single one of ``kind`` first
    (the costliest mix: one wide character widens the whole string)."""
    c = CHAR_KINDS[kind]
    return c + "a" * (chars - 1) if mixed and chars else c * chars


def string_fragment(sub: str, kind: str, size: int, mixed: bool, escaped: bool) -> str | bytes:
    per = len(CHAR_KINDS[kind].encode()) if not mixed else 1
    text = long_text(kind, max(size // (6 * per if escaped else per), 0), mixed)
    if sub == MSGPACK:
        raw = text.encode()
        return _mp_str_header(len(raw)) + raw
    return json.dumps(text, ensure_ascii=escaped)


# Atoms repeated to fill arrays: each (JSON, msgpack).
ATOMS: dict[str, tuple[str, bytes]] = {
    "empty_map": ("{}", b"\x80"),
    "empty_array": ("[]", b"\x90"),
    "nil": ("null", b"\xc0"),
    "small_int": ("7", b"\x07"),
    "big_int": ("123456789012345678901234567890", b"\xcf" + b"\xff" * 8),
    "float": ("-1.7976931348623157e308", b"\xcb" + struct.pack("!d", 1.5e300)),
    "short_str": ('"ab"', b"\xa2ab"),
    "bmp_char": ('"\u0101"', b"\xa2\xc4\x81"),
    "astral_char": ('"\U0001f600"', b"\xa4\xf0\x9f\x98\x80"),
    "escaped": ('"\\u0101\\u0102"', b"\xa4\xc4\x81\xc4\x82"),
    "one_entry_map": ('{"a":1}', b"\x81\xa1a\x01"),
    "ext": ("true", b"\xd4\x01\x00"),
    "timestamp": ("false", b"\xd6\xff\x00\x00\x00\x00"),
    "bin": ('"x"', b"\xc4\x01x"),
}


def array_fragment(sub: str, atom: str, size: int) -> str | bytes:
    j, m = ATOMS[atom]
    if sub == MSGPACK:
        n = max(size // len(m), 0)
        return _mp_array_header(n) + m * n
    n = max(size // (len(j) + 1), 1)
    return "[" + ",".join([j] * n) + "]"


@cache
def _keys(n: int) -> list[str]:
    return [f"k{i}" for i in range(n)]


def map_fragment(sub: str, size: int, int_keys: bool) -> str | bytes:
    """A wide map: distinct short keys (up to 65,536 of them, then repeated), nil values."""
    if sub == MSGPACK:
        if int_keys:
            entry = b"\xcd\xff\xff\xc0"  # uint16 key, nil
            n = max(size // len(entry), 0)
            return _mp_map_header(n) + entry * n
        keys = _keys(65536)
        n = max(size // 8, 0)
        body = b"".join(
            _mp_str_header(len(k)) + k.encode() + b"\xc0" for k in keys[: min(n, 65536)]
        )
        reps = n // 65536 if n > 65536 else 1
        count = min(n, 65536) * reps
        return _mp_map_header(count) + body * reps
    keys = _keys(65536)
    n = max(size // 12, 1)
    if n <= 65536:
        return "{" + ",".join(f'"{k}":null' for k in keys[:n]) + "}"
    body = ",".join(f'"{k}":null' for k in keys)
    return "{" + ",".join([body] * (n // 65536)) + "}"


def deep_fragment(sub: str, kind: str, size: int, closed: bool) -> str | bytes:
    if sub == MSGPACK:
        level = b"\x91" if kind == "array" else b"\x81\xa1a"
        depth = max(size // len(level), 1)
        return level * depth + (b"\xc0" if closed else b"")
    open_, close = ("[", "]") if kind == "array" else ('{"a":', "}")
    depth = max(size // (len(open_) + 1), 1)
    return open_ * depth + (("1" if kind == "map" else "") + close * depth if closed else "")


def number_fragment(sub: str, size: int, frac: bool) -> str | bytes:
    """A number with ``size`` digits (JSON); msgpack numbers are fixed-size, so an ext."""
    if sub == MSGPACK:
        return ext_fragment(size, lie=False)
    digits = "9" * max(size, 1)
    return "1." + digits if frac else digits


def ext_fragment(size: int, lie: bool) -> bytes:
    """An ext32 value with ``size`` bytes of data, or a header claiming 4 GiB with no data."""
    if lie:
        return b"\xc9\xff\xff\xff\xff\x05"
    return b"\xc9" + struct.pack("!I", size) + b"\x05" + b"e" * size


def lying_header(kind: str) -> bytes:
    """A msgpack container or string header claiming far more than follows."""
    return {
        "array": b"\xdd\xff\xff\xff\xff",
        "map": b"\xdf\xff\xff\xff\xff",
        "str": b"\xdb\xff\xff\xff\xff",
        "bin": b"\xc6\xff\xff\xff\xff",
    }[kind] + b"\xc0" * 8


# ----- strategies ---------------------------------------------------------------------------------


def sizes(max_size: int) -> st.SearchStrategy[int]:
    """Mostly large, some right at the default limit, some small."""
    return st.one_of(
        st.integers(max_size // 4, max_size),
        st.integers(0, max_size),
        st.integers(DEFAULT_LIMIT - 256, DEFAULT_LIMIT + 256),
        st.integers(0, 4 * KiB),
    )


@st.composite
def fragments(draw: st.DrawFn, sub: str, size: int) -> tuple[str, str | bytes]:
    """(label, one hostile value in ``sub``'s encoding of about ``size`` bytes)."""
    how = draw(st.sampled_from(["string", "array", "map", "deep", "number", "ext", "lie"]))
    if how == "string":
        kind = draw(st.sampled_from(sorted(CHAR_KINDS)))
        mixed = draw(st.booleans())
        escaped = sub == JSON and draw(st.booleans())
        return f"string:{kind}{':mixed' if mixed else ''}{':escaped' if escaped else ''}", (
            string_fragment(sub, kind, size, mixed, escaped)
        )
    if how == "array":
        atom = draw(st.sampled_from(sorted(ATOMS)))
        return f"array:{atom}", array_fragment(sub, atom, size)
    if how == "map":
        int_keys = sub == MSGPACK and draw(st.booleans())
        return f"map{':int_keys' if int_keys else ''}", map_fragment(sub, size, int_keys)
    if how == "deep":
        kind = draw(st.sampled_from(["array", "map"]))
        closed = draw(st.booleans())
        return f"deep:{kind}{'' if closed else ':unclosed'}", deep_fragment(sub, kind, size, closed)
    if how == "number":
        frac = draw(st.booleans())
        return f"number{':frac' if frac else ''}", number_fragment(sub, size, frac)
    if sub == JSON:  # ext and lying headers are msgpack's; JSON gets a long string instead
        return "string:ascii", string_fragment(sub, "ascii", size, False, False)
    if how == "ext":
        return "ext", ext_fragment(size, lie=False)
    kind = draw(st.sampled_from(["array", "map", "str", "bin", "ext"]))
    return f"lie:{kind}", ext_fragment(0, lie=True) if kind == "ext" else lying_header(kind)


def _join_entries(sub: str, entries: list[tuple[str | bytes, str | bytes]]) -> str | bytes:
    """A map from already-encoded keys and values."""
    if sub == MSGPACK:
        parts = [k + v for k, v in entries if isinstance(k, bytes) and isinstance(v, bytes)]
        return _mp_map_header(len(entries)) + b"".join(parts)
    return "{" + ",".join(f"{k}:{v}" for k, v in entries) + "}"


def _enc_value(sub: str, value: Any) -> str | bytes:
    return msgspec.msgpack.encode(value) if sub == MSGPACK else json.dumps(value)


HOSTILE_KEYS = ("bulk", "own", "id", "op", "unknown")


@st.composite
def request_with(draw: st.DrawFn, sub: str, size: int) -> tuple[str, str | bytes]:
    """A request-shaped map with one hostile value (or a hostile key) in it."""
    op = draw(st.sampled_from([*OP_LIMITS, *sorted(op_types())]))
    base = small_valid(op, draw(st.integers(0, 2**53 - 1)))
    where = draw(st.sampled_from(HOSTILE_KEYS))
    if where == "bulk":
        name = draw(st.sampled_from(BULK_FIELDS.get(op, ("text",))))
    elif where == "own":
        name = draw(st.sampled_from([f.encode_name for f in op_fields(op)]))
    elif where == "unknown":
        name = draw(st.sampled_from(["x", "data", "client", "constraints", "verify"]))
    else:
        name = where
    base.pop(name, None)
    entries = [(_enc_value(sub, k), _enc_value(sub, v)) for k, v in base.items()]
    if draw(st.integers(0, 9)) == 0:  # the key itself is the hostile part
        kind = draw(st.sampled_from(sorted(CHAR_KINDS)))
        key = string_fragment(sub, kind, size, draw(st.booleans()), False)
        label, value = f"key:{kind}", _enc_value(sub, 1)
    else:
        key = _enc_value(sub, name)
        label, value = draw(fragments(sub, size))
    at = draw(st.integers(0, len(entries)))
    entries.insert(at, (key, value))
    return f"request:{op}:{name}@{at}:{label}", _join_entries(sub, entries)


@st.composite
def valid_long(draw: st.DrawFn, sub: str, size: int) -> tuple[str, str | bytes]:
    """A valid request of an op with bulk text, its text as long as ``size`` allows."""
    op = draw(st.sampled_from(sorted(BULK_FIELDS)))
    field = draw(st.sampled_from(BULK_FIELDS[op]))
    kind = draw(st.sampled_from(sorted(CHAR_KINDS)))
    mixed = draw(st.booleans())
    per = 1 if mixed else len(CHAR_KINDS[kind].encode())
    bound = _max_chars(next(f.type for f in op_fields(op) if f.encode_name == field))
    obj = small_valid(op, 1)
    if field == "constraints":
        obj[field] = [long_text(kind, max(min(size // per // 20, bound), 1), mixed)] * 20
    else:
        obj[field] = long_text(kind, max(min(size // per, bound), 1), mixed)
    escaped = sub == JSON and draw(st.booleans())
    data = json.dumps(obj, ensure_ascii=escaped) if sub == JSON else msgspec.msgpack.encode(obj)
    return f"valid:{op}:{field}:{kind}{':mixed' if mixed else ''}", data


def _max_chars(t: msgspec.inspect.Type) -> int:
    i = msgspec.inspect
    if isinstance(t, i.UnionType):
        return max(_max_chars(m) for m in t.types if not isinstance(m, i.NoneType))
    if isinstance(t, i.ListType):
        return _max_chars(t.item_type)
    assert isinstance(t, i.StrType) and t.max_length is not None
    return t.max_length


@st.composite
def payloads(draw: st.DrawFn, max_size: int) -> Payload:
    """One hostile payload of up to about ``max_size`` bytes, in either encoding."""
    sub = draw(st.sampled_from([JSON, MSGPACK]))
    size = draw(sizes(max_size))
    shape = draw(st.sampled_from(["top", "request", "request", "valid"]))
    if shape == "top":
        label, data = draw(fragments(sub, size))
        label = f"top:{label}"
    elif shape == "request":
        label, data = draw(request_with(sub, size))
    else:
        label, data = draw(valid_long(sub, size))
    cut = draw(st.sampled_from(["", "", "", "truncated", "trailing"]))
    if cut == "truncated" and len(data) > 1:
        at = draw(st.integers(1, len(data) - 1))
        data = data[:at]
    elif cut == "trailing":
        data = data + (b"\xc1" if isinstance(data, bytes) else " x")
    if cut:
        label += f":{cut}"
    if isinstance(data, str) and draw(st.booleans()):
        data = data.encode()  # a JSON connection reads binary frames too
    return Payload(label, sub, data)
