"""The ops of native mode, sessions, control and the allowlist.

Thin: each builds a :class:`~deskhand_d.native.service.Caller` for the requesting session and
client and hands over to :class:`~deskhand_d.native.service.NativeService`, or changes session
state directly (turns, modes). All refusals are DeskhandErrors with their own codes, and name
the next step in the words of the request's client (:func:`~deskhand_d.ops.context.words`).
Texts from the simulated desktop get its note as their first line here, at the edge, and Sky's
action receipt (which names its own tool) becomes our sentence, so that every client shows them
while the daemon's own parsers (stateIds, Jev) read the backend's text unchanged.
"""

from __future__ import annotations

from typing import Any

from deskhand_d.backends.desktop import mark_simulated
from deskhand_d.consent.grants import SavedGrant
from deskhand_d.errors import BadRequest, LaunchBanned, ModeBusy
from deskhand_d.jev.access import missing_key_help
from deskhand_d.native.service import Outcome
from deskhand_d.native.sessions import Session
from deskhand_d.native.states import Use, check_click_target
from deskhand_d.ops.context import (
    Handler,
    RequestContext,
    caller,
    client_name,
    session_of,
    words,
)
from deskhand_d.protocol import (
    Action,
    ActionDone,
    AllowedApps,
    Answer,
    AppList,
    AppsAdd,
    AppsList,
    Cancel,
    Click,
    Done,
    Drag,
    GetAppState,
    GrantInfo,
    Grants,
    GrantsList,
    GrantsRestore,
    GrantsRevoke,
    LaunchApp,
    ListApps,
    LockState,
    ModeGet,
    ModeSet,
    ModeState,
    Observation,
    PerformSecondaryAction,
    PressKey,
    ResultBody,
    Scroll,
    SelectText,
    SessionClose,
    SetValue,
    Stop,
    TurnBegin,
    TurnEnd,
    TypeText,
    Unlock,
)


def _shown(ctx: RequestContext, text: str) -> str:
    """The backend's text as the client gets it: marked when the simulator made it up."""
    return mark_simulated(text) if ctx.services.simulated else text


async def list_apps(ctx: RequestContext, req: ListApps) -> ResultBody:
    out = await ctx.services.native.list_apps(caller(ctx))
    return AppList(text=_shown(ctx, out.text))


async def get_app_state(ctx: RequestContext, req: GetAppState) -> ResultBody:
    out = await ctx.services.native.observe(caller(ctx), req.app)
    assert out.state_id is not None
    return Observation(
        app=req.app,
        state_id=out.state_id,
        text=_shown(ctx, out.text),
        screenshot=out.screenshot,
        screenshot_mime=out.screenshot_mime,
        approval_reason=out.approval_reason,
    )


def _action_args(req: Action) -> tuple[str, dict[str, Any], Use]:
    """The backend tool, its arguments (no stateId: it never leaves the daemon), and the use."""
    if isinstance(req, Click):
        check_click_target(req.element_index, req.x, req.y)
        args: dict[str, Any] = {}
        points: tuple[tuple[float, float], ...] = ()
        if req.element_index is not None:
            args["element_index"] = req.element_index
        else:
            assert req.x is not None and req.y is not None  # check_click_target made sure
            args["x"], args["y"] = req.x, req.y
            points = ((req.x, req.y),)
        if req.click_count is not None:
            args["click_count"] = req.click_count
        if req.mouse_button is not None:
            args["mouse_button"] = req.mouse_button
        use = Use(req.app, req.element_index, coordinates=bool(points), points=points)
        return "click", args, use
    if isinstance(req, Drag):
        args = {"from_x": req.from_x, "from_y": req.from_y, "to_x": req.to_x, "to_y": req.to_y}
        ends = ((req.from_x, req.from_y), (req.to_x, req.to_y))
        return "drag", args, Use(req.app, None, coordinates=True, points=ends)
    if isinstance(req, PerformSecondaryAction):
        args = {"element_index": req.element_index, "action": req.action}
        return "perform_secondary_action", args, Use(req.app, req.element_index)
    if isinstance(req, PressKey):
        return "press_key", {"key": req.key}, Use(req.app)
    if isinstance(req, Scroll):
        args = {"element_index": req.element_index, "direction": req.direction}
        if req.pages is not None:
            args["pages"] = req.pages
        return "scroll", args, Use(req.app, req.element_index)
    if isinstance(req, SelectText):
        args = {"element_index": req.element_index, "text": req.text}
        for key in ("prefix", "suffix", "selection"):
            if getattr(req, key) is not None:
                args[key] = getattr(req, key)
        return "select_text", args, Use(req.app, req.element_index)
    if isinstance(req, SetValue):
        args = {"element_index": req.element_index, "value": req.value}
        return "set_value", args, Use(req.app, req.element_index)
    return "type_text", {"text": req.text}, Use(req.app)


async def action(ctx: RequestContext, req: Action) -> ResultBody:
    tool, args, use = _action_args(req)
    out: Outcome = await ctx.services.native.act(
        caller(ctx), tool, req.app, req.state_id, args, use, handoff=req.handoff
    )
    return ActionDone(
        app=req.app,
        tool=tool,
        delivery=out.delivery,
        ok=out.ok,
        text=_shown(ctx, _receipt(ctx, req.app, out.text)),
        state_id=out.state_id,
        screenshot=out.screenshot,
        screenshot_mime=out.screenshot_mime,
        approval_reason=out.approval_reason,
    )


RECEIPT = "Action completed. Call `get_app_state` to fetch the updated UI state."


def _receipt(ctx: RequestContext, app: str, text: str) -> str:
    """Sky's receipt line for an action answered without a tree names its own tool; ours
    names the client's way to observe (such a reply carries no stateId either)."""
    if RECEIPT not in text:
        return text
    ours = (
        f"Action completed; no tree came back with it. Observe {app!r} again "
        f"({words(ctx).observe(app)}) to see what it did."
    )
    return "\n".join(ours if line.strip() == RECEIPT else line for line in text.split("\n"))


async def launch_app(ctx: RequestContext, req: LaunchApp) -> ResultBody:
    native = ctx.services.native
    session = session_of(ctx)
    native.check_unlocked()
    native.check_app(req.app)
    native.check_recovery(session, req.app, observing=False)
    if req.app in session.launch_banned:
        raise LaunchBanned(
            f"launching {req.app!r} is off for the rest of this turn (after a stop, a declined "
            "approval or an unknown outcome there); the person decides what happens next"
        )
    detail = await native.launch(caller(ctx), req.app)
    return Done(detail=detail)


async def turn_begin(ctx: RequestContext, req: TurnBegin) -> ResultBody:
    session_of(ctx).new_turn("a new turn began")
    return Done(detail=f"turn {session_of(ctx).turn}")


async def turn_end(ctx: RequestContext, req: TurnEnd) -> ResultBody:
    session_of(ctx).new_turn("the turn ended")
    return Done(detail=f"turn {session_of(ctx).turn}")


async def session_close(ctx: RequestContext, req: SessionClose) -> ResultBody:
    session = session_of(ctx)
    ctx.services.sessions.close(session)
    cancelled = ctx.services.native.queue.cancel_session(session.session_id)
    for other in ctx.services.hub.connections.values():
        if other.session is session:
            other.session = None  # their next native op says to reconnect
    return Done(detail=f"session closed; {cancelled} queued request(s) cancelled")


def _mode_state(ctx: RequestContext, s: Session) -> ModeState:
    detail = ""
    if s.mode_reason == "missing_jev_key":
        problem = ctx.services.jev.problem
        detail = (
            "jev mode needs a Jev key, so this session stays in native mode: "
            + missing_key_help(problem, words(ctx).set_mode("jev"), ctx.services.managed_by)
        )
    return ModeState(mode=s.mode, reason=s.mode_reason, detail=detail)


async def mode_get(ctx: RequestContext, req: ModeGet) -> ResultBody:
    return _mode_state(ctx, session_of(ctx))


async def mode_set(ctx: RequestContext, req: ModeSet) -> ResultBody:
    s = session_of(ctx)
    if s.running_task:
        raise ModeBusy("this session is running a task; cancel it or let it finish first")
    if req.mode == "jev" and not ctx.services.sessions.jev_key_present:
        s.mode, s.mode_reason = "native", "missing_jev_key"
    else:
        s.mode, s.mode_reason = req.mode, ""
    s.mode_chosen = True
    s.retire("the mode changed")  # state ids and handoff; never touches backend or network
    return _mode_state(ctx, s)


async def stop(ctx: RequestContext, req: Stop) -> ResultBody:
    by = f"{client_name(ctx)} (pid {ctx.peer.pid})"
    cancelled = await ctx.services.native.emergency_stop(by)
    return LockState(locked=True, by=ctx.services.native.locked_by, cancelled=cancelled)


async def unlock(ctx: RequestContext, req: Unlock) -> ResultBody:
    ctx.services.native.locked_by = ""
    return LockState(locked=False)


async def cancel(ctx: RequestContext, req: Cancel) -> ResultBody:
    if not ctx.cancel(req.request_id):
        raise BadRequest(f"request {req.request_id} is not in progress on this connection")
    return Done(detail=f"cancelled request {req.request_id}")


async def answer(ctx: RequestContext, req: Answer) -> ResultBody:
    ctx.services.questions.answer(ctx.conn_id, req.question_id, req.choice)
    return Done(detail="answered")


async def apps_list(ctx: RequestContext, req: AppsList) -> ResultBody:
    native = ctx.services.native
    return AllowedApps(
        apps=native.allowed_apps(),
        in_apps_file=native.apps_file.read(),
        file=str(native.apps_file.path),
    )


async def apps_add(ctx: RequestContext, req: AppsAdd) -> ResultBody:
    native = ctx.services.native
    added = native.apps_file.add(req.app)
    return AllowedApps(
        apps=native.allowed_apps(),
        in_apps_file=native.apps_file.read(),
        file=added.path,
        added=added.added,
    )


def _grant_infos(grants: list[SavedGrant]) -> list[GrantInfo]:
    return [
        GrantInfo(
            app=g.app,
            path=g.path,
            kind=g.kind,
            signer=g.signer,
            detail=g.detail,
            granted_at=g.granted_at,
            revoked_at=g.revoked_at,
            restored_at=g.restored_at,
        )
        for g in grants
    ]


async def grants_list(ctx: RequestContext, req: GrantsList) -> ResultBody:
    consent = ctx.services.native.consent
    # as the daemon enforces them: a revocation the disk could not take yet shows as revoked
    return Grants(grants=_grant_infos(consent.saved()), file=str(consent.store.path))


async def grants_revoke(ctx: RequestContext, req: GrantsRevoke) -> ResultBody:
    native = ctx.services.native
    by = f"{client_name(ctx)} (pid {ctx.peer.pid})"
    changed, cancelled, problem = await native.revoke(req.app, by)
    return Grants(
        grants=_grant_infos(changed),
        file=str(native.consent.store.path),
        cancelled=cancelled,
        not_saved=problem,
    )


async def grants_restore(ctx: RequestContext, req: GrantsRestore) -> ResultBody:
    consent = ctx.services.native.consent
    unsaved = consent.restore_now(req.app)  # a revocation the file never took: just drop it
    if unsaved:
        return Grants(grants=_grant_infos(unsaved), file=str(consent.store.path))
    changed = await consent.store.mutate(lambda f: f.restore(req.app))
    return Grants(grants=_grant_infos(changed), file=str(consent.store.path))


HANDLERS: dict[type, Handler] = {
    ListApps: list_apps,
    GetAppState: get_app_state,
    LaunchApp: launch_app,
    Click: action,
    Drag: action,
    PerformSecondaryAction: action,
    PressKey: action,
    Scroll: action,
    SelectText: action,
    SetValue: action,
    TypeText: action,
    TurnBegin: turn_begin,
    SessionClose: session_close,
    TurnEnd: turn_end,
    ModeGet: mode_get,
    ModeSet: mode_set,
    Stop: stop,
    Unlock: unlock,
    Cancel: cancel,
    Answer: answer,
    AppsList: apps_list,
    AppsAdd: apps_add,
    GrantsList: grants_list,
    GrantsRevoke: grants_revoke,
    GrantsRestore: grants_restore,
}
