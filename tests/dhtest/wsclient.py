"""A small synchronous WebSocket client for tests, built on wsproto over a blocking socket.

Independent from the CLI's own codec on purpose, so the daemon is checked against a second
implementation. ``send_raw`` writes bytes straight to the socket for framing-violation tests.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import msgspec
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Message,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)


class Closed(Exception):
    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"closed {code} {reason}")
        self.code = code
        self.reason = reason


class Rejected(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"rejected {status}: {body!r}")
        self.status = status
        self.body = body


class SyncClient:
    def __init__(
        self,
        path: Path | str,
        subprotocol: str | None = "deskhand.v1.json",
        *,
        target: str = "/v1",
        timeout: float = 10.0,
        hello: bool = True,
        name: str = "test",
    ) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(os.fspath(path))
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.subprotocol = subprotocol
        self._next_id = 1
        self._pending: list[Any] = []
        self._parts: list[str | bytes] = []
        protos = [subprotocol] if subprotocol else []
        try:
            self.sock.sendall(
                self.ws.send(Request(host="localhost", target=target, subprotocols=protos))
            )
            self._handshake()
        except BaseException:
            self.sock.close()
            raise
        if hello:
            reply = self.call("hello", protocol=1, client={"name": name, "kind": "test"})
            assert reply["type"] == "result", reply

    def _handshake(self) -> None:
        body = b""
        status = 0
        while True:
            data = self.sock.recv(65536)
            if not data:
                raise Closed(None, "eof during handshake")
            self.ws.receive_data(data)
            for ev in self.ws.events():
                if isinstance(ev, AcceptConnection):
                    self.accepted_subprotocol = ev.subprotocol
                    return
                if isinstance(ev, RejectConnection):
                    status = ev.status_code
                    if not ev.has_body:
                        raise Rejected(status, b"")
                if isinstance(ev, RejectData):
                    body += ev.data
                    if ev.body_finished:
                        raise Rejected(status, body)

    def encode(self, obj: Any) -> str | bytes:
        if self.subprotocol == "deskhand.v1.msgpack":
            return msgspec.msgpack.encode(obj)
        return json.dumps(obj)

    def send_obj(self, obj: Any) -> None:
        self.send_message(self.encode(obj))

    def send_message(self, data: str | bytes) -> None:
        self.sock.sendall(self.ws.send(Message(data=data)))

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_message(self) -> str | bytes:
        while True:
            for ev in self.ws.events():
                if isinstance(ev, TextMessage | BytesMessage):
                    self._parts.append(ev.data)
                    if ev.message_finished:
                        parts, self._parts = self._parts, []
                        if isinstance(parts[0], str):
                            return "".join(p for p in parts if isinstance(p, str))
                        return b"".join(p for p in parts if isinstance(p, bytes))
                elif isinstance(ev, Ping):
                    self.sock.sendall(self.ws.send(ev.response()))
                elif isinstance(ev, CloseConnection):
                    try:
                        self.sock.sendall(self.ws.send(ev.response()))
                    except Exception:
                        pass
                    raise Closed(ev.code, ev.reason or "")
            data = self.sock.recv(65536)
            if not data:
                raise Closed(None, "eof")
            self.ws.receive_data(data)

    def recv_obj(self) -> Any:
        msg = self.recv_message()
        if isinstance(msg, bytes):
            return msgspec.msgpack.decode(msg)
        return json.loads(msg)

    def call(self, op: str, **fields: Any) -> Any:
        rid = self._next_id
        self._next_id += 1
        self.send_obj({"op": op, "id": rid, **fields})
        while True:
            reply = self.recv_obj()
            if reply.get("type") == "event":
                self._pending.append(reply)
                continue
            assert reply.get("id") == rid, (rid, reply)
            return reply

    def close(self) -> None:
        try:
            self.sock.sendall(self.ws.send(CloseConnection(code=1000)))
        except Exception:
            pass
        self.sock.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
