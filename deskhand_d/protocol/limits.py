"""How large a request may be, and the bounded view that checks it before decoding. Pure.

Decoding materialises what it reads, and some of it costs more than its size: a string up to
5 bytes per byte (CPython builds a 1-byte-per-character buffer, then widens it to 4 when one
character needs it), an item of a JSON array about 12 (msgspec builds every item before it
checks the array's length), and msgspec quotes an unknown key or a bad enum value in its error
message (up to 13). So the codec reads a :class:`Head` first — ``op``, ``id`` and the bulk
fields as undecoded slices, every other value skipped without being built — and refuses
before decoding anything when:

* the message is larger than its op's limit (:data:`OP_LIMITS`, else :data:`DEFAULT_LIMIT`);
* the request outside its op's bulk text fields (:data:`BULK_FIELDS`) is larger than
  :data:`DEFAULT_LIMIT`, so whatever can amplify is confined to 64 KiB;
* a JSON array has more items than its field allows (counted by a view that stops at the bound).

Each limit holds every field at its maximum length in either encoding, even with every
character escaped for JSON as a surrogate pair of ``\\u`` escapes (12 bytes for one character);
``tests/unit/test_request_limits.py`` builds those largest requests from the Structs and checks
that they pass. A message within :data:`DEFAULT_LIMIT` is decoded without a view, as whatever it
costs is bounded by a constant. The WebSocket layer's ``max_message_bytes`` stays the outer
bound on every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, get_args

import msgspec

from deskhand_d.errors import BadRequest, RequestTooLarge
from deskhand_d.protocol.requests import Request, Run

KiB: Final = 1024
MiB: Final = 1024 * KiB

DEFAULT_LIMIT: Final = 64 * KiB
"""Every op but the four below: the largest (a ``ping`` with 1 KiB of data, fully escaped)
needs about 12 KiB."""

OP_LIMITS: Final[Mapping[str, int]] = MappingProxyType(
    {
        "run": 512 * KiB,  # goal, plan, 20 constraints and text: 36,000 characters in all
        "type_text": 2 * MiB,  # text: 100,000 characters
        "select_text": 4 * MiB,  # text, prefix and suffix: 100,000 characters each
        "set_value": 16 * MiB,  # value: 1,000,000 characters
    }
)

BULK_FIELDS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "run": ("goal", "plan", "constraints", "text"),
        "type_text": ("text",),
        "select_text": ("text", "prefix", "suffix"),
        "set_value": ("value",),
    }
)
"""The fields that may carry more than :data:`DEFAULT_LIMIT`: strings (or a list of them),
whose decoding costs at most 5 bytes per byte and whose errors never quote them."""

OPS: Final = frozenset(str(t.__struct_config__.tag) for t in get_args(Request))

MAX_OP_BYTES: Final = 64
"""An encoded ``op`` longer than this names no op; it is not decoded."""

MAX_ID_BYTES: Final = 32
"""An encoded id longer than this is no usable id (2^53 - 1 has 16 digits); it is not decoded."""


class Head(msgspec.Struct, frozen=True):
    """The fields the size checks read, as slices of the payload (empty when absent).

    msgspec skips the values of fields a Struct does not name without building them, and
    refuses a top level that is not a map at its first byte, so reading a head costs nothing
    per byte of input. Every name in :data:`BULK_FIELDS` is a field here.
    """

    op: msgspec.Raw = msgspec.Raw()
    id: msgspec.Raw = msgspec.Raw()
    text: msgspec.Raw = msgspec.Raw()
    value: msgspec.Raw = msgspec.Raw()
    prefix: msgspec.Raw = msgspec.Raw()
    suffix: msgspec.Raw = msgspec.Raw()
    goal: msgspec.Raw = msgspec.Raw()
    plan: msgspec.Raw = msgspec.Raw()
    constraints: msgspec.Raw = msgspec.Raw()


def _max_items(struct: type[msgspec.Struct], name: str) -> int:
    info = msgspec.inspect.type_info(struct)
    assert isinstance(info, msgspec.inspect.StructType)
    for field in info.fields:
        kind = field.type
        if field.name == name and isinstance(kind, msgspec.inspect.ListType) and kind.max_length:
            return kind.max_length
    raise AssertionError(f"{struct.__name__}.{name} is not a bounded list")


def _at_most(n: int) -> type[msgspec.Struct]:
    """An array of at most ``n`` items of any kind, none of them built: msgspec refuses the
    item after the ``n``-th as soon as it meets it."""
    return msgspec.defstruct(
        f"AtMost{n}",
        [(f"item{i}", msgspec.Raw, msgspec.Raw()) for i in range(n)],
        array_like=True,
        forbid_unknown_fields=True,
        frozen=True,
    )


# The arrays of each op, with their bounds; `run.constraints` is the only array in a request
# (a test walks the Structs to keep it so). msgpack arrays carry their length up front and
# msgspec checks it before reading an item; JSON arrays are counted by ARRAY_VIEWS first.
ARRAY_FIELDS: Final[Mapping[str, Mapping[str, int]]] = MappingProxyType(
    {"run": {"constraints": _max_items(Run, "constraints")}}
)
ARRAY_VIEWS: Final[Mapping[int, msgspec.json.Decoder[Any]]] = MappingProxyType(
    {
        n: msgspec.json.Decoder(_at_most(n) | None)
        for fields in ARRAY_FIELDS.values()
        for n in fields.values()
    }
)


def limit_for(op: str | None) -> int:
    return OP_LIMITS.get(op or "", DEFAULT_LIMIT)


def check_size(op: str | None, head: Head, size: int, data: dict[str, int]) -> None:
    """Refuse a message too large for its op, or whose non-bulk part is, before decoding it.

    ``data`` (the salvaged id) goes into the refusal so the reply can be matched.
    """
    op = op if op in OPS else None
    limit = limit_for(op)
    facts = {**data, "op": op, "limit_bytes": limit, "size_bytes": size}
    if size > limit:
        if op in OP_LIMITS:
            raise RequestTooLarge(
                f"a {op} request may be at most {limit} bytes and this one is {size}; "
                "send less text per request (split it across several requests)",
                data=facts,
            )
        larger = ", ".join(f"{name} ({n} bytes)" for name, n in OP_LIMITS.items())
        what = f"a {op} request" if op else "this payload, which names no known op,"
        raise RequestTooLarge(
            f"{what} may be at most {limit} bytes and this one is {size}; only {larger} "
            "may be larger",
            data=facts,
        )
    bulk = BULK_FIELDS.get(op or "", ())
    rest = size - sum(len(getattr(head, name)) for name in bulk)
    if rest > DEFAULT_LIMIT:
        raise RequestTooLarge(
            f"everything in a {op} request but {', '.join(bulk)} must fit in {DEFAULT_LIMIT} "
            f"bytes and here it takes {rest}; remove the extra fields or shorten the others",
            data={**facts, "limit_bytes": DEFAULT_LIMIT, "size_bytes": rest},
        )


def check_json_arrays(op: str | None, head: Head, data: dict[str, int]) -> None:
    """Refuse a JSON array with more items than its field allows, without building any."""
    for name, bound in ARRAY_FIELDS.get(op or "", {}).items():
        raw = getattr(head, name)
        if not len(raw):
            continue
        try:
            ARRAY_VIEWS[bound].decode(raw)
        except (msgspec.DecodeError, RecursionError):
            raise BadRequest(
                f"invalid request: {name} must be an array of at most {bound} items",
                data=data,
            ) from None


__all__ = [
    "BULK_FIELDS",
    "DEFAULT_LIMIT",
    "MAX_ID_BYTES",
    "MAX_OP_BYTES",
    "OPS",
    "OP_LIMITS",
    "Head",
    "check_json_arrays",
    "check_size",
    "limit_for",
]
