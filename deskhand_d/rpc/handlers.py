"""Handlers for the connection ops: ``hello``, ``status``, ``ping``, ``shutdown``.

Each handler takes the connection and its decoded request and returns a result body, or raises
a :class:`~deskhand_d.errors.DeskhandError`. Later op groups (control, native, consent, jev)
live in their own modules and are merged into :data:`HANDLERS` by the composition root.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from deskhand_d import __version__
from deskhand_d.errors import BadRequest, ProtocolMismatch
from deskhand_d.protocol import (
    PROTOCOL_VERSION,
    Hello,
    Ping,
    Pong,
    Request,
    ResultBody,
    Shutdown,
    ShuttingDownResult,
    Status,
    Welcome,
)

if TYPE_CHECKING:
    from deskhand_d.rpc.connection import Connection

Handler = Callable[["Connection", Any], Awaitable[ResultBody]]


async def hello(conn: Connection, req: Hello) -> ResultBody:
    if conn.client is not None:
        raise BadRequest("hello was already exchanged on this connection; send it only once")
    if req.protocol != PROTOCOL_VERSION:
        raise ProtocolMismatch(
            f"this daemon speaks protocol {PROTOCOL_VERSION}, the client asked for "
            f"{req.protocol}; upgrade the older of the two",
            data={"daemon_protocol": PROTOCOL_VERSION},
        )
    conn.client = req.client
    conn.can_answer_questions = req.can_answer_questions
    sessions = conn.hub.sessions
    if sessions is None:
        conn.session_id = uuid.uuid4().hex
        return Welcome(
            daemon_version=__version__,
            protocol=PROTOCOL_VERSION,
            session_id=conn.session_id,
            pid=conn.hub_pid,
        )
    session, resumed = sessions.open(req.session)
    conn.session = session
    conn.session_id = session.session_id
    return Welcome(
        daemon_version=__version__,
        protocol=PROTOCOL_VERSION,
        session_id=session.session_id,
        pid=conn.hub_pid,
        session_name=session.name,
        resumed=resumed,
        mode=session.mode,
    )


async def status(conn: Connection, req: Status) -> ResultBody:
    return conn.hub.status()


async def ping(conn: Connection, req: Ping) -> ResultBody:
    return Pong(data=req.data)


async def shutdown(conn: Connection, req: Shutdown) -> ResultBody:
    # The connection asks the hub to stop only after this reply has been sent.
    conn.stop_after_reply = True
    return ShuttingDownResult()


HANDLERS: dict[type[Request], Handler] = {
    Hello: hello,
    Status: status,
    Ping: ping,
    Shutdown: shutdown,
}
