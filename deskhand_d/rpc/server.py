"""The accept loop: peer-uid check, WebSocket handshake, subprotocol choice, connection life.

Order matters for security: the peer's uid is read from the kernel right after ``accept`` and a
foreign uid is closed before a single byte of its handshake is read. Only then is the stream
wrapped in a server-side WebSocket (trio-websocket's ``wrap_server_stream``; its
``WebSocketServer`` cannot log a Unix-socket endpoint, see docs/design.md). A handshake must
finish within a few seconds, ask for path ``/v1`` and offer one of our subprotocols; otherwise
it is rejected with an HTTP status and a body that says why.
"""

from __future__ import annotations

import os
import socket

import structlog
import trio
from trio_websocket import ConnectionClosed

from deskhand_d.protocol import SUBPROTOCOLS, WS_PATH, Codec, pick_subprotocol
from deskhand_d.rpc.connection import Connection
from deskhand_d.rpc.handlers import HANDLERS, Handler
from deskhand_d.rpc.hub import Hub
from deskhand_d.rpc.wsserver import wrap_server_stream
from deskhand_d.unixsock import PeerCred, peer_credentials

log = structlog.get_logger("deskhand.rpc")

HANDSHAKE_TIMEOUT_S = 10.0
CLOSE_GOING_AWAY = 1001


class RpcServer:
    def __init__(self, hub: Hub, handlers: dict[type, Handler] | None = None) -> None:
        self.hub = hub
        self.handlers = dict(HANDLERS if handlers is None else handlers)
        self._my_uid = os.getuid()

    async def serve(
        self,
        listener_sock: socket.socket,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Accept connections until cancelled. Never returns on its own."""
        tsock = trio.socket.from_stdlib_socket(listener_sock)
        listener = trio.SocketListener(tsock)
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                stream = await listener.accept()
                nursery.start_soon(self._on_stream, stream)

    def _peer(self, stream: trio.SocketStream) -> PeerCred | None:
        try:
            return peer_credentials(stream.socket)  # type: ignore[arg-type]
        except OSError as exc:
            log.warning("peer.unknown", error=exc.strerror)
            return None

    async def _on_stream(self, stream: trio.SocketStream) -> None:
        peer = self._peer(stream)
        if peer is None or peer.uid != self._my_uid:
            # Closed before reading anything: another user learns nothing from us.
            log.warning(
                "peer.refused",
                uid=None if peer is None else peer.uid,
                pid=None if peer is None else peer.pid,
            )
            await stream.aclose()
            return
        if len(self.hub.connections) >= self.hub.config.daemon.max_clients:
            log.warning("peer.too_many_clients", pid=peer.pid)
        try:
            await self._serve_websocket(stream, peer)
        except Exception:
            # Whatever a client does must not reach the accept loop (it would stop the daemon).
            log.exception("connection.crashed", pid=peer.pid)
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _serve_websocket(self, stream: trio.SocketStream, peer: PeerCred) -> None:
        cfg = self.hub.config.daemon
        async with trio.open_nursery() as nursery:
            with trio.move_on_after(HANDSHAKE_TIMEOUT_S) as handshake:
                request = await wrap_server_stream(
                    nursery, stream, max_message_size=cfg.max_message_bytes
                )
            if handshake.cancelled_caught:
                log.info("handshake.timeout", pid=peer.pid)
                nursery.cancel_scope.cancel()
                return
            if request.path.split("?", 1)[0] != WS_PATH:
                await request.reject(404, body=f"unknown path; connect to {WS_PATH}\n".encode())
                nursery.cancel_scope.cancel()
                return
            chosen = pick_subprotocol(request.proposed_subprotocols)
            if chosen is None:
                body = (
                    "no supported WebSocket subprotocol offered; this daemon speaks "
                    + " and ".join(SUBPROTOCOLS)
                    + "\n"
                )
                await request.reject(400, body=body.encode())
                nursery.cancel_scope.cancel()
                return
            if len(self.hub.connections) >= cfg.max_clients:
                await request.reject(503, body=b"too many clients are connected; try later\n")
                nursery.cancel_scope.cancel()
                return
            ws = await request.accept(subprotocol=chosen)
            conn = Connection(
                hub=self.hub, ws=ws, codec=Codec(chosen), peer=peer, handlers=self.handlers
            )
            self.hub.register(conn)
            log.info("client.connected", conn=conn.conn_id, pid=peer.pid, subprotocol=chosen)
            try:
                await conn.run()
            finally:
                self.hub.unregister(conn)
                log.info("client.disconnected", conn=conn.conn_id, pid=peer.pid)
                with trio.CancelScope(shield=True), trio.move_on_after(1):
                    try:
                        await ws.aclose()
                    except ConnectionClosed:
                        pass
                nursery.cancel_scope.cancel()

    async def close_all(self, reason: str) -> None:
        """Send every client a going-away close and wait until all have gone (caller bounds it)."""
        for conn in list(self.hub.connections.values()):
            conn.request_close(CLOSE_GOING_AWAY, reason)
        await self.hub.wait_no_connections()
