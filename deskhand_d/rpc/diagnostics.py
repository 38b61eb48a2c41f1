"""The ``doctor`` op: which backend, does its handshake work, does its surface match.

Never sends a tool call. Starting the backend process (if it is not running yet) and the MCP
handshake are the only things it does to the backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from deskhand_d.backends import doctor as dx
from deskhand_d.errors import DeskhandError
from deskhand_d.protocol import (
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
    )


HANDLERS: dict[type, Handler] = {Doctor: doctor}
