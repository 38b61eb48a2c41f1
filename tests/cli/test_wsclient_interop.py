"""The CLI's WebSocket client against real servers on real Unix sockets.

trio-websocket (the daemon's own library) and bare wsproto play the server; a few tests write
raw bytes to exercise what those libraries will not send (bad accept values, masked frames).
The client is synchronous, so it runs in a worker thread while the server runs in trio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
import trio
import trio_websocket
from cli_servers import accept_head, read_request_head
from deskhandctl.wire.client import (
    ClosedBeforeHandshake,
    ConnectionClosed,
    ConnectionLost,
    WebSocket,
    connect_unix,
)
from deskhandctl.wire.frames import (
    OP_CLOSE,
    OP_TEXT,
    Close,
    FrameReader,
    WebSocketProtocolError,
    encode_frame,
)
from deskhandctl.wire.handshake import HandshakeError, HandshakeRejected
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, Pong, Request, TextMessage

T = TypeVar("T")
SUBPROTOCOL = "deskhand.v1.json"
WsStart = Callable[..., Awaitable[str]]
RawStart = Callable[[Callable[[trio.SocketStream], Awaitable[None]]], Awaitable[str]]


def open_ws(path: str, *, timeout: float = 5.0, max_message_size: int = 1 << 24) -> WebSocket:
    return WebSocket.open(
        connect_unix(path, timeout=timeout),
        target="/v1",
        subprotocol=SUBPROTOCOL,
        timeout=timeout,
        max_message_size=max_message_size,
    )


async def in_thread(fn: Callable[[], T]) -> T:
    with trio.fail_after(20):
        return await trio.to_thread.run_sync(fn)


async def test_handshake_and_echo(ws_server: WsStart) -> None:
    """Handshake on /v1 with our subprotocol; text and binary messages echo back intact."""
    seen: list[trio_websocket.WebSocketRequest] = []

    async def echo(ws: trio_websocket.WebSocketConnection) -> None:
        while True:
            await ws.send_message(await ws.get_message())

    path = await ws_server(echo, seen=seen)

    def client() -> tuple[str | bytes, str | bytes, Close, str | None]:
        ws = open_ws(path)
        ws.send("héllo")
        text = ws.receive()
        ws.send(b"\x00\xff")
        data = ws.receive()
        return text, data, ws.close(), ws.subprotocol

    text, data, close, chosen = await in_thread(client)
    assert (text, data, chosen) == ("héllo", b"\x00\xff", SUBPROTOCOL)
    assert close.code == 1000
    assert seen[0].path == "/v1"
    assert seen[0].proposed_subprotocols == (SUBPROTOCOL,)


async def test_large_messages_both_ways(ws_server: WsStart) -> None:
    """Messages needing 16- and 64-bit lengths cross in both directions."""

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        await ws.send_message("é" * 150_000)  # 300 000 bytes
        got = await ws.get_message()
        await ws.send_message(str(len(got)))

    path = await ws_server(handler)

    def client() -> tuple[str | bytes, str | bytes]:
        ws = open_ws(path)
        big = ws.receive()
        ws.send(b"z" * 70_000)
        size = ws.receive()
        ws.close()
        return big, size

    big, size = await in_thread(client)
    assert big == "é" * 150_000
    assert size == "70000"


async def test_fragmented_message_with_ping_in_between(unix_server: RawStart) -> None:
    """A message in three fragments with a ping among them: one message out, ping answered."""
    server_saw: list[object] = []

    async def handler(stream: trio.SocketStream) -> None:
        conn = WSConnection(ConnectionType.SERVER)
        while not any(isinstance(e, Request) for e in server_saw):
            conn.receive_data(await stream.receive_some(4096))
            server_saw.extend(conn.events())
        await stream.send_all(conn.send(AcceptConnection(subprotocol=SUBPROTOCOL)))
        await stream.send_all(conn.send(TextMessage(data="frag", message_finished=False)))
        await stream.send_all(conn.send(Ping(payload=b"mid")))
        await stream.send_all(conn.send(TextMessage(data="men", message_finished=False)))
        await stream.send_all(conn.send(TextMessage(data="ted", message_finished=True)))
        while not any(isinstance(e, CloseConnection) for e in server_saw):
            data = await stream.receive_some(4096)
            if not data:
                return
            conn.receive_data(data)
            server_saw.extend(conn.events())
        await stream.send_all(conn.send(CloseConnection(code=1000)))

    path = await unix_server(handler)

    def client() -> tuple[str | bytes, Close]:
        ws = open_ws(path)
        return ws.receive(), ws.close()

    message, close = await in_thread(client)
    assert message == "fragmented"
    assert close.code == 1000
    pongs = [e for e in server_saw if isinstance(e, Pong)]
    assert [p.payload for p in pongs] == [b"mid"]


async def test_ping_from_trio_websocket_is_answered(ws_server: WsStart) -> None:
    """trio-websocket's ping() returns only once our pong arrives."""
    pinged = trio.Event()

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        await ws.ping(b"beat")  # waits for the matching pong
        pinged.set()
        await ws.send_message("after the ping")
        await ws.get_message()

    path = await ws_server(handler)

    def client() -> str | bytes:
        ws = open_ws(path)
        message = ws.receive()
        ws.close()
        return message

    assert await in_thread(client) == "after the ping"
    assert pinged.is_set()


async def test_server_close_code_and_reason(ws_server: WsStart) -> None:
    """A close from the server surfaces its code and reason, and is answered."""

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        await ws.aclose(code=4001, reason="bye now")

    path = await ws_server(handler)

    def client() -> ConnectionClosed:
        ws = open_ws(path)
        with pytest.raises(ConnectionClosed) as info:
            ws.receive()
        assert ws.close() == Close(4001, "bye now")  # close() after the fact reports it
        return info.value

    closed = await in_thread(client)
    assert (closed.code, closed.reason) == (4001, "bye now")


async def test_client_close_handshake(ws_server: WsStart) -> None:
    """Our close reaches the server with its code and reason; the server's answer comes back."""
    server_close: list[trio_websocket.CloseReason] = []

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        with pytest.raises(trio_websocket.ConnectionClosed) as info:
            await ws.get_message()
        server_close.append(info.value.reason)

    path = await ws_server(handler)
    close = await in_thread(lambda: open_ws(path).close(1000, "done here"))
    assert close.code == 1000
    assert (server_close[0].code, server_close[0].reason) == (1000, "done here")


async def test_missing_subprotocol_fails_the_handshake(ws_server: WsStart) -> None:
    """A server that accepts without choosing our subprotocol is refused."""
    path = await ws_server(lambda ws: trio.sleep_forever(), subprotocol=None)
    with pytest.raises(HandshakeError, match="did not agree to subprotocol"):
        await in_thread(lambda: open_ws(path))


async def test_rejected_handshake_reports_status_and_body(ws_server: WsStart) -> None:
    """A 403 with a body surfaces both the status and the server's own words."""
    path = await ws_server(lambda ws: trio.sleep(0), reject=(403, b"only the owner may connect"))
    with pytest.raises(HandshakeRejected) as info:
        await in_thread(lambda: open_ws(path))
    assert info.value.status == 403
    assert info.value.body == "only the owner may connect"
    assert "403" in str(info.value) and "only the owner" in str(info.value)


async def test_wrong_accept_value_fails_the_handshake(unix_server: RawStart) -> None:
    """A 101 whose Sec-WebSocket-Accept does not derive from our key is refused."""

    async def handler(stream: trio.SocketStream) -> None:
        headers = await read_request_head(stream)
        headers["sec-websocket-key"] = "dGhlIHNhbXBsZSBub25jZQ=="  # answer a different key
        await stream.send_all(accept_head(headers))
        await trio.sleep(1)

    path = await unix_server(handler)
    with pytest.raises(HandshakeError, match="does not match the key"):
        await in_thread(lambda: open_ws(path))


async def test_wrong_subprotocol_fails_the_handshake(unix_server: RawStart) -> None:
    """A server that picks a subprotocol we did not offer is refused."""

    async def handler(stream: trio.SocketStream) -> None:
        await stream.send_all(accept_head(await read_request_head(stream), subprotocol="x.v9"))
        await trio.sleep(1)

    path = await unix_server(handler)
    with pytest.raises(HandshakeError, match=r"chose subprotocol 'x\.v9'"):
        await in_thread(lambda: open_ws(path))


async def test_frame_in_the_same_packet_as_the_101(unix_server: RawStart) -> None:
    """Frame bytes that arrive together with the handshake response are not lost."""

    async def handler(stream: trio.SocketStream) -> None:
        head = accept_head(await read_request_head(stream))
        await stream.send_all(head + encode_frame(OP_TEXT, b"early"))
        await trio.sleep(1)

    path = await unix_server(handler)

    def client() -> str | bytes:
        ws = open_ws(path)
        message = ws.receive()
        ws.abort()
        return message

    assert await in_thread(client) == "early"


async def test_oversize_message_is_refused_with_1009(ws_server: WsStart) -> None:
    """Past max_message_size the client fails and tells the server with close code 1009."""
    server_close: list[trio_websocket.CloseReason] = []

    async def handler(ws: trio_websocket.WebSocketConnection) -> None:
        await ws.send_message(b"x" * 5000)
        with pytest.raises(trio_websocket.ConnectionClosed) as info:
            await ws.get_message()
        server_close.append(info.value.reason)

    path = await ws_server(handler)

    def client() -> None:
        ws = open_ws(path, max_message_size=1000)
        ws.receive()

    with pytest.raises(WebSocketProtocolError, match="1000-byte limit") as info:
        await in_thread(client)
    assert info.value.close_code == 1009
    with trio.fail_after(5):
        while not server_close:
            await trio.sleep(0.01)
    assert server_close[0].code == 1009


async def test_masked_frame_from_server_is_a_protocol_error(unix_server: RawStart) -> None:
    """A masked server frame fails the connection; our close frame carries 1002."""
    from_client: list[Close] = []

    async def handler(stream: trio.SocketStream) -> None:
        await stream.send_all(accept_head(await read_request_head(stream)))
        await stream.send_all(encode_frame(OP_TEXT, b"hidden", mask=b"\x01\x02\x03\x04"))
        reader = FrameReader(masked=True)
        while not from_client:
            data = await stream.receive_some(4096)
            if not data:
                return
            reader.receive_data(data)
            from_client.extend(e for e in reader.events() if isinstance(e, Close))

    path = await unix_server(handler)
    with pytest.raises(WebSocketProtocolError, match="unexpected masked frame"):
        await in_thread(lambda: open_ws(path).receive())
    with trio.fail_after(5):
        while not from_client:
            await trio.sleep(0.01)
    assert from_client[0].code == 1002


async def test_hangup_before_the_handshake(unix_server: RawStart) -> None:
    """A server that reads the request and hangs up is told apart from other failures."""

    async def handler(stream: trio.SocketStream) -> None:
        await read_request_head(stream)
        await stream.aclose()

    path = await unix_server(handler)
    with pytest.raises(ClosedBeforeHandshake):
        await in_thread(lambda: open_ws(path))


async def test_hangup_without_close_frame(unix_server: RawStart) -> None:
    """EOF after the handshake, without a close frame, is a lost connection."""

    async def handler(stream: trio.SocketStream) -> None:
        await stream.send_all(accept_head(await read_request_head(stream)))
        await stream.aclose()

    path = await unix_server(handler)
    with pytest.raises(ConnectionLost) as info:
        await in_thread(lambda: open_ws(path).receive())
    assert not isinstance(info.value, ClosedBeforeHandshake)


@pytest.mark.slow
async def test_silent_server_times_out_the_handshake(unix_server: RawStart) -> None:
    """A server that never answers the Upgrade request trips the timeout."""

    async def handler(stream: trio.SocketStream) -> None:
        await read_request_head(stream)
        await trio.sleep(10)

    path = await unix_server(handler)
    started = trio.current_time()
    with pytest.raises(TimeoutError):
        await in_thread(lambda: open_ws(path, timeout=0.3))
    assert trio.current_time() - started < 3


@pytest.mark.slow
async def test_silent_server_times_out_a_receive(ws_server: WsStart) -> None:
    """After the handshake, a reply that never comes trips the timeout."""
    path = await ws_server(lambda ws: trio.sleep(10))

    def client() -> None:
        ws = open_ws(path, timeout=0.3)
        try:
            ws.receive()
        finally:
            ws.abort()

    with pytest.raises(TimeoutError):
        await in_thread(client)


async def test_close_frame_without_code(unix_server: RawStart) -> None:
    """An empty close frame is reported as 1005 and answered with 1000."""
    from_client: list[bytes] = []

    async def handler(stream: trio.SocketStream) -> None:
        await stream.send_all(accept_head(await read_request_head(stream)))
        await stream.send_all(encode_frame(OP_CLOSE, b""))
        from_client.append(await stream.receive_some(4096))
        await stream.aclose()

    path = await unix_server(handler)
    with pytest.raises(ConnectionClosed) as info:
        await in_thread(lambda: open_ws(path).receive())
    assert info.value.code == 1005
    reader = FrameReader(masked=True)
    reader.receive_data(from_client[0])
    assert list(reader.events()) == [Close(1000, "")]


@pytest.mark.slow
async def test_rejection_without_length_does_not_wait_for_the_timeout(
    unix_server: RawStart,
) -> None:
    """A refusal with no Content-Length that keeps the socket open is reported promptly."""

    async def handler(stream: trio.SocketStream) -> None:
        await read_request_head(stream)
        await stream.send_all(b"HTTP/1.1 403 Forbidden\r\n\r\nnot for you")
        await trio.sleep(10)

    path = await unix_server(handler)
    started = trio.current_time()
    with pytest.raises(HandshakeRejected) as info:
        await in_thread(lambda: open_ws(path, timeout=5))
    assert trio.current_time() - started < 2
    assert (info.value.status, info.value.body) == (403, "not for you")


async def test_a_send_that_times_out_part_way_loses_the_connection(unix_server: RawStart) -> None:
    """A server that stops reading: a message larger than the socket's buffers cannot be
    written within the timeout, so part of its frame went out. The stream is then corrupt,
    so the client closes it and says the connection is lost, for that send and every call
    after it (never a bare TimeoutError, never a second frame after half of the first)."""

    async def handler(stream: trio.SocketStream) -> None:
        conn = WSConnection(ConnectionType.SERVER)
        seen: list[object] = []
        while not any(isinstance(e, Request) for e in seen):
            conn.receive_data(await stream.receive_some(4096))
            seen.extend(conn.events())
        await stream.send_all(conn.send(AcceptConnection(subprotocol=SUBPROTOCOL)))
        await trio.sleep_forever()  # never reads again

    path = await unix_server(handler)

    def client() -> list[str]:
        ws = open_ws(path, timeout=0.5)
        said = []
        for call in (lambda: ws.send("x" * (8 << 20)), lambda: ws.send("ping"), ws.receive):
            with pytest.raises(ConnectionLost) as lost:
                call()
            said.append(str(lost.value))
        ws.close()
        return said

    said = await in_thread(client)
    assert said == ["sending timed out part-way through a frame; the connection was closed"] * 3
