"""Encodings of the client protocol (JSON and msgpack, chosen by subprotocol) and its schema."""

from __future__ import annotations

from typing import Annotated, Any, Final

import msgspec

from deskhand_d.errors import BadRequest
from deskhand_d.protocol.limits import (
    DEFAULT_LIMIT,
    MAX_ID_BYTES,
    MAX_OP_BYTES,
    Head,
    check_json_arrays,
    check_size,
)
from deskhand_d.protocol.replies import ServerMessage
from deskhand_d.protocol.requests import Request

PROTOCOL_VERSION: Final = 1
SUBPROTOCOL_JSON: Final = "deskhand.v1.json"
SUBPROTOCOL_MSGPACK: Final = "deskhand.v1.msgpack"
SUBPROTOCOLS: Final = (SUBPROTOCOL_MSGPACK, SUBPROTOCOL_JSON)
WS_PATH: Final = "/v1"
MAX_ID: Final = 2**53 - 1  # ids survive a round trip through JavaScript numbers
UsableId = Annotated[int, msgspec.Meta(ge=0, le=MAX_ID)]


# ----- codecs ----------------------------------------------------------------------------------


def _enc_hook(obj: object) -> object:
    raise TypeError(f"cannot encode {type(obj).__name__}")  # a bug, not bad input


class Codec:
    """Encode server messages and decode requests for one subprotocol."""

    def __init__(self, subprotocol: str) -> None:
        if subprotocol not in SUBPROTOCOLS:
            raise ValueError(f"unknown subprotocol {subprotocol!r}")
        self.subprotocol = subprotocol
        self.binary = subprotocol == SUBPROTOCOL_MSGPACK
        self._encoder: msgspec.json.Encoder | msgspec.msgpack.Encoder
        self._decoder: msgspec.json.Decoder[Request] | msgspec.msgpack.Decoder[Request]
        self._head: msgspec.json.Decoder[Head] | msgspec.msgpack.Decoder[Head]
        self._op: msgspec.json.Decoder[str] | msgspec.msgpack.Decoder[str]
        self._id: msgspec.json.Decoder[int] | msgspec.msgpack.Decoder[int]
        if self.binary:
            self._encoder = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
            self._decoder = msgspec.msgpack.Decoder(Request)
            self._head = msgspec.msgpack.Decoder(Head)
            self._op = msgspec.msgpack.Decoder(str)
            self._id = msgspec.msgpack.Decoder(UsableId)
        else:
            self._encoder = msgspec.json.Encoder(enc_hook=_enc_hook)
            self._decoder = msgspec.json.Decoder(Request)
            self._head = msgspec.json.Decoder(Head)
            self._op = msgspec.json.Decoder(str)
            self._id = msgspec.json.Decoder(UsableId)

    def encode(self, message: ServerMessage) -> bytes | str:
        data = self._encoder.encode(message)
        return data if self.binary else data.decode()

    def decode_request(self, payload: bytes | str) -> Request:
        """Decode one request, or raise :class:`BadRequest` naming what is wrong.

        The error's ``data`` carries ``id`` when the payload had a usable one, so the reply can
        be matched to the request that failed. Nothing here costs more than a small constant
        times the payload's size (see :mod:`deskhand_d.protocol.limits`): a message larger
        than :data:`DEFAULT_LIMIT` is checked against its op's limits on a bounded view before
        it is decoded, and an id is only ever salvaged from such a view.
        """
        if isinstance(payload, str):
            if self.binary:
                raise BadRequest("this connection speaks msgpack; send binary frames")
            raw: bytes = payload.encode()
        else:
            raw = payload
        head: Head | None = None
        if len(raw) > DEFAULT_LIMIT:
            try:
                head = self._head.decode(raw)
            except msgspec.DecodeError as exc:
                raise BadRequest(_describe(exc)) from None
            except RecursionError:
                raise BadRequest(_TOO_DEEP) from None
            op, rid = self._read(head.op, MAX_OP_BYTES, self._op), self._id_data(head)
            check_size(op, head, len(raw), rid)
            if not self.binary:
                check_json_arrays(op, head, rid)
        try:
            request = self._decoder.decode(raw)
        except msgspec.DecodeError as exc:
            raise BadRequest(_describe(exc), data=self._salvage_id(raw, head)) from None
        except RecursionError:
            # msgspec recurses while skipping a deeply nested value it does not need.
            raise BadRequest(_TOO_DEEP) from None
        if not 0 <= request.id <= MAX_ID:
            raise BadRequest(f"id must be an integer from 0 to {MAX_ID}")
        return request

    def _read(
        self,
        raw: msgspec.Raw,
        max_bytes: int,
        decoder: msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any],
    ) -> Any:
        """One field of a head, if it is short enough to be meaningful and of the right type."""
        if not 0 < len(raw) <= max_bytes:
            return None
        try:
            return decoder.decode(raw)
        except msgspec.DecodeError:
            return None

    def _id_data(self, head: Head) -> dict[str, int]:
        rid = self._read(head.id, MAX_ID_BYTES, self._id)
        return {} if rid is None else {"id": rid}

    def _salvage_id(self, raw: bytes, head: Head | None) -> dict[str, int]:
        """The usable id of a payload that failed to decode, read from a bounded view."""
        if head is not None:
            return self._id_data(head)
        try:
            return self._id_data(self._head.decode(raw))
        except (msgspec.DecodeError, RecursionError):
            pass
        if not self.binary or not 0 <= _msgpack_map_len(raw) <= _MAX_FIELDS:
            return {}
        # msgpack map keys need not be strings, and a Struct view refuses any other key; a map
        # with as few entries as a request has is cheap to read with scalar keys instead.
        try:
            loose = _MSGPACK_SMALL_MAP.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            return {}
        return self._id_data(Head(id=loose.get("id", msgspec.Raw())))


_TOO_DEEP: Final = "the payload is nested too deeply to be a request"
_MAX_DESCRIBED: Final = 300  # msgspec quotes unknown keys and bad values; a reply need not
_MAX_FIELDS: Final = 32  # more than any request has (run: 15)
_ScalarKey = str | int | float | bool | None
_MSGPACK_SMALL_MAP: Final = msgspec.msgpack.Decoder(dict[_ScalarKey, msgspec.Raw])


def _msgpack_map_len(raw: bytes) -> int:
    """The entry count of a msgpack map from its header, or -1 when ``raw`` is no map."""
    if raw and 0x80 <= raw[0] <= 0x8F:
        return raw[0] & 0x0F
    if raw[:1] == b"\xde" and len(raw) >= 3:
        return int.from_bytes(raw[1:3], "big")
    if raw[:1] == b"\xdf" and len(raw) >= 5:
        return int.from_bytes(raw[1:5], "big")
    return -1


def _describe(exc: msgspec.DecodeError) -> str:
    text = str(exc)
    if len(text) > _MAX_DESCRIBED:
        text = text[:_MAX_DESCRIBED] + "…"
    if "Expected `object`, got" in text or "malformed" in text.lower() or "truncated" in text:
        return f"the payload is not a request object: {text}"
    return f"invalid request: {text}"


def pick_subprotocol(offered: list[str] | tuple[str, ...]) -> str | None:
    """The first subprotocol we speak, in the client's order of preference."""
    for name in offered:
        if name in SUBPROTOCOLS:
            return name
    return None


def schema() -> dict[str, Any]:
    """JSON Schema of both directions, for ``docs/protocol.schema.json``."""
    (req, srv), components = msgspec.json.schema_components(
        [Request, ServerMessage], ref_template="#/$defs/{name}"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Deskhand client protocol v{PROTOCOL_VERSION}",
        "$defs": components,
        "oneOf": [
            {"title": "client_to_daemon", **req},
            {"title": "daemon_to_client", **srv},
        ],
    }


__all__ = [
    "MAX_ID",
    "PROTOCOL_VERSION",
    "SUBPROTOCOLS",
    "SUBPROTOCOL_JSON",
    "SUBPROTOCOL_MSGPACK",
    "WS_PATH",
    "Codec",
    "pick_subprotocol",
    "schema",
]
