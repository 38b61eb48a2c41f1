"""Values shared by the Jev modules: decisions and prepared actions (tree elements and
candidates are :mod:`deskhand_d.ax`'s).

Frozen msgspec Structs; no behaviour beyond small derived properties.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Action = Literal[
    "click_element",
    "click_at",
    "drag",
    "set_value",
    "type_text",
    "press_key",
    "scroll",
    "wait",
    "ask_user",
]
ACTIONS: tuple[Action, ...] = (
    "click_element",
    "click_at",
    "drag",
    "set_value",
    "type_text",
    "press_key",
    "scroll",
    "wait",
    "ask_user",
)
Direction = Literal["up", "down", "left", "right"]


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """Jev's four answers, normalised: anything out of range or unknown is None."""

    action: Action | None
    target_index: int | None
    confidence: float | None
    done: float | None
    risk: float | None
    usage: dict[str, Any] = msgspec.field(default_factory=dict)
    latency_ms: int = 0


class Resources(msgspec.Struct, frozen=True, kw_only=True):
    """What the calling agent (the planner) supplies that Jev never invents."""

    text: str | None = None
    key: str | None = None
    direction: str | None = None
    at: tuple[float, float] | None = None
    start: tuple[float, float] | None = None  # drag from
    end: tuple[float, float] | None = None  # drag to


class Prepared(msgspec.Struct, frozen=True, kw_only=True):
    """A decision combined with the planner's resources: exactly what would be dispatched."""

    kind: Action
    index: int | None = None
    text: str | None = None
    key: str | None = None
    direction: Direction | None = None
    at: tuple[float, float] | None = None
    start: tuple[float, float] | None = None
    end: tuple[float, float] | None = None
