"""The client half of the RFC 6455 opening handshake, as pure functions. No I/O.

:func:`build_request` writes the HTTP/1.1 Upgrade request; :class:`ResponseReader` is fed the
server's bytes until the response head is complete; :func:`verify_accept` checks a ``101`` answer
(``Sec-WebSocket-Accept`` derived from our key, the upgrade headers, the chosen subprotocol).
Anything other than ``101`` is a refusal: the socket shell reads its body and raises
:class:`HandshakeRejected` so the person sees the server's own explanation.
"""

from __future__ import annotations

import binascii
import os

from deskhandctl.wire.frames import WebSocketError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_HEAD_SIZE = 16 * 1024


class HandshakeError(WebSocketError):
    """The server's answer to the Upgrade request is not a valid WebSocket acceptance."""


class HandshakeRejected(HandshakeError):
    """The server answered the Upgrade request with an HTTP status other than 101."""

    def __init__(self, status: int, reason: str, body: str) -> None:
        detail = f": {body}" if body else ""
        super().__init__(f"HTTP {status} {reason}{detail}".rstrip())
        self.status = status
        self.reason = reason
        self.body = body


def new_key() -> str:
    """A fresh ``Sec-WebSocket-Key``: 16 random bytes, base64-encoded."""
    return _b64(os.urandom(16))


def accept_value(key: str) -> str:
    """The ``Sec-WebSocket-Accept`` a correct server derives from ``key``."""
    return _b64(_sha1((key + WEBSOCKET_GUID).encode()))


def _sha1(data: bytes) -> bytes:
    # CPython's built-in SHA-1 module when present: hashlib would load OpenSSL first, which
    # costs about as much start-up time as the rest of the handshake code together.
    try:
        builtin = __import__("_sha1")
    except ImportError:
        import hashlib

        return hashlib.sha1(data, usedforsecurity=False).digest()
    digest: bytes = builtin.sha1(data).digest()
    return digest


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).decode()


def build_request(*, host: str, target: str, key: str, subprotocols: Sequence[str]) -> bytes:
    """The Upgrade request, ready to write to the socket."""
    lines = [
        f"GET {target} HTTP/1.1",
        f"Host: {host}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if subprotocols:
        lines.append(f"Sec-WebSocket-Protocol: {', '.join(subprotocols)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


class Response:
    """A parsed HTTP response head; header names are lower-cased, repeats are kept in order."""

    __slots__ = ("headers", "reason", "status")

    def __init__(self, status: int, reason: str, headers: dict[str, list[str]]) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers

    def header(self, name: str) -> str | None:
        """All values of header ``name`` joined by ``", "``, or None when absent."""
        values = self.headers.get(name.lower())
        return None if values is None else ", ".join(values)

    def tokens(self, name: str) -> list[str]:
        """The comma-separated tokens of header ``name``, lower-cased."""
        value = self.header(name) or ""
        return [token.strip().lower() for token in value.split(",") if token.strip()]


class ResponseReader:
    """Accumulates bytes until the response head ends; ``leftover`` is what came after it."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.leftover = b""

    @property
    def received(self) -> int:
        """How many bytes arrived so far (0 means the server said nothing at all)."""
        return len(self._buffer)

    def receive_data(self, data: bytes) -> Response | None:
        """Add bytes; return the response once its head is complete."""
        self._buffer += data
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD_SIZE:
                raise HandshakeError(f"response head is over {MAX_HEAD_SIZE} bytes")
            return None
        head = bytes(self._buffer[:end])
        self.leftover = bytes(self._buffer[end + 4 :])
        return parse_head(head)


def parse_head(head: bytes) -> Response:
    """Parse a status line and headers (without the blank line that ends them)."""
    text = head.decode("latin-1")  # HTTP header bytes are latin-1; this never fails
    status_line, *header_lines = text.split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HandshakeError(f"not an HTTP/1.1 response: {status_line[:80]!r}")
    headers: dict[str, list[str]] = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HandshakeError(f"malformed response header: {line[:80]!r}")
        headers.setdefault(name.lower(), []).append(value.strip())
    return Response(int(parts[1]), parts[2] if len(parts) == 3 else "", headers)


def verify_accept(response: Response, *, key: str, subprotocol: str | None) -> None:
    """Check a 101 response completes the handshake we started; raise HandshakeError if not.

    ``subprotocol`` is the one we offered and insist on (None: we offered none).
    """
    if response.status != 101:
        raise HandshakeRejected(response.status, response.reason, "")
    if "websocket" not in response.tokens("upgrade"):
        raise HandshakeError("the 101 response has no 'Upgrade: websocket' header")
    if "upgrade" not in response.tokens("connection"):
        raise HandshakeError("the 101 response has no 'Connection: Upgrade' header")
    accept = response.header("sec-websocket-accept")
    if accept != accept_value(key):
        raise HandshakeError(
            f"Sec-WebSocket-Accept is {accept!r}, which does not match the key we sent"
        )
    if response.header("sec-websocket-extensions"):
        raise HandshakeError("the server enabled an extension we did not offer")
    chosen = response.header("sec-websocket-protocol")
    if chosen != subprotocol:
        if chosen is None:
            raise HandshakeError(f"the server did not agree to subprotocol {subprotocol!r}")
        raise HandshakeError(f"the server chose subprotocol {chosen!r}, not {subprotocol!r}")
