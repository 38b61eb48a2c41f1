"""Single-use stateIds: the rules that decide whether an action may use an observation. Pure.

Theory of operation. A session holds at most one *current* state: every observation (and
every action that returns a complete tree) mints a new one and retires the previous. A
stateId is 128 random bits, valid for 60 s, only in the session, turn and app it was minted
for, and only once: any action attempt consumes it, *before* the remaining checks, so a
refused attempt burns it too. Retired ids are remembered (boundedly) so that replaying one
says "consumed" or "invalidated" rather than "unknown". Every decision here is made without
backend traffic; ``now`` is a parameter and randomness is injected.
"""

from __future__ import annotations

import collections
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from deskhand_d.errors import (
    CoordinatesNeedScreenshot,
    CoordinatesOutsideWindow,
    ElementNotInState,
    StateConsumed,
    StateError,
    StateExpired,
    StateInvalidated,
    StateUnknown,
    StateWrongApp,
    StateWrongTurn,
)

STATE_TTL_S = 60.0
REMEMBERED = 256


@dataclass(slots=True)
class StateRecord:
    state_id: str
    app: str
    turn: int
    created: float
    indices: frozenset[int]
    has_screenshot: bool
    backend_generation: int
    screenshot_size: tuple[int, int] | None = None  # (width, height), when its header said
    identity: str = ""  # the App= identity (bundle id) the tree came from
    pid: int | None = None  # the process the App= line named
    action_returned: bool = False
    consumed: bool = False
    invalidated: str = ""  # why it was retired without being used, if it was


@dataclass(frozen=True, slots=True)
class Use:
    """What an action wants to do with a state."""

    app: str
    element_index: int | None = None
    coordinates: bool = False
    points: tuple[tuple[float, float], ...] = ()  # a click's point, or a drag's two


def new_state_id(token: Callable[[int], str] = secrets.token_hex) -> str:
    return token(16)


@dataclass(slots=True)
class StateBook:
    """The stateIds of one session."""

    current: str | None = None
    _records: collections.OrderedDict[str, StateRecord] = field(
        default_factory=collections.OrderedDict
    )

    def mint(self, record: StateRecord) -> str:
        self.invalidate("a newer observation replaced it")
        self._records[record.state_id] = record
        self.current = record.state_id
        while len(self._records) > REMEMBERED:
            self._records.popitem(last=False)
        return record.state_id

    def invalidate(self, why: str) -> None:
        """Retire the current state, e.g. on a mode switch, error, turn end or revocation."""
        if self.current is not None:
            rec = self._records.get(self.current)
            if rec is not None and not rec.consumed:
                rec.invalidated = why
            self.current = None

    def consume(
        self, state_id: str, use: Use, *, turn: int, now: float, generation: int
    ) -> StateRecord:
        """Check and burn ``state_id`` for ``use``; raise the precise :class:`StateError`."""
        rec = self._records.get(state_id)
        if rec is None:
            raise StateUnknown(
                "this stateId is not known in this session; observe the app and use the stateId "
                "that observation returns"
            )
        if rec.consumed:
            raise StateConsumed("this stateId was already used; each one works once: observe again")
        rec.consumed = True  # any attempt burns it, even one refused below
        if self.current == state_id:
            self.current = None
        if rec.invalidated:
            raise StateInvalidated(
                f"this stateId is no longer valid ({rec.invalidated}); observe again"
            )
        if rec.backend_generation != generation:
            raise StateInvalidated("the backend restarted since this observation; observe again")
        if rec.app != use.app:
            raise StateWrongApp(
                f"this stateId belongs to {rec.app!r}, not {use.app!r}; observe {use.app!r} first"
            )
        if rec.turn != turn:
            raise StateWrongTurn("this stateId is from an earlier turn; observe again")
        if now - rec.created > STATE_TTL_S:
            raise StateExpired(
                f"this stateId is older than {STATE_TTL_S:.0f} s; observe again for a fresh one"
            )
        if use.element_index is not None and use.element_index not in rec.indices:
            raise ElementNotInState(
                f"element {use.element_index} is not in that observation; observe again and "
                "pick an index from the new tree"
            )
        if use.coordinates and not rec.has_screenshot:
            why = "came back from an action" if rec.action_returned else "had no screenshot"
            raise CoordinatesNeedScreenshot(
                f"coordinates need an observation with a screenshot, and this one {why}; "
                "observe the app and use that observation's stateId, or act on an element by "
                "its index instead (on Wayland only an app whose window has the keyboard is "
                "pictured: a window in the background has no screenshot)"
            )
        if use.points and rec.screenshot_size is not None:
            check_points(rec.app, use.points, rec.screenshot_size)
        return rec


def check_points(app: str, points: tuple[tuple[float, float], ...], size: tuple[int, int]) -> None:
    """Every point lies in the screenshot (``size``: width, height), else
    :class:`CoordinatesOutsideWindow` naming the first one outside and the bounds."""
    width, height = size
    for n, (x, y) in enumerate(points):
        if 0 <= x < width and 0 <= y < height:
            continue
        which = ("the drag's start", "the drag's end")[n] if len(points) == 2 else "the point"
        raise CoordinatesOutsideWindow(
            f"{which} ({x:g}, {y:g}) is outside the window of {app!r}: the observation's "
            f"screenshot is {width}x{height} pixels, so x must be from 0 to {width - 1} and y "
            f"from 0 to {height - 1}, counted from its top-left corner. Nothing was sent. "
            "Observe the app again and pick a point inside its window"
            + ("" if len(points) == 2 else ", or click an element by its index"),
            data={"app": app, "x": x, "y": y, "width": width, "height": height},
        )


__all__ = [
    "STATE_TTL_S",
    "StateBook",
    "StateError",
    "StateRecord",
    "Use",
    "check_points",
    "new_state_id",
]
