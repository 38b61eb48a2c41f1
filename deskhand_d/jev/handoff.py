"""The planner handoff: when Jev is unsure, the calling agent may act natively, within bounds.

Pure. A handoff is created only for the four gate reasons in :data:`policy.HANDOFF_REASONS`
(never for confirmations, declines, cancellations or errors). Its token is bound to the
session, the turn, the app and the goal, and carries what is left of the run's step budget.
Native actions in ``jev`` mode must present it; each dispatch that actually reaches the backend
spends one step (a refused attempt spends nothing). It dies on turn end, a new run, a mode
switch, a backend error, a revocation or an emergency stop, and when its budget reaches zero.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from deskhand_d.ax import Candidate


def instruction(native: str) -> str:
    """What the calling agent is told to do with a handoff; ``native`` names the native
    actions in its client's words (:meth:`deskhand_d.words.Words.act_under_handoff`)."""
    return (
        "Jev handed this step back to you. Look at the current state first: the goal may "
        f"already be reached. Otherwise choose the next step yourself with {native}, inside "
        "what the person already asked for and within the remaining steps. Do not repeat the "
        "call that failed, do not reuse old element indices, do not raise budgets or "
        "thresholds; ask the person only for missing intent or permission, or a real blocker."
    )


INSTRUCTION = instruction("the native tools")
MAX_CANDIDATES = 12


@dataclass(slots=True)
class Handoff:
    token: str
    session_id: str
    turn: int
    app: str
    goal: str
    remaining: int

    def refusal(self, *, token: str | None, session_id: str, turn: int, app: str) -> str | None:
        """Why this handoff does not cover a native action, or None if it does."""
        if token is None:
            return "no handoff token was given"
        if not secrets.compare_digest(token, self.token):
            return "the handoff token does not match the session's current handoff"
        if session_id != self.session_id or turn != self.turn:
            return "the handoff belongs to another session or turn"
        if app.strip().casefold() != self.app.strip().casefold():
            return f"the handoff is for {self.app!r}, not {app!r}"
        if self.remaining <= 0:
            return "the handoff's step budget is spent"
        return None


def new_handoff(*, session_id: str, turn: int, app: str, goal: str, remaining: int) -> Handoff:
    return Handoff(
        token=secrets.token_hex(16),
        session_id=session_id,
        turn=turn,
        app=app,
        goal=goal,
        remaining=remaining,
    )


def candidate_briefs(candidates: Sequence[Candidate]) -> tuple[list[dict[str, object]], bool]:
    """The first candidates as short {index, role, label} records, and whether any were cut."""
    briefs: list[dict[str, object]] = [
        {
            "index": c.index,
            "role": c.role[:48],
            "label": c.label[:96],
        }
        for c in candidates[:MAX_CANDIDATES]
    ]
    return briefs, len(candidates) > MAX_CANDIDATES
