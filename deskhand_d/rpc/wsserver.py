"""Server-side WebSocket wrapping: trio-websocket, corrected on close and bounded on memory.

Two corrections to trio-websocket 0.12, both in :class:`_ServerConnection`:

* **Close on a framing violation.** The library answers a close frame only when the *peer*
  started the close. When wsproto itself detects a violation (reserved bits, bad opcodes,
  unmasked frames, invalid UTF-8 in a text frame) it reports a close event with the right code
  (1002/1007) while the connection is still open, and the library then drops the stream without
  a close frame, so the client sees a bare EOF. RFC 6455 §7.1.7 asks the endpoint that fails the
  connection to send the close frame first; we do that, then defer to the library.
* **Memory held by partly received messages.** The library refuses a message once the bytes
  past ``max_message_size`` have arrived, and each connection may hold up to that much. Here a
  data frame whose header announces more than the message may still take is refused as soon as
  the header is read (1009), and every byte of a partly received message is taken from one
  :class:`~deskhand_d.protocol.sharedbytes.Budget` shared by all connections: a frame or a chunk
  that does not fit closes its connection with 1013 (try again later). What a connection held
  is given back when its message completes or the connection ends, and the allocator is then
  asked to return freed pages to the system (:func:`deskhand_d.rpc.memtrim.trim`), so the
  daemon's resident size goes back down after such clients leave.

The header is read between two reads of the socket: the stream is wrapped (:class:`_Guarded`)
so that before each ``receive_some`` the connection looks at wsproto's frame decoder.

This module is the only place that touches trio-websocket and wsproto internals
(``_reader_task``, ``_get_request``, ``_handle_close_connection_event``,
``_handle_message_event``, ``_message_size``, ``_recv_channel``, the frame decoder's
``header``); ``tests/daemon/test_fuzz.py`` and ``tests/daemon/test_partial_messages.py`` pin the
behaviour, so a library upgrade that changes them fails loudly rather than silently.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio
from trio_websocket import CloseReason, ConnectionClosed, WebSocketConnection, WebSocketRequest
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, TextMessage

from deskhand_d.protocol.sharedbytes import Budget
from deskhand_d.rpc import memtrim

CLOSE_TOO_BIG = 1009
CLOSE_TRY_AGAIN_LATER = 1013
TRIM_AFTER_BYTES = 1024 * 1024  # a connection that held this much gives pages back when it ends


class _Guarded(trio.abc.Stream):
    """A stream that asks ``before_read`` before each read; False ends the stream (EOF)."""

    def __init__(self, stream: trio.abc.Stream, before_read: Callable[[], Awaitable[bool]]):
        self._stream = stream
        self._before_read = before_read

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self._stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        if not await self._before_read():
            return b""
        return await self._stream.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self._stream.aclose()


def _cost(data: str | bytes | bytearray) -> int:
    """Bytes a received chunk holds: a str of non-ASCII text may take 4 per character."""
    if not isinstance(data, str):
        return len(data)
    return len(data) if data.isascii() else 4 * len(data)


class _ServerConnection(WebSocketConnection):
    def __init__(self, stream: trio.abc.Stream, *, max_message_size: int, partial: Budget) -> None:
        super().__init__(
            _Guarded(stream, self._frame_fits),
            WSConnection(ConnectionType.SERVER),
            max_message_size=max_message_size,
        )
        self._partial = partial
        self._held = 0  # bytes of the message being received, taken from ``partial``
        self._most_held = 0

    async def _handle_close_connection_event(self, event: CloseConnection) -> None:
        if self.is_server and self._wsproto.state == ConnectionState.OPEN:
            # We are failing the connection (the peer did not start a close): say why first.
            try:
                await self._send(CloseConnection(code=event.code, reason=event.reason))
            except ConnectionClosed:
                pass
        await super()._handle_close_connection_event(event)

    async def _handle_message_event(self, event: BytesMessage | TextMessage) -> None:
        size = _cost(event.data)
        if not self._partial.take(size):
            await self._refuse(
                CLOSE_TRY_AGAIN_LATER,
                "the daemon holds too many partly received messages; send yours again later",
            )
            return
        self._held += size
        self._most_held = max(self._most_held, self._held)
        await super()._handle_message_event(event)
        if self._message_size == 0:  # complete (or refused as too big): nothing held now
            self._release()

    async def _frame_fits(self) -> bool:
        """Refuse a data frame whose header announces more than may be taken; True to read on."""
        if self._wsproto.state != ConnectionState.OPEN or self._wsproto.connection is None:
            return True
        decoder = self._wsproto.connection._proto._frame_decoder
        header = decoder.header
        if header is None or header.opcode.iscontrol():
            return True
        coming = header.payload_len - decoder.payload_consumed
        if self._message_size + coming > self._max_message_size:
            await self._refuse(
                CLOSE_TOO_BIG,
                f"message too big: a frame announces {coming} more bytes, past the limit of "
                f"{self._max_message_size} bytes per message",
            )
            return False
        if not self._partial.fits(coming):
            await self._refuse(
                CLOSE_TRY_AGAIN_LATER,
                "the daemon holds too many partly received messages; send yours again later",
            )
            return False
        return True

    async def _refuse(self, code: int, reason: str) -> None:
        """Close with ``code`` and stop reading, as the library does for an oversized message."""
        self._release()
        self._message_parts = []
        self._message_size = 0
        self._close_reason = CloseReason(code, reason)
        try:
            await self._send(CloseConnection(code=code, reason=reason))
        except ConnectionClosed:
            pass
        await self._recv_channel.aclose()
        self._reader_running = False

    def _release(self) -> None:
        self._partial.give(self._held)
        self._held = 0

    async def _reader_task(self) -> None:
        try:
            await super()._reader_task()
        finally:
            self._message_parts = []
            self._release()
            if self._most_held >= TRIM_AFTER_BYTES:
                memtrim.trim()


async def abort(ws: WebSocketConnection) -> None:
    """Drop the connection without a close handshake: for a client that does not read, whose
    socket would take the close frame no sooner than its replies."""
    if isinstance(ws, _ServerConnection):
        await ws._close_stream()
        return
    with trio.move_on_after(0):  # another kind of connection: at least do not wait
        await ws.aclose()


async def wrap_server_stream(
    nursery: trio.Nursery,
    stream: trio.abc.Stream,
    *,
    max_message_size: int,
    partial: Budget,
) -> WebSocketRequest:
    """Like ``trio_websocket.wrap_server_stream``, using the corrected connection class."""
    connection = _ServerConnection(stream, max_message_size=max_message_size, partial=partial)
    nursery.start_soon(connection._reader_task)
    return await connection._get_request()
