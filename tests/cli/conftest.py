"""Servers for the CLI tests: real trio Unix-socket listeners in the test's nursery.

``unix_server(handler)`` serves raw trio streams (for hand-written bytes and wsproto);
``ws_server(handler)`` wraps each stream with trio-websocket and accepts (or rejects) the
handshake before calling ``handler(ws)``. Both return the socket path. The CLI under test is
synchronous, so tests call it with ``trio.to_thread.run_sync`` while the server runs.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from functools import partial

import pytest
import trio
import trio_websocket
from dhtest.jev_rig import jev_factory

__all__ = ["jev_factory"]  # the Jev rig's fixture, for the CLI's run tests

StreamHandler = Callable[[trio.SocketStream], Awaitable[None]]
WsHandler = Callable[[trio_websocket.WebSocketConnection], Awaitable[None]]
SUBPROTOCOL = "deskhand.v1.json"


@pytest.fixture
def short_dir() -> Iterator[str]:
    """A private directory with a short path (AF_UNIX paths are limited to ~107 bytes)."""
    path = tempfile.mkdtemp(prefix="dh", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def unix_server(
    nursery: trio.Nursery, short_dir: str
) -> AsyncIterator[Callable[[StreamHandler], Awaitable[str]]]:
    """Start a raw stream server on a fresh Unix socket; returns its path."""
    count = 0

    async def start(handler: StreamHandler) -> str:
        nonlocal count
        count += 1
        path = f"{short_dir}/s{count}"
        sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
        await sock.bind(path)
        sock.listen(16)
        listener = trio.SocketListener(sock)
        await nursery.start(partial(trio.serve_listeners, handler, [listener]))
        return path

    yield start


@pytest.fixture
async def ws_server(
    unix_server: Callable[[StreamHandler], Awaitable[str]],
) -> AsyncIterator[Callable[..., Awaitable[str]]]:
    """Start a trio-websocket server; ``reject=(status, body)`` refuses every handshake."""

    async def start(
        handler: WsHandler,
        *,
        subprotocol: str | None = SUBPROTOCOL,
        reject: tuple[int, bytes] | None = None,
        max_message_size: int = 1 << 24,
        seen: list[trio_websocket.WebSocketRequest] | None = None,
    ) -> str:
        async def on_stream(stream: trio.SocketStream) -> None:
            async with trio.open_nursery() as conn_nursery:
                request = await trio_websocket.wrap_server_stream(
                    conn_nursery, stream, max_message_size=max_message_size
                )
                if seen is not None:
                    seen.append(request)
                if reject is not None:
                    await request.reject(reject[0], body=reject[1])
                    return
                ws = await request.accept(subprotocol=subprotocol)
                try:
                    await handler(ws)
                except trio_websocket.ConnectionClosed:
                    pass  # the client went away first: the normal end of most tests
                finally:
                    await ws.aclose()

        return await unix_server(on_stream)

    yield start
