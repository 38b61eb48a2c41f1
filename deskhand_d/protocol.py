"""The client protocol: every message that crosses the daemon's socket, as msgspec Structs.

This module is pure (no I/O). It owns the wire types, the two encodings (JSON and msgpack,
selected by the WebSocket subprotocol) and request decoding that never raises anything but
:class:`BadRequest`. The daemon and the tests import it; the CLI does not (it speaks the JSON
form with the standard library, see ``clients/deskhandctl``), and ``docs/protocol.schema.json``
is generated from it.

Shape: a client sends requests ``{"op": ..., "id": N, ...}``; the daemon answers each with
``{"type": "result", "id": N, "result": {"kind": ...}}`` or
``{"type": "error", "id": N | null, "error": {"code", "message", "data"}}`` and may push
``{"type": "event", "event": {"kind": ...}}`` at any time.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

import msgspec

from deskhand_d.errors import BadRequest

PROTOCOL_VERSION: Final = 1
SUBPROTOCOL_JSON: Final = "deskhand.v1.json"
SUBPROTOCOL_MSGPACK: Final = "deskhand.v1.msgpack"
SUBPROTOCOLS: Final = (SUBPROTOCOL_MSGPACK, SUBPROTOCOL_JSON)
WS_PATH: Final = "/v1"
MAX_ID: Final = 2**53 - 1  # ids survive a round trip through JavaScript numbers

ClientKind = Literal["cli", "agent", "pi", "test", "other"]


class _Request(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="op"
):
    id: int


ShortText = Annotated[str, msgspec.Meta(max_length=200)]


class ClientInfo(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: ShortText
    version: ShortText = ""
    kind: ClientKind = "other"


class Hello(_Request, tag="hello", frozen=True):
    """First request on every connection: who the client is and what it can do."""

    protocol: int
    client: ClientInfo
    can_answer_questions: bool = False


class Status(_Request, tag="status", frozen=True):
    """Ask for the daemon's health, clients and per-op statistics."""


class Ping(_Request, tag="ping", frozen=True):
    """A liveness check; ``data`` is echoed back unchanged (at most 1 KiB)."""

    data: Annotated[str, msgspec.Meta(max_length=1024)] = ""


class Shutdown(_Request, tag="shutdown", frozen=True):
    """Ask the daemon to stop gracefully."""


class Doctor(_Request, tag="doctor", frozen=True):
    """Check the backend without touching the desktop: handshake only, never a tool call."""


Request = Hello | Status | Ping | Shutdown | Doctor


# ----- replies ---------------------------------------------------------------------------------


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str
    data: dict[str, Any] = msgspec.field(default_factory=dict)


class _Result(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class Welcome(_Result, tag="welcome", frozen=True):
    daemon_version: str
    protocol: int
    session_id: str
    pid: int


class ClientSummary(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    kind: str
    version: str
    pid: int
    uid: int
    connected_s: float


class OpStats(msgspec.Struct, frozen=True, kw_only=True):
    count: int
    errors: int
    p50_ms: float
    p90_ms: float
    p99_ms: float


class BackendStatus(msgspec.Struct, frozen=True, kw_only=True):
    kind: str
    running_pid: int | None
    processes_started: int


class StatusResult(_Result, tag="status", frozen=True):
    version: str
    pid: int
    uptime_s: float
    socket: str
    protocol: int
    subprotocols: list[str]
    clients: list[ClientSummary]
    ops: dict[str, OpStats]
    backend: BackendStatus | None = None


class Pong(_Result, tag="pong", frozen=True):
    data: str = ""


class ShuttingDownResult(_Result, tag="shutting_down", frozen=True):
    pass


class SchemaDifference(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    problem: str


class DoctorFinding(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    evidence: str
    remedy: str


class DoctorResult(_Result, tag="doctor", frozen=True):
    backend: str
    """The configured kind and the one chosen, e.g. ``auto -> sim``."""
    argv: list[str]
    notice: str
    handshake_ok: bool
    error: ErrorBody | None = None
    server_name: str = ""
    server_version: str = ""
    protocol_version: str = ""
    pid: int | None = None
    tools: list[str] = msgspec.field(default_factory=list)
    schema_differences: list[SchemaDifference] = msgspec.field(default_factory=list)
    findings: list[DoctorFinding] = msgspec.field(default_factory=list)
    exit_status: int | None = None
    """How the last backend process ended, if one has ended."""
    stderr_tail: list[str] = msgspec.field(default_factory=list)
    """The last lines the backend wrote to stderr (for a failed handshake)."""


ResultBody = Welcome | StatusResult | Pong | ShuttingDownResult | DoctorResult


class _Reply(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    pass


class Result(_Reply, tag="result", frozen=True):
    id: int
    result: ResultBody


class Error(_Reply, tag="error", frozen=True):
    id: int | None
    error: ErrorBody


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind"):
    pass


class Notice(_Event, tag="notice", frozen=True):
    """Something the person should know that is not a reply (e.g. the daemon is stopping)."""

    code: str
    message: str


EventBody = Notice


class Event(_Reply, tag="event", frozen=True):
    event: EventBody


ServerMessage = Result | Error | Event


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
