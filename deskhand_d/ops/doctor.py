"""The ``doctor`` op: which backend, does its handshake work, does its surface match, does an
action path work (Sky: one read-only ``list_apps``), and is the desktop it needs there (for the
AT-SPI backend: the X display, XTEST, screenshots, the accessibility bus, or on Wayland the
session, the input path and screenshots; see :mod:`deskhand_d.backends.desktopprobe`).

Never sends an action and never an input event. Starting the backend process (if it is not
running yet), the MCP handshake and, for Sky, ``list_apps`` (read-only, through the action
queue and the audit log like any other call, and not while Deskhand is locked) are all it does
to the backend; the desktop checks only connect and read. ``backend`` in the request checks
another kind than the daemon's with a throwaway process, closed before the reply.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from functools import partial

import msgspec
import trio

from deskhand_d.backends import desktopprobe, launchers
from deskhand_d.backends import doctor as dx
from deskhand_d.backends.mcpclient.connection import BackendConnection, LaunchSpec, open_backend
from deskhand_d.errors import DeskhandError, DesktopUnreachable, Locked, OutcomeUnknown
from deskhand_d.native.service import Caller
from deskhand_d.native.sessions import Session
from deskhand_d.ops.context import Handler, RequestContext, client_name
from deskhand_d.protocol import (
    ActionProbe,
    DesktopCheck,
    Doctor,
    DoctorFinding,
    DoctorResult,
    ErrorBody,
    LaunchAttempt,
    ResultBody,
    SchemaDifference,
)

PROBE_TOOL = "list_apps"
CHECKS_TIMEOUT_S = 15.0


async def desktop_checks(
    env: Mapping[str, str], *, wayland_input: str = "portal"
) -> list[DesktopCheck]:
    """The AT-SPI backend's desktop checks, in a worker thread (python-xlib and jeepney block).

    An X server that accepts the connection and then never answers would hold the thread; the
    deadline lets doctor answer anyway and the abandoned thread ends with its connection.
    """
    with trio.move_on_after(CHECKS_TIMEOUT_S):
        found = await trio.to_thread.run_sync(
            partial(desktopprobe.run, dict(env), wayland_input=wayland_input),
            abandon_on_cancel=True,
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


async def doctor(ctx: RequestContext, req: Doctor) -> ResultBody:
    backend = ctx.services.backend
    configured: str = ctx.services.config.backend.kind
    wanted = req.backend
    if not wanted or wanted == configured or await _runs(backend, wanted):
        return await _diagnose(ctx, backend, configured)
    # Another kind than the daemon's: a throwaway connection, closed before we answer.
    cfg = msgspec.structs.replace(ctx.services.config.backend, kind=wanted)
    env, names = ctx.services.env, ctx.services.config.secrets.redact_env

    def launch() -> LaunchSpec:
        return launchers.resolve(cfg, env, names)

    async with open_backend(
        launch, call_timeout_s=cfg.call_timeout_s, start_timeout_s=cfg.start_timeout_s
    ) as other:
        result = await _diagnose(ctx, other, wanted)
    own = f"checked on request; the daemon itself uses {configured}"
    notice = f"{result.notice} ({own})" if result.notice else own
    return msgspec.structs.replace(result, notice=notice)


async def _runs(backend: BackendConnection, kind: str) -> bool:
    """Is the daemon's own backend (resolved) of this kind?"""
    try:
        return (await backend.resolve_launch()).kind == kind
    except DeskhandError:
        return False


async def _diagnose(
    ctx: RequestContext, backend: BackendConnection, configured: str
) -> DoctorResult:
    error: DeskhandError | None = None
    argv: list[str] = []
    notice = ""
    chosen = configured
    info = None
    spec: LaunchSpec | None = None
    try:
        spec = await backend.resolve_launch()
        argv, notice, chosen = list(spec.argv), spec.notice, spec.kind
        info = await backend.handshake()
    except DeskhandError as exc:
        error = exc
    running = backend.started_spec if info is not None else None
    if running is not None:
        argv = list(running.argv)
    # The desktop is checked wherever the AT-SPI backend serves or auto refused for it.
    checks: list[DesktopCheck] = []
    if chosen == "atspi" or isinstance(error, DesktopUnreachable):
        wayland_input = ctx.services.config.backend.wayland_input
        checks = await desktop_checks(ctx.services.env, wayland_input=wayland_input)
    found: list[dx.Finding] = []
    texts = [*backend.last_stderr, *backend.last_prelude]
    probe: ActionProbe | None = None
    if chosen == "sky":
        if info is None:
            probe = ActionProbe(
                tool=PROBE_TOOL,
                status="not_checked",
                detail="Sky did not finish its handshake, so no tool call was tried.",
            )
        else:
            probe, probe_text, hung = await _probe(ctx, backend)
            texts.append(probe_text)
            if hung is not None:
                found.append(hung)
    else:
        texts.append(backend.last_error_text)
    if error is not None:
        texts.append(error.message)
    attempts = backend.attempts if spec is not None and spec.recipe else []
    recipe = running.recipe if running is not None else (attempts[-1].recipe if attempts else "")
    choice = spec.recipe_choice if spec is not None else ""
    if error is not None:
        missing = dx.runtime_finding(error.data)
        if missing is not None:
            found.append(missing)
        if info is None and spec is not None and spec.recipe:
            if backend.last_timeout is not None:
                phase, waited = backend.last_timeout
                found.append(dx.start_hung_finding(phase, waited, backend.last_signals))
            killed = "SIGKILL" in backend.last_signals  # ours: never a launch constraint
            found += dx.exit_findings(backend.last_returncode, recipe, choice, sigkill_sent=killed)
            last = attempts[-1] if attempts else None
            if last is not None and last.detail.startswith("codex did not accept"):
                found.append(dx.recipe_finding(last.recipe, choice, last.detail))
    have = {f.code for f in found}
    found += [f for f in dx.findings(texts) if f.code not in have]
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
        findings=[DoctorFinding(code=f.code, evidence=f.evidence, remedy=f.remedy) for f in found],
        exit_status=backend.last_returncode,
        stderr_tail=[] if info is not None else backend.last_stderr[-10:],
        checks=checks,
        simulated=chosen == "sim",
        recipe=recipe,
        recipe_choice=choice if recipe else "",
        attempts=[
            LaunchAttempt(recipe=a.recipe, outcome=a.outcome, detail=a.detail) for a in attempts
        ],
        responsibility=backend.responsibility if chosen == "sky" else "",
        probe=probe,
    )


async def _probe(
    ctx: RequestContext, backend: BackendConnection
) -> tuple[ActionProbe, str, dx.Finding | None]:
    """One read-only ``list_apps`` through the queue and the audit log: (the probe, the text
    Sky answered for the failure checks, a finding for a call that hung)."""
    native = ctx.services.native
    caller = Caller(
        session=Session(session_id=f"doctor-{secrets.token_hex(6)}", name="", mode="native"),
        client=f"doctor ({client_name(ctx)})",
        pid=ctx.peer.pid,
        ask=None,  # list_apps asks nobody; a prompt would be answered cancel
    )
    try:
        out = await native.list_apps(caller, backend=backend)
    except Locked as exc:
        return _not_checked(f"Deskhand is locked, so nothing is sent: {exc.message}"), "", None
    except OutcomeUnknown as exc:
        if exc.data.get("cause") == "timeout":
            waited = backend.call_timeout_s
            probe = ActionProbe(
                tool=PROBE_TOOL,
                status="failed",
                detail=f"no answer within {waited:g} s (the Sky client was closed)",
            )
            return probe, "", dx.hung_finding(PROBE_TOOL, waited)
        return _failed(exc.message), exc.message, None
    except DeskhandError as exc:
        return _failed(f"{exc.code}: {exc.message}"), exc.message, None
    first = next((line.strip() for line in out.text.splitlines() if line.strip()), "")
    if out.is_error or dx.findings([out.text[:2000]]):
        return _failed(f"Sky answered with an error: {first[:300]}"), out.text[:2000], None
    lines = sum(1 for line in out.text.splitlines() if line.strip())
    detail = f"{PROBE_TOOL} answered ({lines} lines; apps not shown): tool calls reach Sky"
    return ActionProbe(tool=PROBE_TOOL, status="ok", detail=detail), "", None


def _not_checked(why: str) -> ActionProbe:
    return ActionProbe(tool=PROBE_TOOL, status="not_checked", detail=why)


def _failed(why: str) -> ActionProbe:
    return ActionProbe(tool=PROBE_TOOL, status="failed", detail=why)


HANDLERS: dict[type, Handler] = {Doctor: doctor}
