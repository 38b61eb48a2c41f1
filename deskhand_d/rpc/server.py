"""The accept loop: peer-uid check, WebSocket handshake, subprotocol choice, connection life.

Order matters for security: the peer's uid is read from the kernel right after ``accept`` and a
foreign uid is closed before a single byte of its handshake is read. Only then is the stream
wrapped in a server-side WebSocket (trio-websocket's ``wrap_server_stream``; its
``WebSocketServer`` cannot log a Unix-socket endpoint, see docs/design.md). A handshake must
finish within a few seconds, ask for path ``/v1`` and offer one of our subprotocols; otherwise
it is rejected with an HTTP status and a body that says why.

Slots. ``max_clients`` ordinary connections are admitted; one more, the spare, is kept so that
the emergency stop gets through when they are all taken. The spare serves ``hello`` and ``stop``
only, closes right after the stop's reply (or after refusing anything else) and is closed
``SPARE_WINDOW_S`` after its upgrade unless a stop is running, so nobody can sit in it. Past
that, the upgrade is answered ``503``. A watchdog per connection frees slots that are held
without being used: no hello within ``hello_timeout_s`` of the upgrade, or no session and
nothing sent for ``idle_timeout_s``.

Running out of file descriptors (or kernel memory) makes ``accept`` fail; that is a busy moment,
not a reason to stop: the loop logs it (at most every ``ACCEPT_LOG_EVERY_S``) and retries after
``ACCEPT_BACKOFF_S``, as trio's own ``serve_listeners`` does, while the connections wait in the
listen backlog.
"""

from __future__ import annotations

import errno
import math
import os
import socket
from dataclasses import dataclass

import structlog
import trio
from trio_websocket import ConnectionClosed, WebSocketRequest

from deskhand_d.errors import TooManyClients
from deskhand_d.ops.context import Handler, RequestContext
from deskhand_d.ops.services import Services
from deskhand_d.ops.table import handler_table
from deskhand_d.protocol import (
    SUBPROTOCOLS,
    WS_PATH,
    Codec,
    Hello,
    Request,
    ResultBody,
    Stop,
    pick_subprotocol,
)
from deskhand_d.protocol.sharedbytes import partial_messages_budget, queued_replies_budget
from deskhand_d.rpc.connection import Connection
from deskhand_d.rpc.wsserver import wrap_server_stream
from deskhand_d.unixsock import PeerCred, peer_credentials

log = structlog.get_logger("deskhand.rpc")

HANDSHAKE_TIMEOUT_S = 10.0
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
CLOSE_POLICY_VIOLATION = 1008
CLOSE_TRY_AGAIN_LATER = 1013

SPARE_SLOTS = 1
# Long enough for any client to say hello and send stop, short enough that a client sitting in
# the spare slot (by mistake or on purpose) frees it again almost at once.
SPARE_WINDOW_S = 2.0

# accept(2) errors that mean "the process or the system is out of something right now".
ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
ACCEPT_BACKOFF_S = 0.1  # trio's serve_listeners waits the same
ACCEPT_LOG_EVERY_S = 10.0


@dataclass(slots=True)
class AcceptTrouble:
    """When to log accept failures: the first at once, then at most one line per ``every_s``
    (with the count since the last line), and one line when accepting works again. Pure."""

    every_s: float
    unlogged: int = 0  # failures since the last line
    total: int = 0  # failures since the trouble began
    began: float | None = None
    logged_at: float = -math.inf

    def failed(self, now: float) -> int | None:
        """Count a failure; the number of failures to report now, or None to stay quiet."""
        if self.began is None:
            self.began = now
        self.total += 1
        self.unlogged += 1
        if now - self.logged_at < self.every_s:
            return None
        self.logged_at = now
        reported, self.unlogged = self.unlogged, 0
        return reported

    def accepted(self, now: float) -> tuple[int, float] | None:
        """Count a success; (failures, seconds) if it ends a spell of trouble, else None."""
        if self.began is None:
            return None
        spell = (self.total, now - self.began)
        self.unlogged = self.total = 0
        self.began = None
        self.logged_at = -math.inf
        return spell


class RpcServer:
    def __init__(self, services: Services, handlers: dict[type, Handler] | None = None) -> None:
        self.services = services
        self.hub = services.hub
        self.config = services.config
        self.handlers = handler_table() if handlers is None else dict(handlers)
        self._my_uid = os.getuid()
        self._ordinary = 0  # admitted past the handshake, counted before the upgrade's await
        self._spare = 0
        spare: dict[type, Handler] = dict.fromkeys(self.handlers, self._refuse_on_spare)
        spare[Hello] = self.handlers[Hello]
        if Stop in self.handlers:
            spare[Stop] = self._stop_on_spare
        self._spare_handlers = spare
        self._accept_trouble = AcceptTrouble(ACCEPT_LOG_EVERY_S)
        # What all connections together may hold (deskhand_d/protocol/sharedbytes.py).
        self._partial = partial_messages_budget(self.config.daemon.max_message_bytes)
        self._replies = queued_replies_budget()

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
                try:
                    stream = await listener.accept()
                except OSError as exc:
                    if exc.errno not in ACCEPT_CAPACITY_ERRNOS:
                        raise
                    self._note_accept_failure(exc)
                    await trio.sleep(ACCEPT_BACKOFF_S)
                    continue
                spell = self._accept_trouble.accepted(trio.current_time())
                if spell is not None:
                    log.warning("accept.recovered", failures=spell[0], seconds=round(spell[1], 1))
                nursery.start_soon(self._on_stream, stream)

    def _note_accept_failure(self, exc: OSError) -> None:
        failures = self._accept_trouble.failed(trio.current_time())
        if failures is None:
            return
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        log.warning(
            "accept.out_of_resources",
            error=name,
            detail=exc.strerror,
            failures=failures,
            retry_every_s=ACCEPT_BACKOFF_S,
            clients=len(self.hub.connections),
            hint="new connections wait in the listen backlog until descriptors free up; "
            "raise LimitNOFILE (ulimit -n) or lower daemon.max_clients",
        )

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
        try:
            await self._serve_websocket(stream, peer)
        except Exception:
            # Whatever a client does must not reach the accept loop (it would stop the daemon).
            log.exception("connection.crashed", pid=peer.pid)
        finally:
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _serve_websocket(self, stream: trio.SocketStream, peer: PeerCred) -> None:
        cfg = self.config.daemon
        async with trio.open_nursery() as nursery:
            with trio.move_on_after(HANDSHAKE_TIMEOUT_S) as handshake:
                request = await wrap_server_stream(
                    nursery, stream, max_message_size=cfg.max_message_bytes, partial=self._partial
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
            spare = self._ordinary >= cfg.max_clients
            if spare and self._spare >= SPARE_SLOTS:
                log.warning("client.refused_busy", pid=peer.pid, clients=len(self.hub.connections))
                await request.reject(503, body=self._busy_text().encode())
                nursery.cancel_scope.cancel()
                return
            # Counted before the upgrade's await, so two upgrades at once cannot both take
            # the last slot.
            if spare:
                self._spare += 1
            else:
                self._ordinary += 1
            try:
                await self._serve_upgraded(nursery, request, chosen, peer, spare=spare)
            finally:
                if spare:
                    self._spare -= 1
                else:
                    self._ordinary -= 1

    async def _serve_upgraded(
        self,
        nursery: trio.Nursery,
        request: WebSocketRequest,
        chosen: str,
        peer: PeerCred,
        *,
        spare: bool,
    ) -> None:
        ws = await request.accept(subprotocol=chosen)
        conn = Connection(
            services=self.services,
            ws=ws,
            codec=Codec(chosen),
            peer=peer,
            handlers=self._spare_handlers if spare else self.handlers,
            replies_budget=self._replies,
        )
        self.hub.register(conn)
        log.info(
            "client.connected", conn=conn.conn_id, pid=peer.pid, subprotocol=chosen, spare=spare
        )
        try:
            nursery.start_soon(self._watch_spare if spare else self._watch, conn)
            await conn.run()
        finally:
            self.services.depart(conn)
            log.info("client.disconnected", conn=conn.conn_id, pid=peer.pid)
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                try:
                    await ws.aclose()
                except ConnectionClosed:
                    pass
            nursery.cancel_scope.cancel()  # also ends the connection's watchdog

    async def _watch(self, conn: Connection) -> None:
        """Close ``conn`` once it holds its slot without using it (see the module docstring)."""
        cfg = self.config.daemon
        while True:
            now = trio.current_time()
            has_session = conn.session is not None
            if conn.client is None:
                deadline = conn.connected_at + cfg.hello_timeout_s
                if now >= deadline:
                    log.info("client.no_hello", conn=conn.conn_id, pid=conn.peer.pid)
                    conn.request_close(
                        CLOSE_POLICY_VIOLATION,
                        f"no hello within {cfg.hello_timeout_s:g} s of connecting; "
                        "send hello first",
                    )
                    return
                # Look again sooner if hello can come and the session go before the deadline.
                deadline = min(deadline, now + cfg.idle_timeout_s)
            elif not has_session and not conn.request_scopes:
                deadline = conn.last_message_at + cfg.idle_timeout_s
                if now >= deadline:
                    log.info("client.idle", conn=conn.conn_id, pid=conn.peer.pid)
                    conn.request_close(
                        CLOSE_NORMAL,
                        f"idle for {cfg.idle_timeout_s:g} s without a session; "
                        "reconnect to start one",
                    )
                    return
            else:
                # Nothing to enforce now; a session can still be closed later, so look again.
                deadline = now + cfg.idle_timeout_s
            await trio.sleep_until(deadline)

    async def _watch_spare(self, conn: Connection) -> None:
        """Free the spare slot if no stop is under way ``SPARE_WINDOW_S`` after the upgrade."""
        await trio.sleep_until(conn.connected_at + SPARE_WINDOW_S)
        if conn.request_scopes:
            return  # a stop is running; the connection closes after its reply
        log.info("client.spare_unused", conn=conn.conn_id, pid=conn.peer.pid)
        conn.request_close(
            CLOSE_TRY_AGAIN_LATER,
            f"this spare connection serves only the emergency stop, and none came within "
            f"{SPARE_WINDOW_S:g} s",
        )

    async def _stop_on_spare(self, ctx: RequestContext, req: Request) -> ResultBody:
        ctx.after_reply(close=(CLOSE_NORMAL, "emergency stop done; the spare slot is free again"))
        return await self.handlers[Stop](ctx, req)

    async def _refuse_on_spare(self, ctx: RequestContext, req: Request) -> ResultBody:
        ctx.after_reply(close=(CLOSE_TRY_AGAIN_LATER, "too many connections"))
        raise TooManyClients(
            f"too many connections: all {self.config.daemon.max_clients} client slots are "
            "taken, and this one is the spare kept for the emergency stop (`stop` only). Close "
            "clients you no longer need, or try again shortly"
        )

    def _busy_text(self) -> str:
        cfg = self.config.daemon
        return (
            f"too many connections: all {cfg.max_clients} client slots and the spare kept for "
            "the emergency stop are taken. Close clients you no longer need, or try again "
            f"shortly (connections that never say hello are closed after "
            f"{cfg.hello_timeout_s:g} s)\n"
        )

    async def close_all(self, reason: str) -> None:
        """Send every client a going-away close and wait until all have gone (caller bounds it)."""
        for conn in list(self.hub.connections.values()):
            conn.request_close(CLOSE_GOING_AWAY, reason)
        await self.hub.wait_no_connections()
