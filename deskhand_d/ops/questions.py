"""Questions for the person: routed to the client that made the request, answered by `answer`.

A question is pushed as a ``question`` event to the requesting connection only (never
broadcast), and waits for that same connection's ``answer`` op. Nothing here ever answers for
the person: if the request is cancelled or the client disconnects first, the waiting task is
cancelled and the caller turns that into ``cancel``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Literal, Protocol

import trio

from deskhand_d.errors import BadRequest
from deskhand_d.protocol import EventBody, Question

Choice = Literal["accept", "decline", "once", "always", "deny"]
QuestionKind = Literal["backend_approval", "app_consent", "full_trace"]
APPROVAL_CHOICES: tuple[Choice, ...] = ("accept", "decline")


class Asker(Protocol):
    """Whoever a question goes back to: the requesting connection."""

    @property
    def conn_id(self) -> int: ...

    async def emit(self, event: EventBody) -> None: ...


@dataclass(eq=False)
class _Pending:
    conn_id: int
    choices: tuple[Choice, ...]
    answered: trio.Event = field(default_factory=trio.Event)
    choice: Choice | None = None


class Questions:
    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def ask(
        self,
        asker: Asker,
        *,
        request_id: int,
        kind: QuestionKind,
        text: str,
        app: str = "",
        choices: tuple[Choice, ...] = APPROVAL_CHOICES,
    ) -> Choice:
        qid = secrets.token_hex(8)
        pending = _Pending(conn_id=asker.conn_id, choices=choices)
        self._pending[qid] = pending
        try:
            await asker.emit(
                Question(
                    id=qid,
                    request_id=request_id,
                    question=kind,
                    text=text,
                    app=app,
                    choices=list(choices),
                )
            )
            await pending.answered.wait()
            assert pending.choice is not None
            return pending.choice
        finally:
            del self._pending[qid]

    def answer(self, conn_id: int, question_id: str, choice: Choice) -> None:
        pending = self._pending.get(question_id)
        if pending is None or pending.conn_id != conn_id:
            raise BadRequest(
                "no open question with that id on this connection (it may have been answered, "
                "cancelled or asked of another client)"
            )
        if choice not in pending.choices:
            raise BadRequest(
                f"{choice!r} is not one of this question's choices: {', '.join(pending.choices)}"
            )
        if pending.choice is None:  # the first answer counts
            pending.choice = choice
            pending.answered.set()
