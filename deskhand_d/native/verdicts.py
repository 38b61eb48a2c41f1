"""What a backend result means for the session: the refusals decided from its kind.

A stop notice, a declined or cancelled approval, an unauthenticated sender and a partial
update where a full tree was needed each become their own error, with the session updated
first (a stop or a decline bans launching that app for the rest of the turn).
"""

from __future__ import annotations

from deskhand_d import errors as E
from deskhand_d.mcp.connection import CallResult
from deskhand_d.mcp.results import Kind
from deskhand_d.native.sessions import Session


def raise_for_kind(session: Session, app: str, res: CallResult, *, observing: bool) -> None:
    kind = res.output.kind
    if kind is Kind.SESSION_STOPPED:
        session.launch_banned.add(app)
        session.invalidate("the person stopped the session")
        raise E.SessionStopped(
            "the person stopped computer use for this turn; stop and tell them, and wait for "
            "their next message",
            data={"delivery": "refused" if observing else "unknown", "app": app},
        )
    if kind is Kind.APPROVAL_DECLINED:
        session.launch_banned.add(app)
        raise E.ApprovalDeclined(
            f"the person declined the approval for {app!r}; do not ask again this turn",
            data={"delivery": "refused", "app": app, "approval_reason": res.approval_reason},
        )
    if kind is Kind.APPROVAL_CANCELLED:
        raise E.ApprovalCancelled(
            f"the approval for {app!r} was cancelled ({res.approval_reason or 'no answer'}); "
            "nothing ran",
            data={"delivery": "refused", "app": app, "approval_reason": res.approval_reason},
        )
    if kind is Kind.NOT_AUTHENTICATED:
        raise E.BackendUnavailable(
            "the backend refuses tool calls from this process (not authenticated); run "
            "`deskhandctl doctor`",
            data={"delivery": "refused"},
        )
    if kind is Kind.PARTIAL_UPDATE and observing:
        raise E.BackendError(
            "the backend sent a partial update instead of a full tree; observe again",
            data={"delivery": "dispatched", "app": app},
        )
