"""Server-side WebSocket wrapping, with one correction to trio-websocket's close handling.

trio-websocket 0.12 answers a close frame only when the *peer* started the close. When wsproto
itself detects a framing violation (reserved bits, bad opcodes, unmasked frames, invalid UTF-8
in a text frame) it reports a close event with the right code (1002/1007) while the connection
is still open, and trio-websocket then drops the TCP stream without sending any close frame,
so the client sees a bare EOF. RFC 6455 §7.1.7 asks the endpoint that fails the connection to
send the close frame first; :class:`_ServerConnection` does that, then defers to the library.

This module is the only place that touches trio-websocket internals (``_reader_task``,
``_get_request``, ``_handle_close_connection_event``); ``tests/daemon/test_fuzz.py`` pins the
behaviour, so a library upgrade that changes them fails loudly rather than silently.
"""

from __future__ import annotations

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import CloseConnection


class _ServerConnection(WebSocketConnection):
    async def _handle_close_connection_event(self, event: CloseConnection) -> None:
        if self.is_server and self._wsproto.state == ConnectionState.OPEN:
            # We are failing the connection (the peer did not start a close): say why first.
            try:
                await self._send(CloseConnection(code=event.code, reason=event.reason))
            except ConnectionClosed:
                pass
        await super()._handle_close_connection_event(event)


async def wrap_server_stream(
    nursery: trio.Nursery, stream: trio.abc.Stream, *, max_message_size: int
) -> WebSocketRequest:
    """Like ``trio_websocket.wrap_server_stream``, using the corrected connection class."""
    connection = _ServerConnection(
        stream, WSConnection(ConnectionType.SERVER), max_message_size=max_message_size
    )
    nursery.start_soon(connection._reader_task)
    return await connection._get_request()
