"""Values shared by the Jev modules: tree elements, candidates, decisions and prepared actions.

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


class Element(msgspec.Struct, frozen=True, kw_only=True):
    """One element line of a tree (continuation lines of a multi-line value folded in)."""

    index: int
    depth: int  # nesting level (tabs; the older shifted-root layout is normalised to root = 0)
    role: str  # normalised (e.g. "search field", "button"; zh-Hans roles mapped to English)
    source_role: str  # as written in the tree
    label: str  # the rest of the line after the role, minus a trailing Secondary Actions clause
    states: tuple[str, ...] = ()  # lower-cased words of a leading "(settable, selected)" group
    attributes: dict[str, str] = msgspec.field(default_factory=dict)  # Description, Value, ID, ...
    secondary_actions: tuple[str, ...] = ()
    raw: str = ""  # the original line(s), indentation included


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    element: Element
    score: int


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
