"""The planner handoff: when Jev is unsure, the calling agent may act natively, within bounds.

Pure session state. What this owns: :class:`HandoffBrief` (what a Jev run that hands a step back
tells the calling agent: steps left, context, recent actions, the first candidates),
:class:`Handoff` (the session's grant made from it: a token bound to the session, the turn, the
app and the goal, with the steps left), :func:`new_handoff`, :func:`candidate_briefs` and the
instruction text. All frozen: a dispatch under a handoff replaces it with :meth:`Handoff.spent`.

A handoff is created only for the four gate reasons in ``jev.policy.HANDOFF_REASONS`` (never for
confirmations, declines, cancellations or errors). Native actions in ``jev`` mode must present
its token; each dispatch that actually reaches the backend spends one step (a refused attempt
spends nothing). It dies on turn end, a new run, a mode switch, a backend error, a revocation or
an emergency stop, and when its steps are spent.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import msgspec

from deskhand_d.ax import Candidate

__all__ = [
    "INSTRUCTION",
    "MAX_CANDIDATES",
    "CandidateBrief",
    "Handoff",
    "HandoffBrief",
    "candidate_briefs",
    "instruction",
    "new_handoff",
]


def instruction(native: str) -> str:
    """What the calling agent is told to do with a handoff; ``native`` names the native
    actions in its client's words (:meth:`deskhand_d.nextsteps.Words.act_under_handoff`)."""
    return (
        "Jev handed this step back to you. Look at the current state first: the goal may "
        f"already be reached. Otherwise choose the next step yourself with {native}, inside "
        "what the person already asked for and within the remaining steps. Do not repeat the "
        "call that failed, do not reuse old element indices, do not raise budgets or "
        "thresholds; ask the person only for missing intent or permission, or a real blocker."
    )


INSTRUCTION = instruction("the native tools")
MAX_CANDIDATES = 12


class CandidateBrief(msgspec.Struct, frozen=True):
    """One of the candidates Jev was offered, shortened for the calling agent."""

    index: int
    role: str
    label: str


class HandoffBrief(msgspec.Struct, frozen=True, kw_only=True):
    """What a run hands back to the calling agent with ``needs_planner`` (the session's grant,
    :class:`Handoff`, is made from it and adds the token)."""

    remaining_steps: int
    context: str
    recent_actions: tuple[str, ...]
    candidates: tuple[CandidateBrief, ...]
    candidates_truncated: bool
    instruction: str


class Handoff(msgspec.Struct, frozen=True, kw_only=True):
    """The session's handoff: what a native action in jev mode must present."""

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

    def spent(self) -> Handoff | None:
        """This handoff after a dispatch under it reached the backend; None once its steps
        are spent."""
        if self.remaining <= 1:
            return None
        return msgspec.structs.replace(self, remaining=self.remaining - 1)


def new_handoff(*, session_id: str, turn: int, app: str, goal: str, remaining: int) -> Handoff:
    return Handoff(
        token=secrets.token_hex(16),
        session_id=session_id,
        turn=turn,
        app=app,
        goal=goal,
        remaining=remaining,
    )


def candidate_briefs(candidates: Sequence[Candidate]) -> tuple[tuple[CandidateBrief, ...], bool]:
    """The first candidates, their role and label shortened, and whether any were cut."""
    briefs = tuple(
        CandidateBrief(c.index, c.role[:48], c.label[:96]) for c in candidates[:MAX_CANDIDATES]
    )
    return briefs, len(candidates) > MAX_CANDIDATES
