"""What a backend result means for the session: the refusals decided from its kind.

A stop notice, a declined or cancelled approval, an unauthenticated sender and a partial
update where a full tree was needed each become their own error, with the session updated
first (a stop or a decline bans launching that app for the rest of the turn).
"""

from __future__ import annotations

from typing import Any

from deskhand_d import errors as E
from deskhand_d.mcp.connection import CallResult
from deskhand_d.mcp.results import Kind, Shortfall
from deskhand_d.native.sessions import Session
from deskhand_d.words import PROTOCOL, Words


def raise_for_kind(
    session: Session, app: str, res: CallResult, *, observing: bool, words: Words = PROTOCOL
) -> None:
    kind = res.output.kind
    if kind is Kind.INPUT_STOPPED:
        raise_input_stopped(session, app, res)
    if kind is Kind.SESSION_STOPPED:
        session.launch_banned.add(app)
        session.invalidate("the person stopped the session")
        raise E.SessionStopped(
            "the person stopped computer use for this turn; stop and tell them, and wait for "
            "their next message",
            data={"app": app},
            delivery="refused" if observing else "unknown",
        )
    if kind is Kind.APPROVAL_DECLINED:
        session.launch_banned.add(app)
        person = words.person()
        raise E.ApprovalDeclined(
            f"{person[:1].upper()}{person[1:]} declined the backend's approval for {app!r}, so "
            f"nothing ran. Leave {app!r} alone for the rest of this turn: in a new turn "
            f"({words.new_turn()}) the backend asks again",
            data={"app": app, "approval_reason": res.approval_reason},
            delivery="refused",
        )
    if kind is Kind.APPROVAL_CANCELLED:
        raise E.ApprovalCancelled(
            f"the approval for {app!r} was cancelled ({res.approval_reason or 'no answer'}); "
            "nothing ran",
            data={"app": app, "approval_reason": res.approval_reason},
            delivery="refused",
        )
    if kind is Kind.NOT_AUTHENTICATED:
        raise E.BackendUnavailable(
            "the backend refuses tool calls from this process (not authenticated); run "
            "`deskhandctl doctor`",
            delivery="refused",
        )
    if kind is Kind.PARTIAL_UPDATE and observing:
        raise E.BackendError(
            "the backend sent a partial update instead of a full tree; observe again",
            data={"app": app},
            delivery="dispatched",
        )


def _count(short: Shortfall) -> E.Count | None:
    if short.done is None or short.total is None:
        return None
    return E.Count(short.done, short.total, short.unit)


def raise_input_stopped(session: Session, app: str, res: CallResult) -> None:
    """The backend stopped its input part-way (or before it began): say exactly how far."""
    short = res.output.shortfall
    assert short is not None
    count = _count(short)
    sent = f"; {count.describe()} had been sent" if count is not None else ""
    session.invalidate("the last action was stopped part-way")
    data: dict[str, Any] = {"app": app, "reason": short.reason}
    noted = _noted(session, app, short, count, sent, data)
    if noted is not None:
        raise noted
    if short.state == "unknown":
        session.launch_banned.add(app)
        raise E.OutcomeUnknown(
            f"{app!r} went away or failed while the action was being sent{sent}; what it did "
            "is unknown. Observe it again (nothing is retried)",
            data=data,
            delivered=count,
        )
    if short.reason == "target_gone":
        raise E.InputTargetChanged(
            f"{app!r} quit before the input could be sent; nothing was sent. Observe it again",
            data=data,
            delivery="refused",
            delivered=count,
        )
    where = (
        "another program's window would have received it"
        if short.reason == "target_changed"
        else "it was stopped"
    )
    if short.state == "refused":
        raise E.InputTargetChanged(
            f"no input was sent to {app!r}: {where}. Bring the app back to the front (or "
            "uncover it) and observe it again",
            data=data,
            delivery="refused",
            delivered=count,
        )
    raise E.InputTargetChanged(
        f"the input to {app!r} was stopped part-way because {where}{sent}; nothing more was "
        "sent. Observe the app again to see what it holds now",
        data=data,
        delivery="partial",
        delivered=count,
    )


#: The reply's error code for each note of Deskhand's Linux backend (for the audit log).
NOTE_CODES: dict[str, str] = {
    "app_exited": E.AppExited.code,
    "not_accessible": E.AppNotAccessible.code,
    "focus_elsewhere": E.FocusOutsideApp.code,
    "modal_dialog": E.BlockedByDialog.code,
    "no_effect": E.NoEffect.code,
    "target_changed": E.InputTargetChanged.code,
    "target_gone": E.InputTargetChanged.code,
}

_DURING = {
    "reading": "while its window was being read",
    "starting": "right after it was started, before it showed a window",
    "acting": "while the action's input was being sent",
}


def _noted(
    session: Session,
    app: str,
    short: Shortfall,
    count: E.Count | None,
    sent: str,
    data: dict[str, Any],
) -> E.DeskhandError | None:
    """The error for the notes Deskhand's Linux backend gives (see
    ``deskhand_d.backends.atspi.notes``), or None for the input guard's own stops."""
    reason = short.reason
    if reason == "app_exited":
        how = f" ({short.exit})" if short.exit else ""
        during = _DURING.get(short.during, "while the backend was using it")
        data.update(exit=short.exit, during=short.during)
        if short.state == "unknown":
            session.launch_banned.add(app)
            return E.AppExited(
                f"{app!r} exited{how} {during}{sent}; what it did with the input is unknown "
                "and nothing is retried. Tell the person: unsaved work in it may be lost. "
                "Observe it again only if they want it restarted",
                data=data,
                delivery="unknown",
                delivered=count,
            )
        return E.AppExited(
            f"{app!r} exited{how} {during}; nothing was sent to it. Observing it again starts "
            "it anew (tell the person it crashed: unsaved work in it may be lost)",
            data=data,
            delivery="refused",
        )
    if reason == "not_accessible":
        data["hint"] = short.hint
        if short.hint == "restart_chromium":
            how = (
                "it is a Chromium-based app (a browser or an Electron app) that was started "
                "without --force-renderer-accessibility, and such apps only build their "
                "accessibility tree when started with it"
            )
        else:
            how = (
                "it did not join the desktop's accessibility bus when it started (apps decide "
                "that once, at start)"
            )
        return E.AppNotAccessible(
            f"{app!r} is running, but Deskhand can read nothing of it: {how}. Nothing was sent. "
            f"Ask the person to save their work and quit {app!r}; observing it then starts it "
            "in a way Deskhand can read",
            data=data,
        )
    if reason == "focus_elsewhere":
        return E.FocusOutsideApp(
            f"no keys were sent: the keyboard focus is not on an element inside {app!r}'s "
            "window, so the keys would have gone elsewhere. Click the field to type into by "
            "its element index (that puts the caret there), then type again",
            data=data,
        )
    if reason == "modal_dialog":
        data["dialog"] = short.dialog
        return E.BlockedByDialog(
            f"{app!r} shows the dialog {short.dialog!r}, which takes all input until it is "
            "answered, so nothing was sent to the element behind it. Answer or close the "
            "dialog first (its buttons are in the latest tree), then act again",
            data=data,
        )
    if reason == "no_effect":
        data["what"] = short.what
        what = short.what or "state"
        return E.NoEffect(
            f"the action reached {app!r}, but reading the element back shows its {what} "
            "unchanged: the app did not take it. Setting a value directly is not something "
            "every app honours: click the element by its index and type the text instead, "
            "then check the new tree",
            data=data,
        )
    return None
