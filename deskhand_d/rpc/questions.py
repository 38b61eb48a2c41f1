"""Questions for the person: routed to the client that made the request, answered by `answer`.

A question is pushed as a ``question`` event to the requesting connection only (never
broadcast), and waits for that same connection's ``answer`` op. Nothing here ever answers for
the person: if the request is cancelled or the client disconnects first, the waiting task is
cancelled and the caller turns that into ``cancel``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import trio

from deskhand_d.errors import BadRequest
from deskhand_d.protocol import Question

if TYPE_CHECKING:
    from deskhand_d.rpc.connection import Connection

Choice = Literal["accept", "decline"]


@dataclass(eq=False)
class _Pending:
    conn_id: int
    answered: trio.Event = field(default_factory=trio.Event)
    choice: Choice = "decline"


class Questions:
    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def ask(
        self,
        conn: Connection,
        *,
        request_id: int,
        kind: Literal["backend_approval", "app_consent", "full_trace"],
        text: str,
        app: str = "",
    ) -> Choice:
        qid = secrets.token_hex(8)
        pending = _Pending(conn_id=conn.conn_id)
        self._pending[qid] = pending
        try:
            await conn.send_event(
                Question(id=qid, request_id=request_id, question=kind, text=text, app=app)
            )
            await pending.answered.wait()
            return pending.choice
        finally:
            del self._pending[qid]

    def answer(self, conn: Connection, question_id: str, choice: Choice) -> None:
        pending = self._pending.get(question_id)
        if pending is None or pending.conn_id != conn.conn_id:
            raise BadRequest(
                "no open question with that id on this connection (it may have been answered, "
                "cancelled or asked of another client)"
            )
        pending.choice = choice
        pending.answered.set()
