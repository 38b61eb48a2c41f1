"""What an op sees of the request it serves: :class:`RequestContext`, and the helpers every op
group shares to read it (the session, the client's words, a :class:`Caller` for the native
service, a question to the person, the refusal of a step only the person takes).

What this owns: the seam between the ops and the transport. An op is a function of a
``RequestContext`` and its decoded request; it never sees the WebSocket, the codec or the
connection's bookkeeping. :class:`ConnectionRequest` implements the context for one request
on whatever carries it (a :class:`Carrier`: the RPC layer's connection, or a test's connection
without a transport, which then calls an op directly).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

import trio

from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.consent.model import Choice as ConsentChoice
from deskhand_d.errors import (
    BadRequest,
    DeskhandError,
    NoOneToAsk,
    NotForAgents,
    QuestionExpired,
    RequestCancelled,
)
from deskhand_d.native.service import Caller, Handover
from deskhand_d.native.sessions import Session
from deskhand_d.nextsteps import Words, for_client
from deskhand_d.ops.questions import APPROVAL_CHOICES, Choice, Origin, QuestionKind
from deskhand_d.ops.services import Services
from deskhand_d.protocol import ClientInfo, EventBody, ResultBody
from deskhand_d.unixsock import PeerCred


class RequestContext(Protocol):
    """One request as its op sees it: who asks, in which session, and the ways back to them."""

    session: Session | None  # None before hello, or after the session was closed

    @property
    def services(self) -> Services: ...
    @property
    def request_id(self) -> int: ...
    @property
    def conn_id(self) -> int:
        """The connection the request came on (questions are routed back to it)."""

    @property
    def peer(self) -> PeerCred: ...
    @property
    def client(self) -> ClientInfo | None:
        """The client's hello (None until then)."""

    @property
    def can_answer_questions(self) -> bool: ...

    def greet(self, client: ClientInfo, *, can_answer_questions: bool, session: Session) -> None:
        """Record what ``hello`` settled for the connection."""

    async def emit(self, event: EventBody) -> None:
        """Send an event to this request's client (progress, a question)."""

    def on_cancel(self, report: CancelReport) -> None:
        """What this request's cancellation should be reported as, if not plain ``cancelled``:
        ``report`` gets why it was cancelled and returns the error to reply with (None: the
        plain one, outcome unknown)."""

    def cancel(self, request_id: int) -> bool:
        """Cancel another request in progress on the same connection; False if there is none."""

    def after_reply(
        self, *, stop_daemon: bool = False, close: tuple[int, str] | None = None
    ) -> None:
        """Once this request's reply is out: stop the daemon, or close the connection."""


Handler = Callable[[RequestContext, Any], Awaitable[ResultBody]]
CancelReport = Callable[[str], DeskhandError | None]


class Carrier(Protocol):
    """What a request's context needs of the connection it came on (the RPC layer's
    connection, or a test's connection without a transport)."""

    services: Services
    conn_id: int
    peer: PeerCred
    client: ClientInfo | None
    can_answer_questions: bool
    session: Session | None
    request_scopes: dict[int, trio.CancelScope]
    cancel_reports: dict[int, CancelReport]
    stop_after_reply: bool
    close_after_reply: tuple[int, str] | None

    async def emit(self, event: EventBody) -> None: ...


class ConnectionRequest:
    """One request's :class:`RequestContext`, on the connection it came on."""

    __slots__ = ("_conn", "request_id", "services")

    def __init__(self, conn: Carrier, request_id: int) -> None:
        self._conn = conn
        self.services = conn.services
        self.request_id = request_id

    @property
    def conn_id(self) -> int:
        return self._conn.conn_id

    @property
    def peer(self) -> PeerCred:
        return self._conn.peer

    @property
    def client(self) -> ClientInfo | None:
        return self._conn.client

    @property
    def can_answer_questions(self) -> bool:
        return self._conn.can_answer_questions

    @property
    def session(self) -> Session | None:
        return self._conn.session

    @session.setter
    def session(self, value: Session | None) -> None:
        self._conn.session = value

    def greet(self, client: ClientInfo, *, can_answer_questions: bool, session: Session) -> None:
        conn = self._conn
        conn.client, conn.can_answer_questions, conn.session = (
            client,
            can_answer_questions,
            session,
        )

    async def emit(self, event: EventBody) -> None:
        await self._conn.emit(event)

    def on_cancel(self, report: CancelReport) -> None:
        self._conn.cancel_reports[self.request_id] = report

    def cancel(self, request_id: int) -> bool:
        scope = self._conn.request_scopes.get(request_id)
        if scope is None:
            return False
        scope.cancel()
        return True

    def after_reply(
        self, *, stop_daemon: bool = False, close: tuple[int, str] | None = None
    ) -> None:
        if stop_daemon:
            self._conn.stop_after_reply = True
        if close is not None:
            self._conn.close_after_reply = close


def session_of(ctx: RequestContext) -> Session:
    """The request's session, or a refusal saying how to get one."""
    if ctx.session is None:
        raise BadRequest(
            "this connection has no session (never said hello, or its session was closed); "
            "reconnect to start one"
        )
    return ctx.session


def client_name(ctx: RequestContext) -> str:
    return ctx.client.name if ctx.client else "?"


AGENT_KINDS: frozenset[str] = frozenset({"agent", "pi", "mcp"})
"""The client kinds of the surfaces an agent is handed: the MCP facade (``deskhandctl mcp``)
says ``agent``, the pi extension ``pi``. The kernel cannot tell two processes of one uid
apart, so this rests on what the client declared: it keeps Deskhand's own agent surfaces
honest, and says nothing about a program that declares another kind."""


def for_the_person(
    ctx: RequestContext, step: str, command: str, there: str = "it asks them to confirm there"
) -> None:
    """Refuse ``step`` (in words: "releasing the emergency stop") when this request's client
    declared an agent's kind; ``command`` is what the person runs in their own terminal
    instead, and ``there`` what it does. Releasing the stop, allowing an app, restoring a
    grant and answering for other clients widen what agents may do: those decisions stay with
    the person, whatever an agent was told."""
    if ctx.client is None or ctx.client.kind not in AGENT_KINDS:
        return
    raise NotForAgents(
        f"{step} is the person's decision, not an agent's, so nothing was changed; ask the "
        f"person to run `{command}` in their own terminal ({there})",
        data={"command": command},
    )


def words(ctx: RequestContext) -> Words:
    """How messages to this request's client name the next step."""
    session = ctx.session.name if ctx.session is not None else ""
    kind = ctx.client.kind if ctx.client else "other"
    return for_client(kind, session=session, uid=ctx.peer.uid)


async def ask(
    ctx: RequestContext,
    kind: QuestionKind,
    text: str,
    *,
    app: str = "",
    choices: tuple[Choice, ...] = APPROVAL_CHOICES,
) -> Choice:
    """Ask this request's person a question: through this client if it can answer, and on
    every console (``deskhandctl questions``). Raises NoOneToAsk when neither can, and
    QuestionExpired after ``native.question_timeout_s``."""
    origin = Origin(
        client=client_name(ctx),
        client_pid=ctx.peer.pid,
        session=ctx.session.name if ctx.session is not None else "",
        can_answer=ctx.can_answer_questions,
    )
    return await ctx.services.questions.ask(
        ctx,
        origin,
        request_id=ctx.request_id,
        kind=kind,
        text=text,
        app=app,
        choices=choices,
        timeout_s=ctx.services.config.native.question_timeout_s,
    )


def caller(ctx: RequestContext) -> Caller:
    """The native service's view of who asks, with the ways to ask its person: the client
    itself when it can answer, else a console if one is connected when the question comes."""

    async def approval(req: ap.Confirmation, app: str) -> Literal["accept", "decline"]:
        try:
            choice = await ask(ctx, "backend_approval", req.message, app=app)
        except QuestionExpired:
            raise ap.NoAnswer(ap.Reason.QUESTION_EXPIRED) from None  # the backend gets cancel
        except NoOneToAsk:
            raise ap.NoAnswer(ap.Reason.HANDLER_UNAVAILABLE) from None
        return "accept" if choice == "accept" else "decline"

    async def consent(text: str, choices: tuple[ConsentChoice, ...], app: str) -> ConsentChoice:
        # NoOneToAsk and QuestionExpired go to the consent gate, which words the refusal.
        choice = await ask(ctx, "app_consent", text, app=app, choices=choices)
        return choice if choice in ("once", "always") else "deny"

    handover = Handover()

    def cancelled(why: str) -> DeskhandError | None:
        # Cancelled while waiting (for the queue, the person, consent): nothing was sent, and
        # the reply says so; once handed to the backend, the plain reply (outcome unknown).
        if handover.sent:
            return None
        return RequestCancelled(
            f"{why} before anything was sent; nothing reached the app", delivery="refused"
        )

    ctx.on_cancel(cancelled)
    return Caller(
        session=session_of(ctx),
        client=client_name(ctx),
        pid=ctx.peer.pid,
        ask=approval,
        consent=consent,
        words=words(ctx),
        handover=handover,
    )
