"""Handlers for native mode, sessions, control and the allowlist.

Thin: each builds a :class:`~deskhand_d.native.service.Caller` for the requesting session and
client and hands over to :class:`~deskhand_d.native.service.NativeService`, or changes session
state directly (turns, modes). All refusals are DeskhandErrors with their own codes, and name
the next step in the words of the connection's client (:func:`words`). Texts from the simulated
desktop get its note as their first line here, at the edge, and Sky's action receipt (which
names its own tool) becomes our sentence, so that every client shows them while the daemon's own
parsers (stateIds, Jev) read the backend's text unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from deskhand_d.backends.desktop import mark_simulated
from deskhand_d.consent.grants import SavedGrant
from deskhand_d.consent.model import Choice as ConsentChoice
from deskhand_d.errors import BadRequest, DeskhandError, LaunchBanned, ModeBusy
from deskhand_d.jev.access import missing_key_help
from deskhand_d.mcp import approvals as ap
from deskhand_d.native.service import Caller, NativeService, Outcome
from deskhand_d.native.sessions import Session
from deskhand_d.native.states import Use, check_click_target
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
from deskhand_d.rpc.handlers import Handler
from deskhand_d.words import Words, for_client

if TYPE_CHECKING:
    from deskhand_d.rpc.connection import Connection


def _native(conn: Connection) -> NativeService:
    if conn.hub.native is None:
        raise DeskhandError("native mode is not available in this daemon")
    return conn.hub.native


def _session(conn: Connection) -> Session:
    if conn.session is None:
        raise BadRequest(
            "this connection has no session (never said hello, or its session was closed); "
            "reconnect to start one"
        )
    return conn.session


def words(conn: Connection) -> Words:
    """How messages to this connection's client name the next step."""
    session = conn.session.name if conn.session is not None else ""
    kind = conn.client.kind if conn.client else "other"
    return for_client(kind, session=session, uid=conn.peer.uid)


def _caller(conn: Connection, request_id: int) -> Caller:
    questions = conn.hub.questions
    ask = consent = None
    if conn.can_answer_questions and questions is not None:

        async def ask(req: ap.Confirmation, app: str) -> Literal["accept", "decline"]:
            choice = await questions.ask(
                conn, request_id=request_id, kind="backend_approval", text=req.message, app=app
            )
            return "accept" if choice == "accept" else "decline"

        async def consent(text: str, choices: tuple[ConsentChoice, ...], app: str) -> ConsentChoice:
            choice = await questions.ask(
                conn,
                request_id=request_id,
                kind="app_consent",
                text=text,
                app=app,
                choices=choices,
            )
            return choice if choice in ("once", "always") else "deny"

    name = conn.client.name if conn.client else "?"
    pid = conn.peer.pid
    return Caller(
        session=_session(conn),
        client=name,
        pid=pid,
        ask=ask,
        consent=consent,
        words=words(conn),
    )


def _shown(conn: Connection, text: str) -> str:
    """The backend's text as the client gets it: marked when the simulator made it up."""
    return mark_simulated(text) if conn.hub.simulated else text


async def list_apps(conn: Connection, req: ListApps) -> ResultBody:
    out = await _native(conn).list_apps(_caller(conn, req.id))
    return AppList(text=_shown(conn, out.text))


async def get_app_state(conn: Connection, req: GetAppState) -> ResultBody:
    out = await _native(conn).observe(_caller(conn, req.id), req.app)
    assert out.state_id is not None
    return Observation(
        app=req.app,
        state_id=out.state_id,
        text=_shown(conn, out.text),
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


async def action(conn: Connection, req: Action) -> ResultBody:
    tool, args, use = _action_args(req)
    out: Outcome = await _native(conn).act(
        _caller(conn, req.id), tool, req.app, req.state_id, args, use, handoff=req.handoff
    )
    return ActionDone(
        app=req.app,
        tool=tool,
        delivery=out.delivery,
        ok=out.ok,
        text=_shown(conn, _receipt(conn, req.app, out.text)),
        state_id=out.state_id,
        screenshot=out.screenshot,
        screenshot_mime=out.screenshot_mime,
        approval_reason=out.approval_reason,
    )


RECEIPT = "Action completed. Call `get_app_state` to fetch the updated UI state."


def _receipt(conn: Connection, app: str, text: str) -> str:
    """Sky's receipt line for an action answered without a tree names its own tool; ours
    names the client's way to observe (such a reply carries no stateId either)."""
    if RECEIPT not in text:
        return text
    ours = (
        f"Action completed; no tree came back with it. Observe {app!r} again "
        f"({words(conn).observe(app)}) to see what it did."
    )
    return "\n".join(ours if line.strip() == RECEIPT else line for line in text.split("\n"))


async def launch_app(conn: Connection, req: LaunchApp) -> ResultBody:
    native = _native(conn)
    session = _session(conn)
    native.check_unlocked()
    native.check_app(req.app)
    native.check_recovery(session, req.app, observing=False)
    if req.app in session.launch_banned:
        raise LaunchBanned(
            f"launching {req.app!r} is off for the rest of this turn (after a stop, a declined "
            "approval or an unknown outcome there); the person decides what happens next"
        )
    detail = await native.launch(_caller(conn, req.id), req.app)
    return Done(detail=detail)


async def turn_begin(conn: Connection, req: TurnBegin) -> ResultBody:
    _session(conn).new_turn("a new turn began")
    return Done(detail=f"turn {_session(conn).turn}")


async def turn_end(conn: Connection, req: TurnEnd) -> ResultBody:
    _session(conn).new_turn("the turn ended")
    return Done(detail=f"turn {_session(conn).turn}")


async def session_close(conn: Connection, req: SessionClose) -> ResultBody:
    session = _session(conn)
    sessions = conn.hub.sessions
    assert sessions is not None
    sessions.close(session)
    cancelled = _native(conn).queue.cancel_session(session.session_id)
    for other in conn.hub.connections.values():
        if other.session is session:
            other.session = None  # their next native op says to reconnect
    return Done(detail=f"session closed; {cancelled} queued request(s) cancelled")


def _mode_state(conn: Connection, s: Session) -> ModeState:
    detail = ""
    if s.mode_reason == "missing_jev_key":
        problem = conn.hub.jev.problem if conn.hub.jev is not None else ""
        detail = (
            "jev mode needs a Jev key, so this session stays in native mode: "
            + missing_key_help(problem, words(conn).set_mode("jev"), conn.hub.managed_by)
        )
    return ModeState(mode=s.mode, reason=s.mode_reason, detail=detail)


async def mode_get(conn: Connection, req: ModeGet) -> ResultBody:
    return _mode_state(conn, _session(conn))


async def mode_set(conn: Connection, req: ModeSet) -> ResultBody:
    s = _session(conn)
    if s.running_task:
        raise ModeBusy("this session is running a task; cancel it or let it finish first")
    sessions = conn.hub.sessions
    assert sessions is not None
    if req.mode == "jev" and not sessions.jev_key_present:
        s.mode, s.mode_reason = "native", "missing_jev_key"
    else:
        s.mode, s.mode_reason = req.mode, ""
    s.mode_chosen = True
    s.retire("the mode changed")  # state ids and handoff; never touches backend or network
    return _mode_state(conn, s)


async def stop(conn: Connection, req: Stop) -> ResultBody:
    name = conn.client.name if conn.client else "?"
    by = f"{name} (pid {conn.peer.pid})"
    cancelled = await _native(conn).emergency_stop(by)
    return LockState(locked=True, by=_native(conn).locked_by, cancelled=cancelled)


async def unlock(conn: Connection, req: Unlock) -> ResultBody:
    _native(conn).locked_by = ""
    return LockState(locked=False)


async def cancel(conn: Connection, req: Cancel) -> ResultBody:
    scope = conn.request_scopes.get(req.request_id)
    if scope is None:
        raise BadRequest(f"request {req.request_id} is not in progress on this connection")
    scope.cancel()
    return Done(detail=f"cancelled request {req.request_id}")


async def answer(conn: Connection, req: Answer) -> ResultBody:
    if conn.hub.questions is None:
        raise BadRequest("no questions are open")
    conn.hub.questions.answer(conn, req.question_id, req.choice)
    return Done(detail="answered")


async def apps_list(conn: Connection, req: AppsList) -> ResultBody:
    native = _native(conn)
    return AllowedApps(
        apps=native.allowed_apps(),
        in_apps_file=native.apps_file.read(),
        file=str(native.apps_file.path),
    )


async def apps_add(conn: Connection, req: AppsAdd) -> ResultBody:
    native = _native(conn)
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


async def grants_list(conn: Connection, req: GrantsList) -> ResultBody:
    consent = _native(conn).consent
    # as the daemon enforces them: a revocation the disk could not take yet shows as revoked
    return Grants(grants=_grant_infos(consent.saved()), file=str(consent.store.path))


async def grants_revoke(conn: Connection, req: GrantsRevoke) -> ResultBody:
    native = _native(conn)
    name = conn.client.name if conn.client else "?"
    changed, cancelled, problem = await native.revoke(req.app, f"{name} (pid {conn.peer.pid})")
    return Grants(
        grants=_grant_infos(changed),
        file=str(native.consent.store.path),
        cancelled=cancelled,
        not_saved=problem,
    )


async def grants_restore(conn: Connection, req: GrantsRestore) -> ResultBody:
    consent = _native(conn).consent
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
