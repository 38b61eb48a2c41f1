"""Encodings of the client protocol (JSON and msgpack, chosen by subprotocol) and its schema."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from deskhand_d.errors import BadRequest
from deskhand_d.protocol.replies import ServerMessage
from deskhand_d.protocol.requests import Request

PROTOCOL_VERSION: Final = 1
SUBPROTOCOL_JSON: Final = "deskhand.v1.json"
SUBPROTOCOL_MSGPACK: Final = "deskhand.v1.msgpack"
SUBPROTOCOLS: Final = (SUBPROTOCOL_MSGPACK, SUBPROTOCOL_JSON)
WS_PATH: Final = "/v1"
MAX_ID: Final = 2**53 - 1  # ids survive a round trip through JavaScript numbers


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
        self._loose: msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any]
        if self.binary:
            self._encoder = msgspec.msgpack.Encoder(enc_hook=_enc_hook)
            self._decoder = msgspec.msgpack.Decoder(Request)
            self._loose = msgspec.msgpack.Decoder()
        else:
            self._encoder = msgspec.json.Encoder(enc_hook=_enc_hook)
            self._decoder = msgspec.json.Decoder(Request)
            self._loose = msgspec.json.Decoder()

    def encode(self, message: ServerMessage) -> bytes | str:
        data = self._encoder.encode(message)
        return data if self.binary else data.decode()

    def decode_request(self, payload: bytes | str) -> Request:
        """Decode one request, or raise :class:`BadRequest` naming what is wrong.

        The error's ``data`` carries ``id`` when the payload had a usable one, so the reply can
        be matched to the request that failed.
        """
        if isinstance(payload, str):
            if self.binary:
                raise BadRequest("this connection speaks msgpack; send binary frames")
            raw: bytes = payload.encode()
        else:
            raw = payload
        try:
            request = self._decoder.decode(raw)
        except msgspec.DecodeError as exc:
            raise BadRequest(_describe(exc), data=_salvage_id(self._loose, raw)) from None
        except RecursionError:
            # msgspec recurses while skipping a deeply nested value it does not need.
            raise BadRequest("the payload is nested too deeply to be a request") from None
        if not 0 <= request.id <= MAX_ID:
            raise BadRequest(f"id must be an integer from 0 to {MAX_ID}")
        return request


def _describe(exc: msgspec.DecodeError) -> str:
    text = str(exc)
    if "Expected `object`, got" in text or "malformed" in text.lower() or "truncated" in text:
        return f"the payload is not a request object: {text}"
    return f"invalid request: {text}"


def _salvage_id(
    loose: msgspec.json.Decoder[Any] | msgspec.msgpack.Decoder[Any], raw: bytes
) -> dict[str, Any]:
    try:
        value = loose.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return {}
    if isinstance(value, dict):
        rid = value.get("id")
        if isinstance(rid, int) and not isinstance(rid, bool) and 0 <= rid <= MAX_ID:
            return {"id": rid}
    return {}


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
