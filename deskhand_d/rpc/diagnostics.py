"""The ``doctor`` op: which backend, does its handshake work, does its surface match, and is
the desktop it needs there (for the AT-SPI backend: the X display, XTEST, screenshots, the
accessibility bus; see :mod:`deskhand_d.backends.deskcheck`).

Never sends a tool call and never an input event. Starting the backend process (if it is not
running yet) and the MCP handshake are the only things it does to the backend; the desktop
checks only connect and read.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING

import trio

from deskhand_d.backends import deskcheck
from deskhand_d.backends import doctor as dx
from deskhand_d.errors import DeskhandError, DesktopUnreachable
from deskhand_d.protocol import (
    DesktopCheck,
    Doctor,
    DoctorFinding,
    DoctorResult,
    ErrorBody,
    ResultBody,
    SchemaDifference,
)
from deskhand_d.rpc.handlers import Handler

if TYPE_CHECKING:
    from deskhand_d.rpc.connection import Connection

CHECKS_TIMEOUT_S = 15.0


async def desktop_checks(env: Mapping[str, str]) -> list[DesktopCheck]:
    """The AT-SPI backend's desktop checks, in a worker thread (python-xlib and jeepney block).

    An X server that accepts the connection and then never answers would hold the thread; the
    deadline lets doctor answer anyway and the abandoned thread ends with its connection.
    """
    with trio.move_on_after(CHECKS_TIMEOUT_S):
        found = await trio.to_thread.run_sync(
            partial(deskcheck.run, dict(env)), abandon_on_cancel=True
        )
        return [
            DesktopCheck(name=c.name, status=c.status, detail=c.detail, fix=c.fix) for c in found
        ]
    return [
        DesktopCheck(
            name="display",
            status="failed",
            detail=f"the desktop checks did not finish within {CHECKS_TIMEOUT_S:g} s.",
            fix="check that the X server on DISPLAY and the session bus respond (a hung X "
            "server holds every X client), then run doctor again.",
        )
    ]


async def doctor(conn: Connection, req: Doctor) -> ResultBody:
    backend = conn.hub.backend
    configured: str = conn.hub.config.backend.kind
    if backend is None:
        return DoctorResult(
            backend=configured,
            argv=[],
            notice="",
            handshake_ok=False,
            error=ErrorBody(code="backend_unavailable", message="the daemon has no backend"),
        )
    error: DeskhandError | None = None
    argv: list[str] = []
    notice = ""
    chosen = configured
    info = None
    try:
        spec = backend.resolve_launch()
        argv, notice, chosen = list(spec.argv), spec.notice, spec.kind
        info = await backend.handshake()
    except DeskhandError as exc:
        error = exc
    # The desktop is checked wherever the AT-SPI backend serves or auto refused for it.
    checks: list[DesktopCheck] = []
    if chosen == "atspi" or isinstance(error, DesktopUnreachable):
        checks = await desktop_checks(conn.hub.env)
    texts = [*backend.last_stderr, backend.last_error_text]
    if error is not None:
        texts.append(error.message)
    label = configured if chosen == configured else f"{configured} -> {chosen}"
    return DoctorResult(
        backend=label,
        argv=argv,
        notice=notice,
        handshake_ok=info is not None,
        error=None
        if error is None
        else ErrorBody(code=error.code, message=error.message, data=error.data),
        server_name=info.name if info else "",
        server_version=info.version if info else "",
        protocol_version=info.protocol_version if info else "",
        pid=info.pid if info else None,
        tools=[str(t.get("name")) for t in info.tools] if info else [],
        schema_differences=[
            SchemaDifference(tool=d.tool, problem=d.problem)
            for d in dx.schema_differences(info.tools)
        ]
        if info
        else [],
        findings=[
            DoctorFinding(code=f.code, evidence=f.evidence, remedy=f.remedy)
            for f in dx.findings(texts)
        ],
        exit_status=backend.last_returncode,
        stderr_tail=[] if info is not None else backend.last_stderr[-10:],
        checks=checks,
        simulated=chosen == "sim",
    )


HANDLERS: dict[type, Handler] = {Doctor: doctor}
