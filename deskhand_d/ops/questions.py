"""Questions for the person: asked for a client's request, answered by that client or a console.

What this owns: every open question with what a person needs to judge it (which client asks,
its pid and session, the app, the exact text and choices, when it was asked and until when it
waits), the consoles (connections that called ``questions_watch``), and a version number that
grows whenever a question opens or closes, so a console can wait for the next change.

* **Where a question goes.** A client that declared ``can_answer_questions`` gets it as a
  ``question`` event (never broadcast to other clients). Every console sees it too, in its
  ``questions_watch`` list. A client that cannot answer has its questions wait for a console;
  with no console connected nobody is asked (:class:`~deskhand_d.errors.NoOneToAsk`), and the
  caller refuses.
* **Who may answer.** The asking connection, or any console. The first answer counts; the
  question is closed at once, so a later answer is told that it is no longer open, and how it
  closed (the last few closed questions are remembered for that). A client of an agent's kind
  can never be a console, and the ``answer`` op refuses it another connection's question
  (``not_for_agents``, :mod:`deskhand_d.ops.native`).
* **Passed on.** A client whose host answered a question by itself, with no person asked (an
  agent host in a run nobody sits at), passes it (``question_pass``) instead of relaying that
  answer: it then waits for a console like the questions of a client that cannot answer, or,
  with no console open, closes at once and nobody is taken to have said anything.
* **Closing.** Answered, expired (``deadline`` passed: :class:`~deskhand_d.errors.
  QuestionExpired`), or cancelled (the request ended, or the last console went away while only
  consoles could answer it). Either way the asking connection gets ``question_closed`` so a
  client that shows the question can withdraw it. Nothing here ever answers for the person.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Literal, Protocol

import trio

from deskhand_d import errors as E
from deskhand_d.protocol import (
    EventBody,
    PendingQuestion,
    Question,
    QuestionClosed,
    QuestionList,
)

Choice = Literal["accept", "decline", "once", "always", "deny"]
QuestionKind = Literal["backend_approval", "app_consent", "full_trace"]
How = Literal["answered", "expired", "cancelled"]
Passed = Literal["", "no_console"]
By = Literal["client", "console", ""]
APPROVAL_CHOICES: tuple[Choice, ...] = ("accept", "decline")
CLOSED_NOTICE_S = 1.0  # how long a closing question may spend telling its asker so
REMEMBERED_CLOSED = 64  # closed questions kept to tell a late answer how they closed


class Asker(Protocol):
    """Whoever a question goes back to: the requesting connection."""

    @property
    def conn_id(self) -> int: ...

    async def emit(self, event: EventBody) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Who asks, as a console shows it, and whether that client can answer for itself."""

    client: str
    client_pid: int
    session: str
    can_answer: bool


@dataclass(eq=False, slots=True, kw_only=True)
class _Open:
    id: str
    kind: QuestionKind
    text: str
    app: str
    choices: tuple[Choice, ...]
    origin: Origin
    conn_id: int
    asked_at: float
    deadline: float
    closed: trio.Event = field(default_factory=trio.Event)
    how: How = "cancelled"
    by: By = ""
    choice: Choice | None = None
    passed: bool = False  # the asking client's host answered for itself: consoles only


class Questions:
    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self._closed: dict[str, _Open] = {}  # the last REMEMBERED_CLOSED, oldest first
        self._consoles: set[int] = set()
        self.version = 0
        self._changed = trio.Event()

    @property
    def pending(self) -> int:
        return len(self._open)

    @property
    def consoles(self) -> int:
        return len(self._consoles)

    def _bump(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    def _close(self, q: _Open, how: How, by: By = "") -> None:
        """Close ``q`` once (later calls change nothing): out of the list, its asker woken."""
        if self._open.pop(q.id, None) is None:
            return
        q.how, q.by = how, by
        q.closed.set()
        self._closed[q.id] = q
        if len(self._closed) > REMEMBERED_CLOSED:
            del self._closed[next(iter(self._closed))]
        self._bump()

    async def ask(
        self,
        asker: Asker,
        origin: Origin,
        *,
        request_id: int,
        kind: QuestionKind,
        text: str,
        app: str = "",
        choices: tuple[Choice, ...] = APPROVAL_CHOICES,
        timeout_s: float,
    ) -> Choice:
        """The person's choice. Raises NoOneToAsk when nobody can be asked (or the last
        console left while only consoles could answer), QuestionExpired after ``timeout_s``;
        trio.Cancelled when the request ends first."""
        if not origin.can_answer and not self._consoles:
            raise E.NoOneToAsk("no client or console can ask the person", data={"app": app})
        now = trio.current_time()
        q = _Open(
            id=secrets.token_hex(8),
            kind=kind,
            text=text,
            app=app,
            choices=choices,
            origin=origin,
            conn_id=asker.conn_id,
            asked_at=now,
            deadline=now + timeout_s,
        )
        self._open[q.id] = q
        self._bump()
        try:
            if origin.can_answer:
                await asker.emit(
                    Question(
                        id=q.id,
                        request_id=request_id,
                        question=kind,
                        text=text,
                        app=app,
                        choices=list(choices),
                    )
                )
            with trio.move_on_at(q.deadline):
                await q.closed.wait()
            if not q.closed.is_set():
                self._close(q, "expired")
        finally:
            self._close(q, "cancelled")  # the request ended first (no-op once closed)
            with trio.CancelScope(shield=True), trio.move_on_after(CLOSED_NOTICE_S):
                await asker.emit(QuestionClosed(id=q.id, how=q.how, by=q.by))
        if q.how == "expired":
            waited = round(trio.current_time() - q.asked_at, 1)
            raise E.QuestionExpired(
                f"nobody answered the question in {waited:g} s",
                data={"app": app, "waited_s": waited},
            )
        if q.choice is None and q.passed:
            raise E.NoOneToAsk(
                "the client's host answered the question by itself, and no console was open",
                data={"app": app, "passed": True},
            )
        if q.choice is None:
            raise E.NoOneToAsk("the last console that could answer went away", data={"app": app})
        return q.choice

    def asked_on(self, question_id: str) -> int | None:
        """The connection that open question ``question_id`` was asked for (None when no such
        question is open)."""
        q = self._open.get(question_id)
        return None if q is None else q.conn_id

    def answer(self, conn_id: int, question_id: str, choice: Choice) -> By:
        """Record an answer from connection ``conn_id``; who answered (``client`` or
        ``console``). BadRequest when the question is not open (saying how it closed, when
        that is remembered) or is another connection's and this one is no console."""
        q = self._open.get(question_id)
        if q is None:
            raise E.BadRequest(self._not_open(question_id))
        if conn_id not in self._consoles and (q.conn_id != conn_id or q.passed):
            raise E.BadRequest(
                "that question was passed on to the consoles: only a console started with "
                "`deskhandctl questions` may answer it now"
                if q.conn_id == conn_id
                else "that question was asked of another client; only a console started with "
                "`deskhandctl questions` may answer any open question"
            )
        if choice not in q.choices:
            raise E.BadRequest(
                f"{choice!r} is not one of this question's choices: {', '.join(q.choices)}"
            )
        q.choice = choice  # the first answer counts: the question closes with it
        by: By = "client" if conn_id == q.conn_id else "console"
        self._close(q, "answered", by)
        return by

    def pass_on(self, conn_id: int, question_id: str) -> Passed:
        """The asking connection could not put ``question_id`` to the person. It waits for a
        console from now on (``""``), or closes at once when none is open (``no_console``)."""
        q = self._open.get(question_id)
        if q is None or q.conn_id != conn_id:
            raise E.BadRequest(
                self._not_open(question_id)
                if q is None
                else "only the client a question was asked of may pass it on"
            )
        q.passed = True
        if not self._consoles:
            self._close(q, "cancelled")
            return "no_console"
        self._bump()  # consoles see the change (a console now is the only way to answer)
        return ""

    def _not_open(self, question_id: str) -> str:
        """Why an answer to a question that is not open cannot count, as precisely as known."""
        q = self._closed.get(question_id)
        if q is None:
            return (
                "no open question has that id (it may have closed a while ago); "
                "`deskhandctl questions` lists the open ones"
            )
        if q.how == "answered":
            who = "the client that asked it" if q.by == "client" else "a console"
            return f"that question was already answered ({q.choice}) by {who}"
        if q.how == "expired":
            return "that question expired unanswered; the request it was for was refused"
        if q.passed:
            return (
                "that question closed unanswered: the asking client's host answered it by "
                "itself and no console was open then, so its request was refused"
            )
        return "that question was withdrawn: the request it was for ended"

    # ----- consoles ---------------------------------------------------------------------------

    async def watch(self, conn_id: int, after: int, wait_s: float) -> QuestionList:
        """Make ``conn_id`` a console; the open questions once the version is not ``after``
        (or ``wait_s`` has passed), oldest first."""
        self._consoles.add(conn_id)
        if self.version == after:
            with trio.move_on_after(wait_s):
                await self._changed.wait()
        now = trio.current_time()
        listed = sorted(self._open.values(), key=lambda q: q.asked_at)
        return QuestionList(version=self.version, questions=[_shown(q, now) for q in listed])

    def depart(self, conn_id: int) -> None:
        """A connection closed. If it was the last console, questions only a console could
        answer have nobody left to answer them: they close as cancelled."""
        if conn_id not in self._consoles:
            return
        self._consoles.discard(conn_id)
        if not self._consoles:
            for q in [q for q in self._open.values() if q.passed or not q.origin.can_answer]:
                self._close(q, "cancelled")


def _shown(q: _Open, now: float) -> PendingQuestion:
    """An open question as ``questions_watch`` lists it."""
    return PendingQuestion(
        id=q.id,
        kind=q.kind,
        text=q.text,
        app=q.app,
        choices=list(q.choices),
        client=q.origin.client,
        client_pid=q.origin.client_pid,
        session=q.origin.session,
        asked_s_ago=round(now - q.asked_at, 1),
        expires_in_s=round(max(0.0, q.deadline - now), 1),
    )
