"""The ops of native mode, sessions, control and the allowlist.

Thin: each builds a :class:`~deskhand_d.native.service.Caller` for the requesting session and
client and hands over to :class:`~deskhand_d.native.service.NativeService`, or changes session
state directly (turns, modes). All refusals are DeskhandErrors with their own codes, and name
the next step in the words of the request's client (:func:`~deskhand_d.ops.context.words`).
The steps that widen what agents may do (``unlock``, ``apps_add``, ``grants_restore``, an
``answer`` to another client's question) are refused to an agent's client
(:func:`~deskhand_d.ops.context.for_the_person`).
Texts from the simulated desktop get its note as their first line here, at the edge, and Sky's
action receipt (which names its own tool) becomes our sentence, so that every client shows them
while the daemon's own parsers (stateIds, Jev) read the backend's text unchanged.
"""

from __future__ import annotations

import shlex

import msgspec

from deskhand_d.backends.desktop import mark_simulated
from deskhand_d.backends.mcpclient import toolcalls
from deskhand_d.consent.grants import SavedGrant
from deskhand_d.errors import BadRequest, ModeBusy
from deskhand_d.jev.access import missing_key_help
from deskhand_d.native.sessions import Session
from deskhand_d.ops.context import (
    Handler,
    RequestContext,
    caller,
    client_name,
    for_the_person,
    session_of,
    words,
)
from deskhand_d.protocol import (
    Action,
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
    PerformSecondaryAction,
    PressKey,
    QuestionPass,
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
    return msgspec.structs.replace(out, text=_shown(ctx, out.text))


async def action(ctx: RequestContext, req: Action) -> ResultBody:
    call = toolcalls.for_request(req)
    out = await ctx.services.native.act(
        caller(ctx), req.app, req.state_id, call, handoff=req.handoff
    )
    return msgspec.structs.replace(out, text=_shown(ctx, _receipt(ctx, req.app, out.text)))


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
    return await ctx.services.native.launch(caller(ctx), req.app)  # an action's reply


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
    return LockState(locked=True, by=ctx.services.native.gates.locked_by, cancelled=cancelled)


async def unlock(ctx: RequestContext, req: Unlock) -> ResultBody:
    for_the_person(ctx, "releasing the emergency stop", "deskhandctl unlock")
    ctx.services.native.gates.locked_by = ""
    return LockState(locked=False)


async def cancel(ctx: RequestContext, req: Cancel) -> ResultBody:
    if not ctx.cancel(req.request_id):
        raise BadRequest(f"request {req.request_id} is not in progress on this connection")
    return Done(detail=f"cancelled request {req.request_id}")


async def answer(ctx: RequestContext, req: Answer) -> ResultBody:
    asked_on = ctx.services.questions.asked_on(req.question_id)
    if asked_on is not None and asked_on != ctx.conn_id:
        # An agent's client relays its own person's answers (MCP elicitation, pi's dialogs),
        # never another client's question: that one is the person's to answer.
        for_the_person(
            ctx,
            "answering a question asked of another client",
            "deskhandctl questions",
            "it shows them every open question to answer",
        )
    by = ctx.services.questions.answer(ctx.conn_id, req.question_id, req.choice)
    return Done(detail="answered" if by == "client" else "answered from the console")


async def question_pass(ctx: RequestContext, req: QuestionPass) -> ResultBody:
    passed = ctx.services.questions.pass_on(ctx.conn_id, req.question_id)
    if passed == "no_console":
        return Done(detail="no console was open: the question closed unanswered")
    return Done(detail="the question waits for a console")


async def apps_list(ctx: RequestContext, req: AppsList) -> ResultBody:
    native = ctx.services.native
    return AllowedApps(
        apps=native.gates.allowed_apps(),
        in_apps_file=native.gates.apps_file.read(),
        file=str(native.gates.apps_file.path),
    )


async def apps_add(ctx: RequestContext, req: AppsAdd) -> ResultBody:
    for_the_person(
        ctx, f"adding {req.app!r} to the allowlist", f"deskhandctl apps add {shlex.quote(req.app)}"
    )
    native = ctx.services.native
    added = native.gates.apps_file.add(req.app)
    return AllowedApps(
        apps=native.gates.allowed_apps(),
        in_apps_file=native.gates.apps_file.read(),
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
    for_the_person(
        ctx,
        f"restoring the saved grant for {req.app!r}",
        f"deskhandctl grants restore {shlex.quote(req.app)}",
    )
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
    QuestionPass: question_pass,
    AppsList: apps_list,
    AppsAdd: apps_add,
    GrantsList: grants_list,
    GrantsRevoke: grants_revoke,
    GrantsRestore: grants_restore,
}
