"""Helpers shared by the CLI tests that talk raw bytes to the client under test."""

from __future__ import annotations

import trio
from deskhandctl.wire.handshake import accept_value


async def read_request_head(stream: trio.SocketStream) -> dict[str, str]:
    """Read an HTTP request head from a raw stream; header names lower-cased."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise EOFError("client went away during the handshake")
        data += chunk
    lines = data.split(b"\r\n\r\n", 1)[0].decode().split("\r\n")
    headers = {"request-line": lines[0]}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return headers


def accept_head(headers: dict[str, str], *, subprotocol: str | None = "deskhand.v1.json") -> bytes:
    """A correct 101 response to the request whose headers are given."""
    lines = [
        "HTTP/1.1 101 Switching Protocols",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Accept: {accept_value(headers['sec-websocket-key'])}",
    ]
    if subprotocol is not None:
        lines.append(f"Sec-WebSocket-Protocol: {subprotocol}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()
