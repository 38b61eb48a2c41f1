"""Daemon sessions: what a client's work shares across connections and requests.

A session is opened or resumed by ``hello`` (by name; an unnamed one belongs to its connection)
and holds its mode, current turn, stateIds, per-app recovery, launch bans and the task's consent
answers, the Jev handoff and the
turn's Jev budget. It ends when its client has been gone for the grace
period, or at once when it was unnamed; its queued work is cancelled then.

Pure apart from trio's clock being passed in as ``now``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from deskhand_d.consent.model import TaskConsent
from deskhand_d.native.handoff import Handoff
from deskhand_d.native.states import StateBook
from deskhand_d.native.turnbudget import TurnBudget
from deskhand_d.protocol.requests import Mode


@dataclass(slots=True)
class Session:
    session_id: str
    name: str
    mode: Mode
    mode_reason: str = ""
    mode_chosen: bool = False  # a mode_set chose the mode (else it is the default's)
    turn: int = 1
    states: StateBook = field(default_factory=StateBook)
    recovery: set[str] = field(default_factory=set)  # apps that changed under us
    launch_banned: set[str] = field(default_factory=set)  # for the rest of this turn
    consent: TaskConsent = field(default_factory=TaskConsent)  # this turn's answers
    handoff: Handoff | None = None  # Jev handed a step back: native actions in jev mode
    budget: TurnBudget = field(default_factory=TurnBudget)  # shared by this turn's Jev runs
    running_task: bool = False
    attached: int = 0  # live connections using this session
    detached_at: float | None = None

    def new_turn(self, why: str) -> None:
        self.turn += 1
        self.states.invalidate(why)
        self.launch_banned.clear()
        self.consent.reset()  # a task is one turn: its grants and refusals end with it
        self.budget.reset()
        self.handoff = None

    def invalidate(self, why: str) -> None:
        self.states.invalidate(why)

    def retire(self, why: str) -> None:
        """Retire every state id and the handoff (mode switch, revocation, stop)."""
        self.states.invalidate(why)
        self.handoff = None


class SessionManager:
    def __init__(
        self,
        *,
        default_mode: Mode,
        jev_key_present: bool,
        grace_s: float,
        budget: TurnBudget | None = None,
    ) -> None:
        self.default_mode: Mode = default_mode
        self.budget = budget or TurnBudget()  # the template every session's budget copies
        self.jev_key_present = jev_key_present
        self.grace_s = grace_s
        self.sessions: dict[str, Session] = {}
        self._by_name: dict[str, str] = {}

    def initial_mode(self) -> tuple[Mode, str]:
        if self.default_mode == "jev" and not self.jev_key_present:
            return "native", "missing_jev_key"
        return self.default_mode, ""

    def open(self, name: str) -> tuple[Session, bool]:
        """Resume the named session if it exists, else create one. Returns (session, resumed)."""
        if name and name in self._by_name:
            s = self.sessions[self._by_name[name]]
            s.attached += 1
            s.detached_at = None
            return s, True
        mode, reason = self.initial_mode()
        s = Session(session_id=secrets.token_hex(16), name=name, mode=mode, mode_reason=reason)
        s.budget = TurnBudget(seconds=self.budget.seconds, actions=self.budget.actions)
        s.attached = 1
        self.sessions[s.session_id] = s
        if name:
            self._by_name[name] = s.session_id
        return s, False

    def detach(self, session: Session, now: float) -> bool:
        """A connection left. Returns True if the session ended now (unnamed, or no grace)."""
        session.attached = max(0, session.attached - 1)
        if session.attached:
            return False
        if not session.name or self.grace_s == 0:
            self._drop(session)
            return True
        session.detached_at = now
        return False

    def close(self, session: Session) -> None:
        """End a session at its client's request, whoever else is attached."""
        session.invalidate("the session was closed")
        session.attached = 0
        self._drop(session)

    def expire(self, now: float) -> list[Session]:
        """End the sessions whose client has been gone longer than the grace period."""
        gone = [
            s
            for s in self.sessions.values()
            if s.attached == 0 and s.detached_at is not None and now - s.detached_at >= self.grace_s
        ]
        for s in gone:
            self._drop(s)
        return gone

    def _drop(self, session: Session) -> None:
        self.sessions.pop(session.session_id, None)
        if session.name and self._by_name.get(session.name) == session.session_id:
            del self._by_name[session.name]

    def invalidate_all(self, why: str) -> None:
        """Retire every session's state ids and handoff (revocation, emergency stop)."""
        for s in self.sessions.values():
            s.retire(why)
