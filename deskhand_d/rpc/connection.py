"""One client connection: read requests, run them concurrently (bounded), send replies.

Theory of operation. A connection has one reader loop (this module's :meth:`Connection.run`)
and a nursery of request tasks. Each message is decoded into a request; a decode failure gets a
``bad_request`` reply and the loop goes on, so one bad payload never costs the client its
connection. Framing and size violations are handled below us by trio-websocket/wsproto, which
close with the proper WebSocket code. Requests run concurrently up to
``max_outstanding_requests``; past that the request is refused with ``too_many_requests``
rather than queued, and ``cancel``, ``answer`` and ``stop`` always get through, so a client
whose requests wait on the person or a slow op can still free itself.
Replies and events never wait on the client: they are queued in the connection's
:class:`~deskhand_d.rpc.outbox.Outbox` (bounded) and written in order by its one writer task,
so a refusal costs no task of its own, and a client that stops reading is dropped (no close
handshake: it would not read that either) rather than buffered for. Nothing raised by a request
escapes the connection: a ``DeskhandError`` becomes its code, anything else becomes
``internal`` with the traceback in the log only.

Each request runs its op with a :class:`~deskhand_d.ops.context.ConnectionRequest` on its
connection: the op reads the session and client through it and never touches the WebSocket.
"""

from __future__ import annotations

from typing import Any

import structlog
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from deskhand_d.errors import (
    BadRequest,
    DeskhandError,
    HelloRequired,
    InternalError,
    RequestCancelled,
    ShuttingDown,
    TooManyRequests,
)
from deskhand_d.native.sessions import Session
from deskhand_d.ops.context import CancelReport, ConnectionRequest, Handler
from deskhand_d.ops.services import Services
from deskhand_d.protocol import (
    Answer,
    Cancel,
    ClientInfo,
    Codec,
    Error,
    ErrorBody,
    Event,
    EventBody,
    GrantsList,
    GrantsRevoke,
    Hello,
    Ping,
    Request,
    Result,
    ServerMessage,
    Status,
    Stop,
    Unlock,
)
from deskhand_d.protocol.sharedbytes import Budget
from deskhand_d.rpc.outbox import Backlog, Outbox
from deskhand_d.rpc.wsserver import abort
from deskhand_d.unixsock import PeerCred

log = structlog.get_logger("deskhand.rpc")

CLOSE_NOT_READING = 1008  # policy violation: the client sends but does not read; the
# reason is logged, and sent only if the socket has room (it is dropped, not closed in turn)


# The ops that still work while the emergency stop is engaged.
LOCK_EXEMPT: frozenset[type] = frozenset(
    {Hello, Status, Ping, Stop, Unlock, GrantsList, GrantsRevoke}  # revoking always works
)


# The ops that get through when the connection has max_outstanding_requests in progress: they
# are quick, and they are how a client frees itself (answering the question its requests wait
# on, cancelling one) or stops everything.
ALWAYS_ROOM: frozenset[type] = frozenset({Answer, Cancel, Stop})


def op_name(request: Request) -> str:
    tag = type(request).__struct_config__.tag
    return tag if isinstance(tag, str) else type(request).__name__


class Connection:
    def __init__(
        self,
        *,
        services: Services,
        ws: WebSocketConnection,
        codec: Codec,
        peer: PeerCred,
        handlers: dict[type[Request], Handler],
        replies_budget: Budget,
    ) -> None:
        self.services = services
        self.hub = services.hub
        self.ws = ws
        self.codec = codec
        self.peer = peer
        self.handlers = handlers
        self.conn_id = self.hub.next_connection_id()
        self.connected_at = trio.current_time()
        self.client: ClientInfo | None = None
        self.can_answer_questions = False
        self.session: Session | None = None
        self.request_scopes: dict[int, trio.CancelScope] = {}
        # What a request's cancellation should be reported as, if its handler knows better
        # than the generic `cancelled` (a Jev run in the middle of a dispatch, say).
        self.cancel_reports: dict[int, CancelReport] = {}
        self.stop_after_reply = False
        # Set by a handler whose reply must be the connection's last (the spare slot's stop):
        # the close code and reason to send once that reply is out.
        self.close_after_reply: tuple[int, str] | None = None
        self.last_message_at = self.connected_at  # for the idle limit (rpc/server.py)
        self._outstanding: set[int] = set()
        self._limit = services.config.daemon.max_outstanding_requests
        self._read_scope = trio.CancelScope()
        self._close_request: tuple[int, str] | None = None
        self._idle = trio.Event()  # set whenever the last outstanding request has replied
        self.outbox = Outbox(ws, self._not_reading, Backlog(replies_budget))
        self._abort = False  # close without the handshake: the client does not read

    def send(self, message: ServerMessage) -> None:
        """Queue ``message`` for the client (never waits; see the module docstring)."""
        self.outbox.put(self.codec.encode(message))

    async def emit(self, event: EventBody) -> None:
        self.send(Event(event=event))
        await trio.lowlevel.checkpoint()

    def _reply_error(self, rid: int | None, exc: DeskhandError) -> None:
        body = ErrorBody(code=exc.code, message=exc.message, data=exc.reply_data())
        self.send(Error(id=rid, error=body))

    def _not_reading(self, why: str) -> None:
        log.warning("client.not_reading", conn=self.conn_id, pid=self.peer.pid, why=why)
        self._abort = True
        self.request_close(
            CLOSE_NOT_READING,
            f"closed because {why}; read every reply before sending more requests",
        )

    def request_close(self, code: int, reason: str) -> None:
        """Ask :meth:`run` to stop reading, cancel in-flight work and close with ``code``."""
        self._close_request = (code, reason)
        self._read_scope.cancel()

    async def run(self) -> None:
        """Serve requests until the client closes or :meth:`request_close` is called."""
        async with trio.open_nursery() as nursery:
            await nursery.start(self.outbox.serve)
            with self._read_scope:
                while True:
                    try:
                        payload = await self.ws.get_message()
                    except ConnectionClosed:
                        break
                    self.last_message_at = trio.current_time()
                    self._accept(nursery, payload)
            if self._close_request is not None and self._outstanding:
                # The daemon is stopping: every request in flight is cancelled in its own
                # scope, so each still gets a reply that says what it left behind (an action
                # already sent: outcome unknown) before the connection closes.
                self._idle = trio.Event()
                for scope in list(self.request_scopes.values()):
                    scope.cancel()
                with trio.move_on_after(1):
                    await self._idle.wait()
            if self._close_request is not None:
                # The last replies (a stop's, the cancelled requests') go out before the close
                # frame; a client that does not read has had its queue dropped already.
                with trio.move_on_after(1):
                    await self.outbox.wait_empty()
            nursery.cancel_scope.cancel()
        if self._abort:
            with trio.CancelScope(shield=True):
                await abort(self.ws)
        elif self._close_request is not None:
            # Closing from here, while trio-websocket's reader task is still alive, lets the
            # close handshake complete instead of waiting out a timeout.
            with trio.move_on_after(1):
                try:
                    await self.ws.aclose(*self._close_request)
                except ConnectionClosed:
                    pass

    def _accept(self, nursery: trio.Nursery, payload: str | bytes) -> None:
        try:
            request = self.codec.decode_request(payload)
        except DeskhandError as exc:
            self.hub.counters.record("<invalid>", 0.0, ok=False)
            log.debug("request.invalid", conn=self.conn_id, code=exc.code)
            rid = exc.data.pop("id", None)
            self._reply_error(rid, exc)
            return
        if request.id in self._outstanding:
            dup = BadRequest(
                f"request id {request.id} is still in progress; use a new id for each request",
            )
            self._reply_error(request.id, dup)
            return
        if len(self._outstanding) >= self._limit and type(request) not in ALWAYS_ROOM:
            busy = TooManyRequests(
                f"this connection already has {self._limit} requests in progress; "
                "wait for replies before sending more",
            )
            self._reply_error(request.id, busy)
            return
        self._outstanding.add(request.id)
        nursery.start_soon(self._run_request, request)

    async def _run_request(self, request: Request) -> None:
        op = op_name(request)
        started = trio.current_time()
        ok = False
        scope = trio.CancelScope()
        self.request_scopes[request.id] = scope
        try:
            with scope:
                result = await self._dispatch(request)
            report = self.cancel_reports.pop(request.id, None)
            if scope.cancelled_caught:
                why = (
                    f"cancelled because {self._close_request[1]}"
                    if self._close_request is not None
                    else "cancelled at the client's request"
                )
                known = report(why) if report is not None else None
                if known is not None:
                    raise known  # the op knows best what a cancellation left behind
                raise RequestCancelled(
                    f"{why}; if it had already started, its outcome is unknown: observe again",
                    delivery="unknown",
                )
        except DeskhandError as exc:
            self._reply_error(request.id, exc)
        except Exception:
            log.exception("request.failed", conn=self.conn_id, op=op)
            self._reply_error(
                request.id,
                InternalError("the daemon hit an internal error; see its log for details"),
            )
        else:
            ok = True
            self.send(Result(id=request.id, result=result))
        finally:
            self.request_scopes.pop(request.id, None)
            self.cancel_reports.pop(request.id, None)
            self._outstanding.discard(request.id)
            if not self._outstanding:
                self._idle.set()
            self.hub.counters.record(op, trio.current_time() - started, ok=ok)
        if self.stop_after_reply:
            self.hub.request_shutdown(f"asked by client {self.conn_id}")
        if self.close_after_reply is not None:
            self.request_close(*self.close_after_reply)

    async def _dispatch(self, request: Request) -> Any:
        if self.client is None and not isinstance(request, Hello):
            raise HelloRequired("send hello first; it must be the first request on a connection")
        if self.hub.shutdown_requested.is_set():
            raise ShuttingDown("the daemon is stopping and takes no new requests")
        gates = self.services.native.gates
        if gates.locked_by and type(request) not in LOCK_EXEMPT:
            gates.check_unlocked()
        handler = self.handlers.get(type(request))
        if handler is None:
            raise BadRequest(
                f"this daemon does not serve {op_name(request)}; "
                "check `deskhandctl status` for its version"
            )
        return await handler(ConnectionRequest(self, request.id), request)
