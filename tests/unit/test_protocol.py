"""Wire types: decoding requests, encoding replies, salvaging ids, and the generated schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from deskhand_d import protocol as p
from deskhand_d.errors import BadRequest, Delivery, OutcomeUnknown

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"


@pytest.fixture(params=[p.SUBPROTOCOL_JSON, p.SUBPROTOCOL_MSGPACK])
def codec(request: pytest.FixtureRequest) -> p.Codec:
    return p.Codec(request.param)


def _enc(codec: p.Codec, obj: object) -> bytes | str:
    return msgspec.msgpack.encode(obj) if codec.binary else json.dumps(obj)


def test_hello_decodes_with_defaults(codec: p.Codec) -> None:
    """A minimal hello decodes into the Hello struct with its defaults filled in."""
    req = codec.decode_request(
        _enc(codec, {"op": "hello", "id": 7, "protocol": 1, "client": {"name": "x"}})
    )
    assert isinstance(req, p.Hello)
    assert req.id == 7 and req.client.name == "x" and req.client.kind == "other"
    assert req.can_answer_questions is False


@pytest.mark.parametrize(
    ("payload", "salvaged"),
    [
        ({"op": "nope", "id": 3}, 3),
        ({"op": "ping", "id": 4, "extra": 1}, 4),
        ({"op": "ping", "id": "5"}, None),
        ({"op": "ping"}, None),
        ({"op": "ping", "id": -1}, None),
        ({"op": "ping", "id": 2**53}, None),
        ({"op": "ping", "id": True}, None),
        ({"op": "ping", "id": 6, "data": "x" * 1025}, 6),
        ([1, 2, 3], None),
        ("just a string", None),
    ],
)
def test_bad_requests_raise_bad_request_with_salvaged_id(
    codec: p.Codec, payload: object, salvaged: int | None
) -> None:
    """Every malformed request raises BadRequest, carrying the id only when it was usable."""
    with pytest.raises(BadRequest) as info:
        codec.decode_request(_enc(codec, payload))
    assert info.value.code == "bad_request"
    assert info.value.data.get("id") == salvaged
    assert info.value.message


def test_garbage_bytes_are_bad_requests(codec: p.Codec) -> None:
    """Undecodable bytes and deep nesting are refused without raising anything else."""
    for raw in (b"\xff\xfe\x00", b"{", b"[" * 100_000, b""):
        with pytest.raises(BadRequest):
            codec.decode_request(raw)


def test_msgpack_connection_refuses_text_frames() -> None:
    """A msgpack connection says clearly that it wants binary frames."""
    with pytest.raises(BadRequest, match="binary"):
        p.Codec(p.SUBPROTOCOL_MSGPACK).decode_request('{"op":"ping","id":1}')


def test_replies_encode_with_type_tags(codec: p.Codec) -> None:
    """Results, errors and events carry their tags so clients can switch on them."""
    out = codec.encode(p.Result(id=1, result=p.Pong(data="hi")))
    decoded = msgspec.msgpack.decode(out) if isinstance(out, bytes) else json.loads(out)
    assert decoded == {"type": "result", "id": 1, "result": {"kind": "pong", "data": "hi"}}
    err = codec.encode(p.Error(id=None, error=p.ErrorBody(code="bad_request", message="m")))
    decoded = msgspec.msgpack.decode(err) if isinstance(err, bytes) else json.loads(err)
    assert decoded == {
        "type": "error",
        "id": None,
        "error": {"code": "bad_request", "message": "m", "data": {}},
    }


def test_an_errors_data_types_its_delivery(codec: p.Codec) -> None:
    """The wire type of an error's data names ``delivery`` with the four values (in the schema,
    and so in the generated TypeScript) and stays an open object: an error about the desktop
    fills it, and every other key of its data goes through as before."""
    data = p.schema()["$defs"]["ErrorBody"]["properties"]["data"]
    assert data["type"] == "object"
    assert data["properties"]["delivery"]["enum"] == list(get_args(Delivery))
    assert data["additionalProperties"] is True
    exc = OutcomeUnknown("lost", data={"backend_text": "t"})
    body = p.ErrorBody(code=exc.code, message=exc.message, data=exc.reply_data())
    out = codec.encode(p.Error(id=3, error=body))
    decoded = msgspec.msgpack.decode(out) if isinstance(out, bytes) else json.loads(out)
    assert decoded["error"]["data"] == {"backend_text": "t", "delivery": "unknown"}


def test_unknown_subprotocol_is_refused() -> None:
    """Only the two documented subprotocols are accepted by the codec and negotiation."""
    with pytest.raises(ValueError):
        p.Codec("deskhand.v2.json")
    assert p.pick_subprotocol(["x", "deskhand.v1.json"]) == "deskhand.v1.json"
    assert p.pick_subprotocol(["deskhand.v2.json"]) is None


def test_schema_file_is_current() -> None:
    """docs/protocol.schema.json matches the Structs (`python -m deskhand_d.schema`)."""
    generated = json.dumps(p.schema(), indent=2, sort_keys=True) + "\n"
    assert SCHEMA_PATH.read_text() == generated, (
        "docs/protocol.schema.json is stale; run `python -m deskhand_d.schema` to regenerate it"
    )
