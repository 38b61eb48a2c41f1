"""The connection ops: ``hello``, ``status``, ``ping``, ``shutdown``.

Each op takes the request's context and its decoded request and returns a result body, or
raises a :class:`~deskhand_d.errors.DeskhandError`. The other op groups (native, Jev, doctor)
live in their own modules; :mod:`deskhand_d.ops.table` joins them.
"""

from __future__ import annotations

import os

from deskhand_d import __version__
from deskhand_d.errors import BadRequest, ProtocolMismatch
from deskhand_d.ops.context import Handler, RequestContext
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


async def hello(ctx: RequestContext, req: Hello) -> ResultBody:
    if ctx.client is not None:
        raise BadRequest("hello was already exchanged on this connection; send it only once")
    if req.protocol != PROTOCOL_VERSION:
        raise ProtocolMismatch(
            f"this daemon speaks protocol {PROTOCOL_VERSION}, the client asked for "
            f"{req.protocol}; upgrade the older of the two",
            data={"daemon_protocol": PROTOCOL_VERSION},
        )
    session, resumed = ctx.services.sessions.open(req.session)
    ctx.greet(req.client, can_answer_questions=req.can_answer_questions, session=session)
    return Welcome(
        daemon_version=__version__,
        protocol=PROTOCOL_VERSION,
        session_id=session.session_id,
        pid=os.getpid(),
        session_name=session.name,
        resumed=resumed,
        mode=session.mode,
    )


async def status(ctx: RequestContext, req: Status) -> ResultBody:
    return ctx.services.status()


async def ping(ctx: RequestContext, req: Ping) -> ResultBody:
    return Pong(data=req.data)


async def shutdown(ctx: RequestContext, req: Shutdown) -> ResultBody:
    # The daemon is asked to stop only after this reply has been sent.
    ctx.after_reply(stop_daemon=True)
    return ShuttingDownResult()


HANDLERS: dict[type[Request], Handler] = {
    Hello: hello,
    Status: status,
    Ping: ping,
    Shutdown: shutdown,
}
