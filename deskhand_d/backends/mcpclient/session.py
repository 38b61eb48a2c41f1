"""The JSON-RPC 2.0 / MCP session state, without I/O.

Theory of operation. The session allocates ids for our requests (integers from 1), remembers
which are pending and for what method, and turns every received line into exactly one event:

* :class:`Response` / :class:`ErrorResponse` to one of our pending requests;
* :class:`ServerRequest` (the server asks us something, e.g. ``elicitation/create``);
* :class:`Notification`;
* :class:`Stray` (a response to nothing we are waiting for: a late answer to a cancelled
  request, or a parse-error reply carrying the server's own random id);
* :class:`Invalid` (not JSON-RPC: a protocol violation; ``noise`` when the line is not a
  JSON-RPC message at all, such as a warning printed before the handshake).

A server request is told apart from a response by the presence of ``method``, never by the type
or value of its id: servers number their own requests independently (the official SDK from 0 or
1, which collides with ours; Sky with uppercase UUID strings). Ids of server requests are
echoed back exactly as received, string or number.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import msgspec

from deskhand_d.backends.mcpclient.framing import encode_line

JSONRPC: Final = "2.0"
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602

RequestId = int | str


@dataclass(frozen=True, slots=True)
class Response:
    id: int
    method: str
    result: Any


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    id: int
    method: str
    code: int
    message: str
    data: Any


@dataclass(frozen=True, slots=True)
class ServerRequest:
    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Stray:
    id: Any
    error: Any


@dataclass(frozen=True, slots=True)
class Invalid:
    reason: str
    noise: bool = False  # not JSON, not an object, or not JSON-RPC 2.0 (vs. a broken message)


Event = Response | ErrorResponse | ServerRequest | Notification | Stray | Invalid

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


def _is_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class McpSession:
    def __init__(self) -> None:
        self._next_id = 1
        self._pending: dict[int, str] = {}

    # ----- outgoing -------------------------------------------------------------------------

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, bytes]:
        rid = self._next_id
        self._next_id += 1
        self._pending[rid] = method
        msg: dict[str, Any] = {"jsonrpc": JSONRPC, "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        return rid, encode_line(_encoder.encode(msg))

    def notification(self, method: str, params: dict[str, Any] | None = None) -> bytes:
        msg: dict[str, Any] = {"jsonrpc": JSONRPC, "method": method}
        if params is not None:
            msg["params"] = params
        return encode_line(_encoder.encode(msg))

    def result(self, rid: RequestId, result: dict[str, Any]) -> bytes:
        """Answer a server request, echoing its id with its original type."""
        return encode_line(_encoder.encode({"jsonrpc": JSONRPC, "id": rid, "result": result}))

    def error(self, rid: RequestId, code: int, message: str) -> bytes:
        msg = {"jsonrpc": JSONRPC, "id": rid, "error": {"code": code, "message": message}}
        return encode_line(_encoder.encode(msg))

    def forget(self, rid: int) -> None:
        """Stop waiting for ``rid`` (after cancelling it); a late answer becomes a Stray."""
        self._pending.pop(rid, None)

    @property
    def pending(self) -> dict[int, str]:
        return dict(self._pending)

    # ----- incoming -------------------------------------------------------------------------

    def receive(self, line: bytes) -> Event:
        try:
            msg = _decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):
            return Invalid("a line from the backend is not valid JSON", noise=True)
        if not isinstance(msg, dict):
            return Invalid("a message from the backend is not a JSON object", noise=True)
        if msg.get("jsonrpc") != JSONRPC:
            return Invalid("a message from the backend is not JSON-RPC 2.0", noise=True)
        method = msg.get("method")
        if method is not None:
            if not isinstance(method, str):
                return Invalid("a backend message has a non-string method")
            if "id" in msg:
                rid = msg["id"]
                if not _is_id(rid):
                    return Invalid("a backend request has an id that is neither string nor number")
                return ServerRequest(id=rid, method=method, params=msg.get("params"))
            return Notification(method=method, params=msg.get("params"))
        if "id" not in msg:
            return Invalid("a backend message has neither method nor id")
        rid = msg["id"]
        # Our ids are integers; a string "1" is not our 1 (JSON-RPC echoes ids unchanged).
        if not (isinstance(rid, int) and not isinstance(rid, bool)) or rid not in self._pending:
            return Stray(id=rid, error=msg.get("error"))
        req_method = self._pending.pop(rid)
        if "error" in msg:
            err = msg["error"]
            if not isinstance(err, dict):
                return Invalid("a backend error response has a malformed error object")
            code = err.get("code")
            return ErrorResponse(
                id=rid,
                method=req_method,
                code=code if isinstance(code, int) else 0,
                message=str(err.get("message", "")),
                data=err.get("data"),
            )
        if "result" not in msg:
            return Invalid("a backend response has neither result nor error")
        return Response(id=rid, method=req_method, result=msg["result"])
