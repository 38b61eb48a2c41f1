"""The per-turn budget that all of a turn's Jev runs share: session state. Pure; time is passed
in.

A turn's runs together get a wall-clock allowance (default 180 s, counted from the start of the
turn's first run, so time spent waiting for the person's approvals counts) and a number of
action attempts (default 30). A mode switch never resets it; only a new turn does. Native ops
have no such budget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_SECONDS = 180.0
DEFAULT_ACTIONS = 30

Exhausted = Literal["task_deadline_exceeded", "action_budget_exhausted"]


@dataclass(slots=True)
class TurnBudget:
    seconds: float = DEFAULT_SECONDS
    actions: int = DEFAULT_ACTIONS
    started: float | None = None
    used: int = 0

    def start(self, now: float) -> None:
        if self.started is None:
            self.started = now

    def remaining_s(self, now: float) -> float:
        if self.started is None:
            return self.seconds
        return max(0.0, self.seconds - (now - self.started))

    def exhausted(self, now: float) -> Exhausted | None:
        if self.remaining_s(now) <= 0:
            return "task_deadline_exceeded"
        if self.used >= self.actions:
            return "action_budget_exhausted"
        return None

    def spend(self) -> None:
        """One action attempt is about to be dispatched."""
        self.used += 1

    def reset(self) -> None:
        self.started = None
        self.used = 0
