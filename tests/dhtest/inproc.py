"""The daemon's services in the test's own trio run, for calling ops without a socket.

What this owns:

* :func:`open_desk`: real :class:`~deskhand_d.ops.services.Services` built by
  :func:`deskhand_d.app.open_services` on a private temporary directory (the environment
  :func:`dhtest.daemon.daemon_env` gives a spawned daemon, the simulated desktop as the
  backend, saved consent grants for the simulator's apps unless the test says otherwise, the
  simulator's scenario and call record through its environment), torn down on exit. The
  backend is the real simulator child process, started on first use.
* :class:`FakeClient`: one connection as the ops see it, without a transport. It joins the
  hub like a real connection, gives each request the daemon's own request context
  (:class:`~deskhand_d.ops.context.ConnectionRequest`, as a connection does), records the events
  sent to it, answers questions through the test's callback with the real ``answer`` op, and
  cancels its own requests the way a connection does.
* :func:`open_ws_client`: a real :class:`~deskhand_d.rpc.connection.Connection` served over
  ``trio.testing.memory_stream_pair()``, WebSocket on both ends (the daemon's own server-side
  wrapping and trio-websocket's client), for tests of the connection layer without a socket
  (:class:`WsClient` is the client end).

Nothing here stands in for the daemon's code: every service, op and connection is the real
one; only the transport of :class:`FakeClient` is absent.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio
import trio.testing
import trio_websocket

from deskhand_d import config
from deskhand_d.app import open_services
from deskhand_d.errors import DeskhandError
from deskhand_d.native.sessions import Session
from deskhand_d.ops.context import ConnectionRequest, Handler
from deskhand_d.ops.questions import Choice
from deskhand_d.ops.services import Services
from deskhand_d.ops.table import handler_table
from deskhand_d.protocol import (
    PROTOCOL_VERSION,
    Answer,
    ClientInfo,
    ClientKind,
    Codec,
    EventBody,
    Hello,
    Question,
    Request,
    ResultBody,
)
from deskhand_d.protocol.sharedbytes import partial_messages_budget, queued_replies_budget
from deskhand_d.rpc.connection import Connection
from deskhand_d.rpc.wsserver import wrap_server_stream
from deskhand_d.unixsock import PeerCred
from dhtest.daemon import daemon_env, short_tmpdir
from dhtest.desk import SIM_APPS, save_grants

JSON = "deskhand.v1.json"

# What a test's person answers a question with; None leaves it open (see FakeClient.question).
Answerer = Callable[[Question], Awaitable[Choice | None]]


def answering(*choices: Choice) -> Answerer:
    """A person who gives these answers in order, one per question (none left: fails)."""
    todo = list(choices)

    async def answer(question: Question) -> Choice | None:
        assert todo, f"an unexpected question: {question.text}"
        return todo.pop(0)

    return answer


class RequestWasCancelled(Exception):
    """The request's scope was cancelled (by ``cancel`` or the test); ``report`` is what its op
    said the cancellation means (``on_cancel``), if it said anything."""

    def __init__(self, report: DeskhandError | None) -> None:
        super().__init__(report.code if report is not None else "cancelled")
        self.report = report


@dataclass
class Pending:
    """A request running in the background: its result or error once ``done`` is set."""

    request: Request
    done: trio.Event = field(default_factory=trio.Event)
    result: ResultBody | None = None
    error: BaseException | None = None

    async def wait(self) -> ResultBody:
        """The result; the request's error (a DeskhandError or RequestWasCancelled) is raised."""
        await self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


class FakeClient:
    """A connection without a transport: a hub member whose requests call the ops directly.

    ``answer``: how its person answers questions (``None``: questions stay open until the test
    answers them with :meth:`answer_question`). Events sent to it are in :attr:`events`.
    """

    def __init__(
        self,
        services: Services,
        *,
        answer: Answerer | None = None,
        handlers: dict[type, Handler] | None = None,
    ) -> None:
        self.services = services
        self.handlers = handlers or handler_table()
        self.conn_id = services.hub.next_connection_id()
        self.peer = PeerCred(pid=os.getpid(), uid=os.getuid(), gid=os.getgid())
        self.connected_at = trio.current_time()
        self.client: ClientInfo | None = None
        self.can_answer_questions = False
        self.session: Session | None = None
        self.events: list[EventBody] = []
        self.request_scopes: dict[int, trio.CancelScope] = {}
        self.cancel_reports: dict[int, Callable[[str], DeskhandError | None]] = {}
        self.stop_after_reply = False
        self.close_after_reply: tuple[int, str] | None = None
        self.close_requested: tuple[int, str] | None = None
        self._answer = answer
        self._ids = itertools.count(1)
        self._questions_in, self._questions_out = trio.open_memory_channel[Question](100)
        self.gone = False
        services.hub.register(self)

    # -- the Member side ----------------------------------------------------------------------

    def request_close(self, code: int, reason: str) -> None:
        self.close_requested = (code, reason)
        for scope in self.request_scopes.values():
            scope.cancel()

    def leave(self) -> None:
        """The connection closes: what the server does when a client goes."""
        if not self.gone:
            self.gone = True
            for scope in self.request_scopes.values():
                scope.cancel()
            self.services.depart(self)

    # -- requests -----------------------------------------------------------------------------

    def next_id(self) -> int:
        return next(self._ids)

    async def call(self, request: Request) -> ResultBody:
        """Run ``request``'s op with this connection's context: its result, or its
        DeskhandError raised, or :class:`RequestWasCancelled` if it was cancelled."""
        scope = self.request_scopes.setdefault(request.id, trio.CancelScope())
        try:
            with scope:
                return await self.handlers[type(request)](
                    ConnectionRequest(self, request.id), request
                )
            report = self.cancel_reports.get(request.id)
            known = report("cancelled at the client's request") if report is not None else None
            raise RequestWasCancelled(known)
        finally:
            self.request_scopes.pop(request.id, None)
            self.cancel_reports.pop(request.id, None)

    def start(self, nursery: trio.Nursery, request: Request) -> Pending:
        """Run ``request`` in the background; :meth:`Pending.wait` gives its outcome."""
        pending = Pending(request)

        async def run() -> None:
            try:
                pending.result = await self.call(request)
            except (DeskhandError, RequestWasCancelled) as exc:
                pending.error = exc
            finally:
                pending.done.set()

        # cancellable from now on: call() runs in this scope
        self.request_scopes[request.id] = trio.CancelScope()
        nursery.start_soon(run)
        return pending

    async def hello(
        self,
        session: str = "",
        *,
        answers: bool = False,
        name: str = "test",
        kind: ClientKind = "test",
    ) -> ResultBody:
        return await self.call(
            Hello(
                id=self.next_id(),
                protocol=PROTOCOL_VERSION,
                client=ClientInfo(name=name, kind=kind),
                can_answer_questions=answers,
                session=session,
            )
        )

    # -- events and questions -----------------------------------------------------------------

    @property
    def questions(self) -> list[Question]:
        return [e for e in self.events if isinstance(e, Question)]

    async def emit(self, event: EventBody) -> None:
        self.events.append(event)
        if not isinstance(event, Question):
            return
        if self._answer is None:
            self._questions_in.send_nowait(event)
            return
        choice = await self._answer(event)
        if choice is not None:
            await self.answer_question(event, choice)

    async def question(self) -> Question:
        """The next question left open for the test (a client made without ``answer``)."""
        return await self._questions_out.receive()

    async def answer_question(self, question: Question, choice: Choice) -> ResultBody:
        """Answer with the ``answer`` op on this connection, as a client would."""
        return await self.call(Answer(id=self.next_id(), question_id=question.id, choice=choice))


@dataclass
class Desk:
    """The services, where they keep their files, and the simulator's call record."""

    services: Services
    root: Path
    env: dict[str, str]
    record: Path
    clients: list[FakeClient] = field(default_factory=list)

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The calls the simulator received (``tool``: only those)."""
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [r for r in rows if r["event"] == "call_start" and tool in (None, r["tool"])]

    def records(self, event: str) -> list[dict[str, Any]]:
        """Every row of the simulator's record of this kind (``elicitation_answer``, ...)."""
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [r for r in rows if r["event"] == event]

    def connect(self, *, answer: Answerer | None = None) -> FakeClient:
        """A connection that has not said hello yet."""
        c = FakeClient(self.services, answer=answer)
        self.clients.append(c)
        return c

    async def client(
        self,
        session: str = "",
        *,
        answers: bool = False,
        answer: Answerer | None = None,
        name: str = "test",
        kind: ClientKind = "test",
    ) -> FakeClient:
        """A connection that said hello for ``session``; ``answer`` implies ``answers``."""
        c = self.connect(answer=answer)
        await c.hello(session, answers=answers or answer is not None, name=name, kind=kind)
        return c


@asynccontextmanager
async def open_desk(
    scenario: dict[str, Any] | None = None,
    *,
    config_text: str = "",
    grants: tuple[str, ...] = SIM_APPS,
    setup: Callable[[Path], Mapping[str, str]] | None = None,
    **env: str,
) -> AsyncIterator[Desk]:
    """Real services on the simulated desktop, as a spawned daemon of ``dhtest.desk`` has them:
    ``scenario`` scripts the simulator; ``grants`` are saved consent grants ("always") for
    those apps first; ``env`` adds to the daemon's environment (``DESKHAND_ALLOWED_APPS``...);
    ``setup(root)`` writes files of its own there first and returns more environment."""
    root = short_tmpdir()
    record = root / "record.jsonl"
    extra = {"DESKHAND_BACKEND": "sim", "DESKHAND_SIM_RECORD": str(record), **env}
    if setup is not None:
        extra.update(setup(root))
    if scenario is not None:
        extra["DESKHAND_SIM_SCENARIO"] = json.dumps(scenario)
    full_env = daemon_env(root, extra)
    if grants:
        save_grants(root / "config", grants)
    cfg = config.parse(config_text, source="test", env=full_env)
    socket_path = root / "run" / "deskhand" / "deskhand.sock"  # never bound: only named
    try:
        async with open_services(cfg, full_env, socket_path=socket_path) as services:
            desk = Desk(services=services, root=root, env=full_env, record=record)
            try:
                yield desk
            finally:
                for c in desk.clients:
                    c.leave()
    finally:
        shutil.rmtree(root, ignore_errors=True)


class WsClient:
    """The client end of a WebSocket connection to a real :class:`Connection` (JSON)."""

    def __init__(self, ws: trio_websocket.WebSocketConnection, conn: Connection) -> None:
        self.ws = ws
        self.conn = conn  # the server's side, for what it holds (client, session)
        self.events: list[dict[str, Any]] = []
        self._ids = itertools.count(1000)

    async def send(self, message: dict[str, Any] | str) -> None:
        await self.ws.send_message(message if isinstance(message, str) else json.dumps(message))

    async def receive(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(await self.ws.get_message())
        return value

    async def reply_to(self, rid: int | None) -> dict[str, Any]:
        """Read until the reply with id ``rid``; events on the way go to :attr:`events`,
        other replies fail the test."""
        while True:
            msg = await self.receive()
            if msg["type"] == "event":
                self.events.append(msg["event"])
                continue
            assert msg["id"] == rid, msg
            return msg

    async def call(self, op: str, **fields: Any) -> dict[str, Any]:
        rid = next(self._ids)
        await self.send({"op": op, "id": rid, **fields})
        return await self.reply_to(rid)

    async def hello(self, session: str = "", *, answers: bool = False) -> dict[str, Any]:
        return await self.call(
            "hello",
            protocol=PROTOCOL_VERSION,
            client={"name": "test", "kind": "test"},
            can_answer_questions=answers,
            session=session,
        )


@asynccontextmanager
async def open_ws_client(
    services: Services,
    *,
    handlers: dict[type, Handler] | None = None,
    subprotocol: str = JSON,
) -> AsyncIterator[WsClient]:
    """A real connection over an in-memory stream pair: the daemon's WebSocket wrapping and
    :class:`Connection` on one end, trio-websocket's client on the other. The connection
    joins the hub and departs like one the server accepted; no peer check or slot."""
    client_stream, server_stream = trio.testing.memory_stream_pair()
    max_size = services.config.daemon.max_message_bytes
    served: list[Connection] = []
    accepted = trio.Event()

    async def serve() -> None:
        async with trio.open_nursery() as inner:
            request = await wrap_server_stream(
                inner, server_stream, max_message_size=max_size,
                partial=partial_messages_budget(max_size),
            )  # fmt: skip
            ws = await request.accept(subprotocol=subprotocol)
            conn = Connection(
                services=services,
                ws=ws,
                codec=Codec(subprotocol),
                peer=PeerCred(pid=os.getpid(), uid=os.getuid(), gid=os.getgid()),
                handlers=handlers or handler_table(),
                replies_budget=queued_replies_budget(),
            )
            services.hub.register(conn)
            served.append(conn)
            accepted.set()
            try:
                await conn.run()
            finally:
                services.depart(conn)
                inner.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        ws = await trio_websocket.wrap_client_stream(
            nursery,
            client_stream,  # type: ignore[arg-type]  # any trio Stream works; the hint is narrow
            "localhost",
            "/v1",
            subprotocols=[subprotocol],
        )
        await accepted.wait()
        try:
            yield WsClient(ws, served[0])
        finally:
            await ws.aclose()
            nursery.cancel_scope.cancel()
