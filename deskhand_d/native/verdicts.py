"""What a backend result means for the session: the refusals decided from its kind.

A stop notice, a declined or cancelled approval, an unauthenticated sender and a partial
update where a full tree was needed each become their own error, with the session updated
first (a stop or a decline bans launching that app for the rest of the turn).
"""

from __future__ import annotations

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
    data = {"app": app, "reason": short.reason}
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
