"""The latency floor for ``bench/run.py``: a bare trio-websocket echo server on a Unix socket.

Same stack as the daemon (trio, trio-websocket, wsproto) and the same transport, minus
everything Deskhand adds: no decoding, no request task, no encoding. It accepts any
subprotocol the client offers first and sends every message straight back.

Usage: ``python bench/echo_server.py SOCKET_PATH`` (runs until killed).
"""

from __future__ import annotations

import os
import socket
import sys

import trio
from trio_websocket import ConnectionClosed, wrap_server_stream


async def _echo(stream: trio.SocketStream) -> None:
    async with stream, trio.open_nursery() as nursery:
        request = await wrap_server_stream(nursery, stream)
        offered = request.proposed_subprotocols
        ws = await request.accept(subprotocol=offered[0] if offered else None)
        try:
            while True:
                await ws.send_message(await ws.get_message())
        except ConnectionClosed:
            pass
        nursery.cancel_scope.cancel()


async def serve(path: str) -> None:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(path)
    sock.listen(128)
    await trio.serve_listeners(_echo, [trio.SocketListener(sock)])


def main() -> None:
    path = sys.argv[1]
    if os.path.exists(path):
        os.unlink(path)
    trio.run(serve, path)


if __name__ == "__main__":
    main()
