"""Per-op size limits: each holds the op's largest valid request, and a byte more is refused
unread (``request_too_large``, naming the op and its limit); only bulk text may be large."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any, get_args

import msgspec
import pytest
from dhtest.hostile import JSON, MSGPACK, encode, largest_request, op_fields, op_types

from deskhand_d import protocol as p
from deskhand_d.errors import BadRequest, RequestTooLarge
from deskhand_d.protocol.limits import (
    ARRAY_FIELDS,
    BULK_FIELDS,
    DEFAULT_LIMIT,
    OP_LIMITS,
    Head,
    limit_for,
)

CODECS = {JSON: p.Codec(p.SUBPROTOCOL_JSON), MSGPACK: p.Codec(p.SUBPROTOCOL_MSGPACK)}
OPS = sorted(op_types())


def peak_of(codec: p.Codec, data: str | bytes) -> tuple[int, BaseException | None]:
    tracemalloc.start()
    try:
        try:
            codec.decode_request(data)
            error = None
        except BadRequest as exc:
            error = exc
        return tracemalloc.get_traced_memory()[1], error
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("sub", [JSON, MSGPACK])
@pytest.mark.parametrize("op", OPS)
def test_the_largest_valid_request_of_every_op_is_accepted(op: str, sub: str) -> None:
    """Every field at its maximum, every character escaped (JSON): within the op's limit."""
    data = encode(largest_request(op), sub)
    size = len(data.encode() if isinstance(data, str) else data)
    assert size <= limit_for(op), (op, sub, size, limit_for(op))
    request = CODECS[sub].decode_request(data)
    assert type(request) is op_types()[op]


@pytest.mark.parametrize("op", sorted(OP_LIMITS))
def test_large_op_limits_are_the_real_maximum_rounded_up(op: str) -> None:
    """A limit above the default is less than twice what the op's largest request needs."""
    needed = len(json.dumps(largest_request(op), separators=(",", ":")))
    assert DEFAULT_LIMIT < needed <= OP_LIMITS[op] < 2 * needed, (op, needed)


def test_the_default_limit_holds_every_other_op() -> None:
    needed = {
        op: len(json.dumps(largest_request(op), separators=(",", ":")))
        for op in OPS
        if op not in OP_LIMITS
    }
    assert max(needed.values()) <= DEFAULT_LIMIT
    assert max(needed, key=lambda op: needed[op]) == "ping"  # the docs name it


@pytest.mark.parametrize("op", OPS)
def test_a_byte_over_the_limit_is_refused_unread(op: str) -> None:
    """One byte over its limit a request is request_too_large, with the op, its limit and the
    size, and the id, at no cost per byte; padded to exactly the default limit it decodes (a
    larger op's padding is not bulk text, so the default limit still holds for it)."""
    limit = limit_for(op)
    body = json.dumps(largest_request(op, rid=77), separators=(",", ":")).encode()
    if op not in OP_LIMITS:
        at_limit = body[:-1] + b" " * (limit - len(body)) + b"}"
        assert type(CODECS[JSON].decode_request(at_limit)) is op_types()[op]
    over = body[:-1] + b" " * (limit + 1 - len(body)) + b"}"
    peak, error = peak_of(CODECS[JSON], over)
    assert isinstance(error, RequestTooLarge), error
    assert error.code == "request_too_large"
    assert error.data == {"id": 77, "op": op, "limit_bytes": limit, "size_bytes": limit + 1}
    assert f"at most {limit} bytes" in error.message
    assert peak < 64 * 1024, peak


def test_only_bulk_text_may_be_large() -> None:
    """A set_value may be 16 MiB of value, but not 64 KiB of anything else."""
    value = "v" * (200 * 1024)
    ok = {"op": "set_value", "id": 5, "app": "a", "state_id": "s", "element_index": 0}
    for sub, codec in CODECS.items():
        assert codec.decode_request(encode({**ok, "value": value}, sub)).value == value  # type: ignore[union-attr]
        with pytest.raises(RequestTooLarge) as info:
            codec.decode_request(encode({**ok, "value": "v", "x": "x" * DEFAULT_LIMIT}, sub))
        assert info.value.data["limit_bytes"] == DEFAULT_LIMIT and info.value.data["id"] == 5
        assert "but value must fit in 65536 bytes" in info.value.message
        # A large value under another op's bulk name counts as the rest of the request.
        with pytest.raises(RequestTooLarge):
            codec.decode_request(encode({**ok, "value": "v", "text": value}, sub))
        # Below the default limit an unknown field is simply an unknown field.
        with pytest.raises(BadRequest, match="unknown field") as small:
            codec.decode_request(encode({**ok, "value": "v", "x": "x" * 60_000}, sub))
        assert small.value.code == "bad_request" and small.value.data == {"id": 5}


def test_a_json_array_is_counted_before_it_is_built() -> None:
    """100,000 constraints in a run within its limit: refused without building the items."""
    run = {"op": "run", "id": 8, "app": "a", "goal": "g", "constraints": ["ab"] * 100_000}
    for sub, codec in CODECS.items():
        data = encode(run, sub)
        data = data.encode() if isinstance(data, str) else data  # a text frame costs its copy
        assert len(data) <= OP_LIMITS["run"]
        peak, error = peak_of(codec, data)
        assert isinstance(error, BadRequest) and error.data == {"id": 8}, error
        assert "20" in error.message and "constraints" in error.message
        assert peak < 64 * 1024, (sub, peak)
    twenty = {**run, "constraints": ["c" * 1000] * 20, "text": "t" * 10_000, "plan": "p" * 4000}
    assert len(CODECS[JSON].decode_request(json.dumps(twenty)).constraints) == 20  # type: ignore[union-attr]


def test_error_messages_never_echo_a_large_value() -> None:
    """msgspec quotes unknown keys and bad enum values; the reply keeps 300 characters."""
    for sub, codec in CODECS.items():
        for obj in (
            {"op": "ping", "id": 1, "k" * 50_000: 1},
            {"op": "mode_set", "id": 1, "mode": "m" * 50_000},
            {"op": "o" * 50_000, "id": 1},
        ):
            with pytest.raises(BadRequest) as info:
                codec.decode_request(encode(obj, sub))
            assert len(info.value.message) < 400 and info.value.data == {"id": 1}


def test_msgpack_maps_with_other_keys_still_give_their_id() -> None:
    """A small msgpack map with an integer key: the id is still salvaged (from a dict of at
    most 32 scalar keys); a wide one is not read at all."""
    codec = CODECS[MSGPACK]
    with pytest.raises(BadRequest) as info:
        codec.decode_request(msgspec.msgpack.encode({1: 1, "op": "ping", "id": 9}))
    assert info.value.data == {"id": 9}
    wide = msgspec.msgpack.encode({**dict.fromkeys(range(40)), "op": "ping", "id": 9})
    with pytest.raises(BadRequest) as info:
        codec.decode_request(wide)
    assert info.value.data == {}


def _arrays(t: msgspec.inspect.Type, path: str) -> list[tuple[str, int | None]]:
    """Every array in a request type, as (path, max_length)."""
    i = msgspec.inspect
    if isinstance(t, i.ListType | i.SetType | i.FrozenSetType | i.VarTupleType):
        return [(path, t.max_length), *_arrays(t.item_type, path + "[]")]
    if isinstance(t, i.UnionType):
        return [a for m in t.types for a in _arrays(m, path)]
    if isinstance(t, i.StructType):
        return [a for f in t.fields for a in _arrays(f.type, f"{path}.{f.encode_name}")]
    if isinstance(t, i.DictType | i.TupleType):
        raise AssertionError(f"{path}: a map or tuple in a request needs a counting view too")
    return []


def test_every_array_in_a_request_is_counted_and_every_bulk_field_is_text() -> None:
    """The views in limits.py cover the schema: arrays (JSON builds them before counting) are
    top-level fields of their op, listed in ARRAY_FIELDS with their bound, and bulk fields
    are strings (or lists of strings) that the Head reads."""
    found = {}
    for op in OPS:
        for path, bound in _arrays(msgspec.inspect.type_info(op_types()[op]), op):
            found[path] = bound
    assert found == {
        f"{op}.{name}": bound
        for op, fields in ARRAY_FIELDS.items()
        for name, bound in fields.items()
    }
    i = msgspec.inspect
    for op, names in BULK_FIELDS.items():
        types = {f.encode_name: f.type for f in op_fields(op)}
        for name in names:
            assert name in Head.__struct_fields__, name
            kinds: list[Any] = [types[name]]
            while kinds:
                t = kinds.pop()
                if isinstance(t, i.UnionType):
                    kinds.extend(t.types)
                elif isinstance(t, i.ListType):
                    kinds.append(t.item_type)
                else:
                    assert isinstance(t, i.StrType | i.NoneType), (op, name, t)
    assert set(get_args(p.Request)) == set(op_types().values())
