"""RFC 6455 framing for the client side: frame encoding and an incremental reader. No I/O.

Theory of operation: :func:`encode_frame` turns one frame into bytes (the client masks every
frame it sends; :func:`client_frame` draws the mask). :class:`FrameReader` is fed whatever bytes
arrived, in any chunking, and yields whole *events*: a complete :class:`Message` (continuation
frames already joined), a :class:`Ping`, a :class:`Pong` or a :class:`Close`. It never reads a
socket, so the socket shell in :mod:`deskhandctl.wire.client` and the tests drive it alike.

Invariants kept by the reader:

* a frame is judged as soon as its header is complete, before its payload arrives, so an
  oversized message is refused without buffering it;
* the bytes of a fragmented message so far never exceed ``max_message_size``;
* after a :class:`Close` nothing more is parsed, and after a :class:`WebSocketProtocolError` the
  reader raises that same error on every call (there is no resynchronising a broken stream).

Only stdlib ``os`` is imported: this module is on the CLI's start-up path.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

OP_CONTINUATION = 0x0
OP_TEXT = 0x1
OP_BINARY = 0x2
OP_CLOSE = 0x8
OP_PING = 0x9
OP_PONG = 0xA

CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_PROTOCOL_ERROR = 1002
CLOSE_UNSUPPORTED_DATA = 1003
CLOSE_NO_STATUS = 1005  # reported when a close frame carries no code; never sent
CLOSE_ABNORMAL = 1006  # reported when the connection drops without a close frame; never sent
CLOSE_INVALID_DATA = 1007
CLOSE_POLICY_VIOLATION = 1008
CLOSE_MESSAGE_TOO_BIG = 1009
CLOSE_INTERNAL_ERROR = 1011

# The daemon accepts and may send messages up to 64 MiB by default (a large screenshot in
# base64); the client takes as much.
DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
MAX_CONTROL_PAYLOAD = 125

_DATA_OPCODES = frozenset({OP_CONTINUATION, OP_TEXT, OP_BINARY})
_CONTROL_OPCODES = frozenset({OP_CLOSE, OP_PING, OP_PONG})
# Codes a peer may put in a close frame (RFC 6455 section 7.4); 1004-1006 and 1015 are reserved.
_SENDABLE_CLOSE_CODES = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012})
_SENDABLE_CLOSE_CODES |= frozenset({1013, 1014})


class WebSocketError(Exception):
    """Base of every WebSocket failure the client reports (framing, handshake, connection)."""


class WebSocketProtocolError(WebSocketError):
    """The peer broke RFC 6455. ``close_code`` is the code our close frame should carry.

    The connection cannot continue: send a close frame with ``close_code`` and drop it.
    """

    def __init__(self, message: str, close_code: int = CLOSE_PROTOCOL_ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.close_code = close_code


class _Event:
    """A value object: equal when type and slots are equal (no dataclasses on the hot path)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Event) or type(other) is not type(self):
            return NotImplemented
        return other._values() == self._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Message(_Event):
    """A complete data message: ``str`` for text, ``bytes`` for binary."""

    __slots__ = ("data",)

    def __init__(self, data: str | bytes) -> None:
        self.data = data


class Ping(_Event):
    """The peer asks for a pong carrying the same ``payload``."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


class Pong(_Event):
    """An answer to a ping (or an unsolicited heartbeat, which RFC 6455 allows)."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


class Close(_Event):
    """The peer's close frame. ``code`` is 1005 when the frame carried none."""

    __slots__ = ("code", "reason")

    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason


Event = Message | Ping | Pong | Close


def apply_mask(data: bytes, mask: bytes) -> bytes:
    """XOR ``data`` with the 4-byte ``mask`` repeated (masking and unmasking are the same)."""
    size = len(data)
    if size == 0:
        return b""
    key = (mask * (size // 4 + 1))[:size]
    # One big-integer XOR runs in C; a Python loop over the bytes would be far slower.
    return (int.from_bytes(data, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")


def encode_frame(
    opcode: int, payload: bytes, *, fin: bool = True, mask: bytes | None = None
) -> bytes:
    """One frame as bytes; masked with ``mask`` (4 bytes) when given, as clients must."""
    if mask is not None and len(mask) != 4:
        raise ValueError("a frame mask is exactly 4 bytes")
    size = len(payload)
    head = bytearray([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if mask is not None else 0
    if size < 126:
        head.append(mask_bit | size)
    elif size < 1 << 16:
        head.append(mask_bit | 126)
        head += size.to_bytes(2, "big")
    else:
        head.append(mask_bit | 127)
        head += size.to_bytes(8, "big")
    if mask is None:
        return bytes(head) + payload
    return bytes(head) + mask + apply_mask(payload, mask)


def client_frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """A frame from the client, masked with a fresh random key (RFC 6455 section 5.3)."""
    return encode_frame(opcode, payload, fin=fin, mask=os.urandom(4))


def encode_close_payload(code: int, reason: str = "") -> bytes:
    """The body of a close frame; the reason is cut at a character boundary to fit 123 bytes."""
    raw = reason.encode()
    while len(raw) > MAX_CONTROL_PAYLOAD - 2:
        reason = reason[:-1]
        raw = reason.encode()
    return code.to_bytes(2, "big") + raw


def decode_close_payload(payload: bytes) -> Close:
    """Parse a close frame body, or raise :class:`WebSocketProtocolError`."""
    if not payload:
        return Close(CLOSE_NO_STATUS, "")
    if len(payload) == 1:
        raise WebSocketProtocolError("close frame with a 1-byte body")
    code = int.from_bytes(payload[:2], "big")
    if code not in _SENDABLE_CLOSE_CODES and not 3000 <= code <= 4999:
        raise WebSocketProtocolError(f"close frame with invalid code {code}")
    try:
        reason = payload[2:].decode()
    except UnicodeDecodeError:
        raise WebSocketProtocolError(
            "close reason is not valid UTF-8", CLOSE_INVALID_DATA
        ) from None
    return Close(code, reason)


class FrameReader:
    """Bytes in, events out: ``receive_data(b)`` then ``next_event()`` until it returns None.

    ``masked`` says whether incoming frames must be masked: False for a client reading a server
    (the default), True for a server reading a client (used by tests).
    """

    def __init__(
        self, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, masked: bool = False
    ) -> None:
        self.max_message_size = max_message_size
        self._masked = masked
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._fragment_opcode: int | None = None
        self._fragment_size = 0
        self._closed = False
        self._error: WebSocketProtocolError | None = None

    @property
    def closed(self) -> bool:
        """True once a close frame was parsed."""
        return self._closed

    @property
    def buffered(self) -> int:
        """Bytes received but not yet turned into events."""
        return len(self._buffer)

    def receive_data(self, data: bytes) -> None:
        """Add bytes from the peer. Bytes after a close frame are dropped."""
        if not self._closed:
            self._buffer += data

    def events(self) -> Iterator[Event]:
        """Every event the buffered bytes complete, in order."""
        while (event := self.next_event()) is not None:
            yield event

    def next_event(self) -> Event | None:
        """The next complete event, or None when more bytes are needed."""
        if self._error is not None:
            raise self._error
        if self._closed:
            return None
        try:
            return self._next_event()
        except WebSocketProtocolError as exc:
            self._error = exc
            self._buffer.clear()
            self._fragments.clear()
            raise

    def _next_event(self) -> Event | None:
        while True:
            frame = self._next_frame()
            if frame is None:
                return None
            fin, opcode, payload = frame
            if opcode in _CONTROL_OPCODES:
                return self._control(opcode, payload)
            event = self._data(fin, opcode, payload)
            if event is not None:
                return event

    def _control(self, opcode: int, payload: bytes) -> Event:
        if opcode == OP_PING:
            return Ping(payload)
        if opcode == OP_PONG:
            return Pong(payload)
        close = decode_close_payload(payload)
        self._closed = True
        self._buffer.clear()
        return close

    def _data(self, fin: bool, opcode: int, payload: bytes) -> Message | None:
        if opcode == OP_CONTINUATION:
            if self._fragment_opcode is None:
                raise WebSocketProtocolError("continuation frame without a message to continue")
        elif self._fragment_opcode is not None:
            raise WebSocketProtocolError("new message started before the previous one finished")
        else:
            self._fragment_opcode = opcode
        self._fragments.append(payload)
        self._fragment_size += len(payload)
        if not fin:
            return None
        kind = self._fragment_opcode
        data = b"".join(self._fragments)
        self._fragments.clear()
        self._fragment_opcode = None
        self._fragment_size = 0
        if kind == OP_BINARY:
            return Message(data)
        try:
            return Message(data.decode())
        except UnicodeDecodeError:
            raise WebSocketProtocolError(
                "text message is not valid UTF-8", CLOSE_INVALID_DATA
            ) from None

    def _next_frame(self) -> tuple[bool, int, bytes] | None:
        buf = self._buffer
        if len(buf) < 2:
            return None
        first, second = buf[0], buf[1]
        fin = bool(first & 0x80)
        opcode = first & 0x0F
        has_mask = bool(second & 0x80)
        size = second & 0x7F
        pos = 2
        if size == 126:
            if len(buf) < 4:
                return None
            size = int.from_bytes(buf[2:4], "big")
            pos = 4
        elif size == 127:
            if len(buf) < 10:
                return None
            size = int.from_bytes(buf[2:10], "big")
            pos = 10
            if size >> 63:
                raise WebSocketProtocolError("frame length has its most significant bit set")
        self._check_header(first, opcode, fin, has_mask, size)
        mask = b""
        if has_mask:
            if len(buf) < pos + 4:
                return None
            mask = bytes(buf[pos : pos + 4])
            pos += 4
        end = pos + size
        if len(buf) < end:
            return None
        payload = bytes(buf[pos:end])
        del buf[:end]
        if has_mask:
            payload = apply_mask(payload, mask)
        return fin, opcode, payload

    def _check_header(self, first: int, opcode: int, fin: bool, has_mask: bool, size: int) -> None:
        if first & 0x70:
            raise WebSocketProtocolError("reserved bits set, but no extension was negotiated")
        if opcode not in _DATA_OPCODES and opcode not in _CONTROL_OPCODES:
            raise WebSocketProtocolError(f"unknown opcode 0x{opcode:x}")
        if has_mask != self._masked:
            side = "masked" if has_mask else "unmasked"
            raise WebSocketProtocolError(f"unexpected {side} frame")
        if opcode in _CONTROL_OPCODES:
            if not fin:
                raise WebSocketProtocolError("fragmented control frame")
            if size > MAX_CONTROL_PAYLOAD:
                raise WebSocketProtocolError("control frame payload over 125 bytes")
        elif self._fragment_size + size > self.max_message_size:
            raise WebSocketProtocolError(
                f"message larger than the {self.max_message_size}-byte limit",
                CLOSE_MESSAGE_TOO_BIG,
            )
