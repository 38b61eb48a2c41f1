"""The client protocol on a real socket: handshake rules, both encodings, error replies."""

from __future__ import annotations

import json
import os
import socket

import msgspec
import pytest
import trio
import trio_websocket
from dhtest.daemon import DaemonProc, daemon_env, running_daemon, short_tmpdir
from dhtest.wsclient import Closed, Rejected, SyncClient

from deskhand_d import config, unixsock
from deskhand_d.app import open_services
from deskhand_d.ops.table import handler_table
from deskhand_d.protocol import Ping, Pong
from deskhand_d.rpc.server import RpcServer


def test_hello_welcome_and_status(daemon: DaemonProc) -> None:
    """hello yields a welcome; status lists this client and counts the ops."""
    c = SyncClient(daemon.socket, hello=False)
    welcome = c.call("hello", protocol=1, client={"name": "probe", "version": "9", "kind": "test"})
    assert welcome["result"]["kind"] == "welcome"
    assert welcome["result"]["protocol"] == 1 and welcome["result"]["pid"] == daemon.proc.pid
    assert len(welcome["result"]["session_id"]) == 32
    c.call("ping")
    status = c.call("status")["result"]
    assert status["socket"] == str(daemon.socket)
    assert [(x["name"], x["kind"], x["uid"]) for x in status["clients"]] == [
        ("probe", "test", os.getuid())
    ]
    assert status["clients"][0]["pid"] == os.getpid()
    assert status["ops"]["hello"]["count"] == 1 and status["ops"]["ping"]["count"] == 1
    c.close()


def test_ops_before_hello_are_refused(daemon: DaemonProc) -> None:
    """Anything but hello first gets hello_required, and the connection stays usable."""
    c = SyncClient(daemon.socket, hello=False)
    reply = c.call("status")
    assert reply["type"] == "error" and reply["error"]["code"] == "hello_required"
    assert c.call("hello", protocol=1, client={"name": "late"})["type"] == "result"
    assert c.call("ping")["type"] == "result"
    c.close()


def test_second_hello_and_wrong_protocol(daemon: DaemonProc) -> None:
    """A repeated hello is bad_request; a hello for another protocol is protocol_mismatch."""
    with SyncClient(daemon.socket) as c:
        assert c.call("hello", protocol=1, client={"name": "x"})["error"]["code"] == "bad_request"
    c = SyncClient(daemon.socket, hello=False)
    reply = c.call("hello", protocol=2, client={"name": "future"})
    assert reply["error"]["code"] == "protocol_mismatch"
    assert reply["error"]["data"] == {"daemon_protocol": 1}
    c.close()


def test_msgpack_subprotocol_round_trip(daemon: DaemonProc) -> None:
    """The msgpack subprotocol uses binary frames with the same message shapes."""
    with SyncClient(daemon.socket, "deskhand.v1.msgpack") as c:
        assert c.accepted_subprotocol == "deskhand.v1.msgpack"
        assert c.call("ping", data="ü")["result"] == {"kind": "pong", "data": "ü"}
        c.send_message('{"op":"ping","id":50}')  # text frame on a msgpack connection
        reply = msgspec.msgpack.decode(c.recv_message())
        assert reply["error"]["code"] == "bad_request" and "binary" in reply["error"]["message"]


@pytest.mark.parametrize("offered", [None, "deskhand.v2.json", "graphql-ws"])
def test_missing_or_unknown_subprotocol_rejected_with_reason(
    daemon: DaemonProc, offered: str | None
) -> None:
    """The handshake is refused with HTTP 400 and a body naming what we speak."""
    with pytest.raises(Rejected) as info:
        SyncClient(daemon.socket, offered, hello=False)
    assert info.value.status == 400
    assert b"deskhand.v1.json" in info.value.body


def test_wrong_path_rejected(daemon: DaemonProc) -> None:
    """Only /v1 is served."""
    with pytest.raises(Rejected) as info:
        SyncClient(daemon.socket, target="/v2", hello=False)
    assert info.value.status == 404 and b"/v1" in info.value.body


def test_bad_payload_keeps_connection(daemon: DaemonProc) -> None:
    """Garbage gets bad_request with a null id; the next request on the same connection works."""
    with SyncClient(daemon.socket) as c:
        c.send_message("{not json")
        reply = c.recv_obj()
        assert reply == {"type": "error", "id": None, "error": reply["error"]}
        assert reply["error"]["code"] == "bad_request"
        c.send_message(json.dumps({"op": "warp", "id": 77}))
        reply = c.recv_obj()
        assert reply["id"] == 77 and reply["error"]["code"] == "bad_request"
        assert c.call("ping", data="ok")["result"]["data"] == "ok"


def test_oversize_message_closes_1009() -> None:
    """A message above the configured limit closes the connection with 1009 only."""
    with running_daemon({"DESKHAND_MAX_MESSAGE_BYTES": "4096"}) as d:
        big = SyncClient(d.socket)
        other = SyncClient(d.socket)
        big.send_obj({"op": "ping", "id": 9, "data": "x" * 5000})
        with pytest.raises(Closed) as info:
            big.recv_obj()
        assert info.value.code == 1009
        assert other.call("ping", data="fine")["result"]["data"] == "fine"
        big.close()
        other.close()


def test_foreign_handshake_garbage_does_not_hurt(daemon: DaemonProc) -> None:
    """A client speaking nonsense instead of HTTP is dropped; others carry on."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(str(daemon.socket))
    s.sendall(b"\x00\x01garbage\r\n\r\n" * 10)
    s.recv(4096)  # an HTTP 400 or EOF, either is fine
    s.close()
    with SyncClient(daemon.socket) as c:
        assert c.call("ping")["type"] == "result"


async def test_outstanding_requests_are_bounded() -> None:
    """Past max_outstanding_requests a request gets too_many_requests; duplicates are refused."""
    root = short_tmpdir()
    env = daemon_env(root, {"DESKHAND_MAX_OUTSTANDING_REQUESTS": "2"})
    cfg = config.parse("", source="test", env=env)
    release = trio.Event()

    async def slow_ping(conn: object, req: Ping) -> Pong:
        await release.wait()
        return Pong(data=req.data)

    bound = unixsock.bind_private(cfg.socket_path(env))
    async with (
        open_services(cfg, env, socket_path=bound.path) as services,
        trio.open_nursery() as nursery,
    ):
        server = RpcServer(services, {**handler_table(), Ping: slow_ping})
        await nursery.start(server.serve, bound.sock)
        stream = await trio.open_unix_socket(str(bound.path))
        ws = await trio_websocket.wrap_client_stream(
            nursery, stream, "localhost", "/v1", subprotocols=["deskhand.v1.json"]
        )
        await ws.send_message(
            json.dumps({"op": "hello", "id": 1, "protocol": 1, "client": {"name": "t"}})
        )
        assert json.loads(await ws.get_message())["type"] == "result"
        for rid in (2, 3):
            await ws.send_message(json.dumps({"op": "ping", "id": rid}))
        await ws.send_message(json.dumps({"op": "ping", "id": 3}))
        dup = json.loads(await ws.get_message())
        assert dup["id"] == 3 and dup["error"]["code"] == "bad_request"
        await ws.send_message(json.dumps({"op": "ping", "id": 4}))
        busy = json.loads(await ws.get_message())
        assert busy["id"] == 4 and busy["error"]["code"] == "too_many_requests"
        release.set()
        ids = sorted([json.loads(await ws.get_message())["id"] for _ in range(2)])
        assert ids == [2, 3]
        await ws.aclose()
        nursery.cancel_scope.cancel()
    bound.sock.close()


async def test_handler_crash_is_internal_and_connection_survives() -> None:
    """A bug in a handler becomes an `internal` error reply without details; the client goes on."""
    root = short_tmpdir()
    env = daemon_env(root)
    cfg = config.parse("", source="test", env=env)

    async def broken(conn: object, req: Ping) -> Pong:
        if req.data == "boom":
            raise RuntimeError("secret internals")
        return Pong(data=req.data)

    bound = unixsock.bind_private(cfg.socket_path(env))
    async with (
        open_services(cfg, env, socket_path=bound.path) as services,
        trio.open_nursery() as nursery,
    ):
        server = RpcServer(services, {**handler_table(), Ping: broken})
        await nursery.start(server.serve, bound.sock)
        stream = await trio.open_unix_socket(str(bound.path))
        ws = await trio_websocket.wrap_client_stream(
            nursery, stream, "localhost", "/v1", subprotocols=["deskhand.v1.json"]
        )
        await ws.send_message(
            json.dumps({"op": "hello", "id": 1, "protocol": 1, "client": {"name": "t"}})
        )
        await ws.get_message()
        await ws.send_message(json.dumps({"op": "ping", "id": 2, "data": "boom"}))
        reply = json.loads(await ws.get_message())
        assert reply["error"]["code"] == "internal"
        assert "secret internals" not in reply["error"]["message"]
        await ws.send_message(json.dumps({"op": "ping", "id": 3, "data": "after"}))
        assert json.loads(await ws.get_message())["result"]["data"] == "after"
        await ws.aclose()
        nursery.cancel_scope.cancel()
    bound.sock.close()
